/*
 * A fake libnvidia-ml.so.1 for envdoctor's tests.
 *
 * It implements the NVML entry points that nvidia-ml-py (pynvml) calls for
 * envdoctor/host/nvml_worker.py, with the struct layouts pynvml declares, and
 * answers from a "key=value" file named by $FAKE_NVML_ANSWERS (written by
 * tests/fakenvml/build.py from a JSON answer file).  Keys mirror the worker's:
 *
 *   init.error=18                 nvmlInitWithFlags returns this code
 *   init.hang_seconds=30          nvmlInitWithFlags sleeps first (driver hang)
 *   system.driver_version=...     system.cuda_driver_version=12040
 *   device_count=2
 *   device.0.name=...             device.0.memory.total=...   device.0.ecc_mode=1,1
 *   device.0.<field>.error=3      that call returns NVML_ERROR_NOT_SUPPORTED
 *
 * Any call can also misbehave, keyed by the same prefix (init, device_count, device.N.handle,
 * device.N.<field>, system.<field>, shutdown for nvmlShutdown):
 *
 *   <key>.stdout=TEXT             prints TEXT on stdout first (a library that writes to stdout)
 *   <key>.hang_seconds=N          sleeps N seconds first (a driver call that hangs)
 *   <key>.crash=segv|abort|exit   dies inside the call (SIGSEGV, abort(), _exit(3))
 *   <key>.freeze=DIR              moves itself into the cgroup DIR and freezes it: the process sits in
 *                                 uninterruptible sleep (state D with the v1 freezer), where SIGKILL does
 *                                 nothing until the cgroup is thawed -- as a wedged driver holds a process
 *
 * GPU memory health and MIG (the worker's keys; build.py flattens lists and objects):
 *
 *   device.0.remapped_rows=0,4,1,0       nvmlDeviceGetRemappedRows: corr, unc, pending, failure occurred
 *   device.0.retired_pages_pending=1     nvmlDeviceGetRetiredPagesPendingStatus
 *   device.0.retired_pages_sbe=3         nvmlDeviceGetRetiredPages: this many pages for that cause
 *   device.0.retired_pages_dbe=1
 *   device.0.mig_devices.max=7           nvmlDeviceGetMaxMigDeviceCount
 *   device.0.mig_devices.present=2       nvmlDeviceGetMigDeviceHandleByIndex finds slots 0..1, NOT_FOUND after
 *
 * The GPUs' interconnect (the worker's device.N.nvlink / fabric / c2c / bar1 and pair.A.B keys):
 *
 *   device.0.nvlink.links=18             NVLink links (absent: no NVLink, every NVLink call NOT_SUPPORTED)
 *   device.0.nvlink.state=1              every link's state (1 active, 0 inactive) ...
 *   device.0.nvlink.3.state=0            ... and one link's own
 *   device.0.nvlink.version=4            NVLink version, likewise per link (device.0.nvlink.3.version)
 *   device.0.nvlink.remote=BUSID         the PCI bus id at the far end of every link (a GPU's or an NVSwitch's),
 *                                        likewise per link (device.0.nvlink.3.remote)
 *   device.0.nvlink.errors.replay=0      error counters summed over the links (replay, recovery, crc_flit,
 *                                        crc_data), answered through nvmlDeviceGetFieldValues
 *   device.0.nvlink.fields=0             a driver without the link-count and per-link state/version fields
 *   device.0.fabric.state=3              nvmlDeviceGetGpuFabricInfo(V): state, status, clique, cluster (32 hex
 *                                        digits), health (absent: NOT_SUPPORTED)
 *   device.0.c2c=1                       nvmlDeviceGetC2cModeInfoV
 *   device.0.bar1.total=...              nvmlDeviceGetBAR1MemoryInfo (bytes)
 *   pair.0.1.ancestor=40                 nvmlDeviceGetTopologyCommonAncestor (either order of the two GPUs)
 *   pair.0.1.p2p.read=0                  nvmlDeviceGetP2PStatus: read, write, nvlink, atomics (either order)
 *   device.0.nearest.error=3             nvmlDeviceGetTopologyNearestGpus answers this code (by default it
 *                                        answers from the pairs' ancestors: at a level, every other GPU whose
 *                                        common ancestor with this one is at that level or nearer, as nvml.h's
 *                                        nvmlGpuTopologyLevel_t describes each level; a pair without an ancestor
 *                                        answer is in no set, and a GPU without any is NOT_SUPPORTED)
 *
 * Counting calls: with $FAKE_NVML_CALLS naming a file, nvmlShutdown appends one line "NAME=COUNT" per pair
 * and topology call made since nvmlInit (nvmlDeviceGetTopologyCommonAncestor, nvmlDeviceGetP2PStatus,
 * nvmlDeviceGetTopologyNearestGpus), so a test can count what the worker asked.
 *
 * For envdoctor bench (which asks from its own process, while it copies):
 *
 *   device.0.pcie_gen_current=1;4        a number with ';' answers its values in turn, one per call, the last
 *                                        one from then on (a link idle at Gen1 that trains to Gen4 under load)
 *   device.0.pcie_replay_counter=0;40    nvmlDeviceGetPcieReplayCounter (the same: before, after the copies)
 *   device.0.processes=4242:1073741824   nvmlDeviceGet{Compute,Graphics}RunningProcesses_v3: pid:bytes,...
 *   nvmlDeviceGetHandleByPciBusId_v2     finds the device whose pci.bus_id is that address
 *
 * A device value that is absent answers NVML_ERROR_NOT_SUPPORTED, as real NVML
 * does for a feature a board lacks.  Built with -DFAKE_NVML_OLD it leaves out
 * calls newer drivers added (a driver before R535: nvmlDeviceGetCurrentClocksEventReasons, the
 * R535 name of ...ClocksThrottleReasons, among them; and the R450 row-remapping and MIG calls, as a
 * driver before R450), so pynvml raises FunctionNotFound for them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <signal.h>

#define OK 0
#define ERR_UNINITIALIZED 1
#define ERR_INVALID_ARGUMENT 2
#define ERR_NOT_SUPPORTED 3
#define ERR_NOT_FOUND 6
#define ERR_INSUFFICIENT_SIZE 7
#define MAX_LINES 32768
#define MAX_DEVICES 64

typedef struct { char busIdLegacy[16]; unsigned domain, bus, device, pciDeviceId, pciSubSystemId; char busId[32]; }
    nvmlPciInfo_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct { unsigned gpu, memory; } nvmlUtilization_t;
typedef struct {
    unsigned multiprocessorCount, sharedCopyEngineCount, sharedDecoderCount, sharedEncoderCount, sharedJpegCount,
        sharedOfaCount, gpuInstanceSliceCount, computeInstanceSliceCount;
    unsigned long long memorySizeMB;
} nvmlDeviceAttributes_t;
typedef struct fake_device { int index; } *nvmlDevice_t;

static char *keys[MAX_LINES];
static char *vals[MAX_LINES];
static int nlines = -1;
static int initialized = 0;
static struct fake_device devices[MAX_DEVICES];

static int count_calls = 0;

/* Calls of the pair and topology entry points since nvmlInit, written by nvmlShutdown to $FAKE_NVML_CALLS. */
enum { CALL_ANCESTOR, CALL_P2P, CALL_NEAREST, CALL_KINDS };
static const char *call_names[CALL_KINDS] = {"nvmlDeviceGetTopologyCommonAncestor", "nvmlDeviceGetP2PStatus",
                                             "nvmlDeviceGetTopologyNearestGpus"};
static unsigned long calls[CALL_KINDS];

/* The answers indexed by key (open addressing, FNV-1a): a 64-GPU board has thousands of keys and each call asks
 * several (its .error, .hang_seconds, .crash...), so a linear search made the stand-in, not the code under test,
 * the cost of a large board. A key given twice keeps its last value, as before. */
#define TABLE_SIZE (1 << 16)
static int table[TABLE_SIZE];  /* index into keys/vals plus one; 0 = empty */

static unsigned hash(const char *s) {
    unsigned h = 2166136261u;
    while (*s) { h ^= (unsigned char)*s++; h *= 16777619u; }
    return h;
}

static void load(void) {
    if (nlines >= 0) return;
    nlines = 0;
    memset(table, 0, sizeof table);
    const char *path = getenv("FAKE_NVML_ANSWERS");
    FILE *fh = path ? fopen(path, "r") : NULL;
    if (!fh) return;
    char line[4096];
    while (nlines < MAX_LINES && fgets(line, sizeof line, fh)) {
        line[strcspn(line, "\r\n")] = 0;
        char *eq = strchr(line, '=');
        if (!eq || line[0] == '#') continue;
        *eq = 0;
        keys[nlines] = strdup(line);
        vals[nlines] = strdup(eq + 1);
        unsigned at = hash(keys[nlines]) & (TABLE_SIZE - 1);
        while (table[at] && strcmp(keys[table[at] - 1], keys[nlines]) != 0) at = (at + 1) & (TABLE_SIZE - 1);
        table[at] = nlines + 1;
        nlines++;
    }
    fclose(fh);
}

static const char *get(const char *key) {
    load();
    unsigned at = hash(key) & (TABLE_SIZE - 1);
    while (table[at]) {
        if (strcmp(keys[table[at] - 1], key) == 0) return vals[table[at] - 1];
        at = (at + 1) & (TABLE_SIZE - 1);
    }
    return NULL;
}

static void write_file(const char *dir, const char *name, const char *text) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fh = fopen(path, "w");
    if (!fh) return;
    fputs(text, fh);
    fclose(fh);
}

/* Misbehave as <key>.stdout / .hang_seconds / .crash / .freeze ask, before answering the call <key>. */
static void misbehave(const char *key) {
    char k[512];
    const char *v;
    snprintf(k, sizeof k, "%s.stdout", key);
    if ((v = get(k))) { printf("%s\n", v); fflush(stdout); }
    snprintf(k, sizeof k, "%s.freeze", key);
    if ((v = get(k))) {
        char pid[32];
        snprintf(pid, sizeof pid, "%d\n", (int)getpid());
        char probe[1024];
        snprintf(probe, sizeof probe, "%s/freezer.state", v);
        if (access(probe, F_OK) == 0) {  /* cgroup v1 freezer */
            write_file(v, "tasks", pid);
            write_file(v, "freezer.state", "FROZEN\n");
        } else {  /* cgroup v2 */
            write_file(v, "cgroup.procs", pid);
            write_file(v, "cgroup.freeze", "1\n");
        }
        sleep(3600);
    }
    snprintf(k, sizeof k, "%s.hang_seconds", key);
    if ((v = get(k))) sleep((unsigned)atoi(v));
    snprintf(k, sizeof k, "%s.crash", key);
    if ((v = get(k))) {
        if (strcmp(v, "abort") == 0) abort();
        if (strcmp(v, "exit") == 0) _exit(3);
        raise(SIGSEGV);
    }
}

static const char *dget(nvmlDevice_t d, const char *field) {
    char key[256];
    snprintf(key, sizeof key, "device.%d.%s", d ? d->index : -1, field);
    return get(key);
}

/* The error a device call returns, or OK; absent value = NOT_SUPPORTED. */
static int derr(nvmlDevice_t d, const char *field, const char *probe_key) {
    if (!initialized) return ERR_UNINITIALIZED;
    if (!d) return ERR_INVALID_ARGUMENT;
    char key[256];
    snprintf(key, sizeof key, "device.%d.%s", d->index, field);
    misbehave(key);
    snprintf(key, sizeof key, "%s.error", field);
    const char *e = dget(d, key);
    if (e) return atoi(e);
    if (!dget(d, probe_key ? probe_key : field)) return ERR_NOT_SUPPORTED;
    return OK;
}

/* Calls so far per key holding several values ("1;4"): each call takes the next, the last one stays. */
static struct { char key[96]; int n; } seq[64];
static int nseq = 0;

static unsigned long long dnum(nvmlDevice_t d, const char *field) {
    const char *v = dget(d, field);
    if (!v) return 0;
    if (!strchr(v, ';')) return strtoull(v, NULL, 0);
    char key[96];
    snprintf(key, sizeof key, "%d.%s", d ? d->index : -1, field);
    int at = -1;
    for (int i = 0; i < nseq; i++) if (strcmp(seq[i].key, key) == 0) at = i;
    if (at < 0 && nseq < 64) { at = nseq++; snprintf(seq[at].key, sizeof seq[at].key, "%s", key); seq[at].n = 0; }
    int want = at >= 0 ? seq[at].n++ : 0;
    const char *p = v;
    for (int i = 0; i < want; i++) {
        const char *next = strchr(p, ';');
        if (!next) break;
        p = next + 1;
    }
    return strtoull(p, NULL, 0);
}

static int copy_str(const char *v, char *buf, unsigned len) {
    if (!buf) return ERR_INVALID_ARGUMENT;
    if (strlen(v) + 1 > len) return ERR_INSUFFICIENT_SIZE;
    strcpy(buf, v);
    return OK;
}

/* -- init ------------------------------------------------------------------ */
int nvmlInitWithFlags(unsigned flags) {
    (void)flags;
    nlines = -1;  /* re-read the answers at every init: one process can play many machines */
    count_calls = 0;
    memset(calls, 0, sizeof calls);
    misbehave("init");
    const char *e = get("init.error");
    if (e && atoi(e) != 0) return atoi(e);
    for (int i = 0; i < MAX_DEVICES; i++) devices[i].index = i;
    initialized = 1;
    return OK;
}
int nvmlInit_v2(void) { return nvmlInitWithFlags(0); }
int nvmlInit(void) { return nvmlInitWithFlags(0); }
int nvmlShutdown(void) {
    misbehave("shutdown");
    const char *path = getenv("FAKE_NVML_CALLS");
    FILE *fh = path ? fopen(path, "a") : NULL;
    if (fh) {
        for (int k = 0; k < CALL_KINDS; k++) fprintf(fh, "%s=%lu\n", call_names[k], calls[k]);
        fclose(fh);
    }
    initialized = 0;
    return OK;
}

const char *nvmlErrorString(int result) {
    switch (result) {
    case 0: return "Success";
    case 3: return "Not Supported";
    case 9: return "Driver Not Loaded";
    case 18: return "RM has detected an NVML/RM version mismatch.";
    default: return "Unknown Error";
    }
}

/* -- system ---------------------------------------------------------------- */
static int sys_str(const char *key, char *buf, unsigned len) {
    if (!initialized) return ERR_UNINITIALIZED;
    misbehave(key);
    char ekey[128];
    snprintf(ekey, sizeof ekey, "%s.error", key);
    if (get(ekey)) return atoi(get(ekey));
    const char *v = get(key);
    return v ? copy_str(v, buf, len) : ERR_NOT_SUPPORTED;
}
int nvmlSystemGetDriverVersion(char *buf, unsigned len) { return sys_str("system.driver_version", buf, len); }
int nvmlSystemGetNVMLVersion(char *buf, unsigned len) { return sys_str("system.nvml_version", buf, len); }
int nvmlSystemGetCudaDriverVersion_v2(int *v) {
    if (!initialized) return ERR_UNINITIALIZED;
    if (get("system.cuda_driver_version.error")) return atoi(get("system.cuda_driver_version.error"));
    const char *s = get("system.cuda_driver_version");
    if (!s) return ERR_NOT_SUPPORTED;
    *v = atoi(s);
    return OK;
}
int nvmlSystemGetCudaDriverVersion(int *v) { return nvmlSystemGetCudaDriverVersion_v2(v); }
int nvmlDeviceGetCount_v2(unsigned *count) {
    if (!initialized) return ERR_UNINITIALIZED;
    if (count_calls++ == 0) misbehave("device_count");  /* GetHandleByIndex counts too: once */
    if (get("device_count.error")) return atoi(get("device_count.error"));
    const char *s = get("device_count");
    *count = s ? (unsigned)atoi(s) : 0;
    if (*count > MAX_DEVICES) *count = MAX_DEVICES;
    return OK;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t *device) {
    unsigned count = 0;
    int rc = nvmlDeviceGetCount_v2(&count);
    if (rc != OK) return rc;
    if (index >= count) return ERR_INVALID_ARGUMENT;
    char key[64];
    snprintf(key, sizeof key, "device.%u.handle", index);
    misbehave(key);
    snprintf(key, sizeof key, "device.%u.handle.error", index);
    if (get(key)) return atoi(get(key));
    *device = &devices[index];
    return OK;
}

/* -- devices --------------------------------------------------------------- */
#define DEV_STR(fn, field) \
    int fn(nvmlDevice_t d, char *buf, unsigned len) { \
        int rc = derr(d, field, NULL); \
        return rc != OK ? rc : copy_str(dget(d, field), buf, len); \
    }
#define DEV_UINT(fn, field) \
    int fn(nvmlDevice_t d, unsigned *out) { \
        int rc = derr(d, field, NULL); \
        if (rc == OK) *out = (unsigned)dnum(d, field); \
        return rc; \
    }

DEV_STR(nvmlDeviceGetName, "name")
DEV_STR(nvmlDeviceGetUUID, "uuid")
DEV_STR(nvmlDeviceGetSerial, "serial")
DEV_STR(nvmlDeviceGetVbiosVersion, "vbios_version")
DEV_UINT(nvmlDeviceGetMinorNumber, "minor_number")
DEV_UINT(nvmlDeviceGetArchitecture, "architecture")
DEV_UINT(nvmlDeviceGetBrand, "brand")
DEV_UINT(nvmlDeviceGetMemoryBusWidth, "memory_bus_width")
DEV_UINT(nvmlDeviceGetCurrPcieLinkGeneration, "pcie_gen_current")
DEV_UINT(nvmlDeviceGetMaxPcieLinkGeneration, "pcie_gen_max")
DEV_UINT(nvmlDeviceGetCurrPcieLinkWidth, "pcie_width_current")
DEV_UINT(nvmlDeviceGetMaxPcieLinkWidth, "pcie_width_max")
DEV_UINT(nvmlDeviceGetPersistenceMode, "persistence_mode")
DEV_UINT(nvmlDeviceGetDisplayMode, "display_mode")
DEV_UINT(nvmlDeviceGetDisplayActive, "display_active")
DEV_UINT(nvmlDeviceGetPowerManagementLimit, "power_limit")
DEV_UINT(nvmlDeviceGetPowerManagementDefaultLimit, "power_limit_default")
DEV_UINT(nvmlDeviceGetComputeMode, "compute_mode")
#ifndef FAKE_NVML_OLD
DEV_UINT(nvmlDeviceGetGpuMaxPcieLinkGeneration, "pcie_gen_gpu_max")
DEV_UINT(nvmlDeviceGetNumGpuCores, "num_cores")
#endif

int nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *pci) {
    int rc = derr(d, "pci", "pci.bus_id");
    if (rc != OK) return rc;
    memset(pci, 0, sizeof *pci);
    const char *bus_id = dget(d, "pci.bus_id");
    unsigned dom = 0, bus = 0, dev = 0, fn = 0;
    sscanf(bus_id, "%x:%x:%x.%x", &dom, &bus, &dev, &fn);
    pci->domain = dom;
    pci->bus = bus;
    pci->device = dev;
    pci->pciDeviceId = (unsigned)dnum(d, "pci.device_id");
    pci->pciSubSystemId = (unsigned)dnum(d, "pci.subsystem_id");
    snprintf(pci->busId, sizeof pci->busId, "%s", bus_id);
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.%X", dom, bus, dev, fn);
    return OK;
}

DEV_UINT(nvmlDeviceGetPcieReplayCounter, "pcie_replay_counter")

static unsigned long long bdf_key(const char *text) {
    unsigned dom = 0, bus = 0, dev = 0, fn = 0;
    if (!text || sscanf(text, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4) return ~0ULL;
    return ((unsigned long long)dom << 24) | (bus << 16) | (dev << 8) | fn;
}

int nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id, nvmlDevice_t *device) {
    unsigned count = 0;
    int rc = nvmlDeviceGetCount_v2(&count);
    if (rc != OK) return rc;
    if (!bus_id || !device) return ERR_INVALID_ARGUMENT;
    for (unsigned i = 0; i < count; i++) {
        char key[64];
        snprintf(key, sizeof key, "device.%u.pci.bus_id", i);
        if (bdf_key(get(key)) == bdf_key(bus_id)) {
            *device = &devices[i];
            return OK;
        }
    }
    return ERR_NOT_FOUND;
}

/* nvmlProcessInfo_v2_t (the _v3 calls' structure): pid, usedGpuMemory, gpuInstanceId, computeInstanceId. */
typedef struct { unsigned pid; unsigned long long usedGpuMemory; unsigned gpuInstanceId, computeInstanceId; }
    nvmlProcessInfo_t;

static int processes(nvmlDevice_t d, unsigned *count, nvmlProcessInfo_t *infos) {
    int rc = derr(d, "processes", NULL);
    if (rc == ERR_NOT_SUPPORTED) { *count = 0; return OK; }  /* no processes listed: none running */
    if (rc != OK) return rc;
    const char *v = dget(d, "processes");
    unsigned n = 0;
    for (const char *p = v; p && *p; n++) { p = strchr(p, ','); if (p) p++; }
    if (!infos || *count < n) { *count = n; return n ? ERR_INSUFFICIENT_SIZE : OK; }
    const char *p = v;
    for (unsigned i = 0; i < n; i++) {
        unsigned long long used = 0;
        unsigned pid = 0;
        sscanf(p, "%u:%llu", &pid, &used);
        infos[i].pid = pid;
        infos[i].usedGpuMemory = used;
        infos[i].gpuInstanceId = infos[i].computeInstanceId = 0xFFFFFFFF;
        p = strchr(p, ',');
        if (p) p++;
    }
    *count = n;
    return OK;
}
int nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned *count, nvmlProcessInfo_t *infos) {
    return processes(d, count, infos);
}
int nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t d, unsigned *count, nvmlProcessInfo_t *infos) {
    (void)d; (void)infos;
    *count = 0;
    return OK;
}

int nvmlDeviceGetCudaComputeCapability(nvmlDevice_t d, int *major, int *minor) {
    int rc = derr(d, "compute_capability", NULL);
    if (rc == OK && sscanf(dget(d, "compute_capability"), "%d,%d", major, minor) != 2) return ERR_NOT_SUPPORTED;
    return rc;
}

int nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m) {
    int rc = derr(d, "memory", "memory.total");
    if (rc != OK) return rc;
    m->total = dnum(d, "memory.total");
    m->free = dnum(d, "memory.free");
    m->used = dnum(d, "memory.used");
    return OK;
}

int nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, int type, unsigned *clock) {
    /* nvmlClockType_t: 0 graphics, 1 SM, 2 memory, 3 video */
    const char *field = type == 2 ? "max_clock_mem" : type == 1 ? "max_clock_sm" : "max_clock_other";
    int rc = derr(d, field, NULL);
    if (rc == OK) *clock = (unsigned)dnum(d, field);
    return rc;
}

int nvmlDeviceGetAttributes_v2(nvmlDevice_t d, nvmlDeviceAttributes_t *a) {
    int rc = derr(d, "attributes", "attributes.multiprocessorCount");
    if (rc != OK) return rc;
    memset(a, 0, sizeof *a);
    a->multiprocessorCount = (unsigned)dnum(d, "attributes.multiprocessorCount");
    a->memorySizeMB = dnum(d, "attributes.memorySizeMB");
    return OK;
}

static int two(nvmlDevice_t d, const char *field, unsigned *a, unsigned *b) {
    int rc = derr(d, field, NULL);
    if (rc == OK && sscanf(dget(d, field), "%u,%u", a, b) != 2) return ERR_NOT_SUPPORTED;
    return rc;
}
int nvmlDeviceGetEccMode(nvmlDevice_t d, unsigned *cur, unsigned *pending) { return two(d, "ecc_mode", cur, pending); }
int nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned *cur, unsigned *pending) { return two(d, "mig_mode", cur, pending); }

int nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int error_type, int counter_type, unsigned long long *count) {
    /* nvmlMemoryErrorType_t: 0 corrected, 1 uncorrected; nvmlEccCounterType_t: 0 volatile, 1 aggregate */
    char field[64];
    snprintf(field, sizeof field, "ecc_%s_%s", counter_type ? "aggregate" : "volatile",
             error_type ? "uncorrected" : "corrected");
    int rc = derr(d, field, NULL);
    if (rc == OK) *count = dnum(d, field);
    return rc;
}

/* Drivers before R535 export only the ...ThrottleReasons name; R535 and later export both (the old one
 * deprecated).  FAKE_NVML_OLD is a driver before R535. */
int nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long *reasons) {
    int rc = derr(d, "clock_event_reasons", NULL);
    if (rc == OK) *reasons = dnum(d, "clock_event_reasons");
    return rc;
}
#ifndef FAKE_NVML_OLD
int nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long *reasons) {
    return nvmlDeviceGetCurrentClocksThrottleReasons(d, reasons);
}
#endif

int nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u) {
    int rc = derr(d, "utilization", "utilization.gpu");
    if (rc != OK) return rc;
    u->gpu = (unsigned)dnum(d, "utilization.gpu");
    u->memory = (unsigned)dnum(d, "utilization.memory");
    return OK;
}

int nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned *temp) {
    if (sensor != 0) return ERR_INVALID_ARGUMENT;
    int rc = derr(d, "temperature", NULL);
    if (rc == OK) *temp = (unsigned)dnum(d, "temperature");
    return rc;
}

/* -- GPU memory health ------------------------------------------------------ */
#ifndef FAKE_NVML_OLD
int nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned *corr, unsigned *unc, unsigned *pending, unsigned *failure) {
    int rc = derr(d, "remapped_rows", NULL);
    if (rc == OK && sscanf(dget(d, "remapped_rows"), "%u,%u,%u,%u", corr, unc, pending, failure) != 4)
        return ERR_NOT_SUPPORTED;
    return rc;
}
#endif

int nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t d, int *pending) {
    int rc = derr(d, "retired_pages_pending", NULL);
    if (rc == OK) *pending = (int)dnum(d, "retired_pages_pending");
    return rc;
}

/* nvmlPageRetirementCause_t: 0 multiple single-bit errors, 1 double-bit error.  The page addresses are made
 * up (0x1000, 0x2000...): only their number is read. */
int nvmlDeviceGetRetiredPages(nvmlDevice_t d, int cause, unsigned *count, unsigned long long *addresses) {
    const char *field = cause == 1 ? "retired_pages_dbe" : "retired_pages_sbe";
    int rc = derr(d, field, NULL);
    if (rc != OK) return rc;
    if (!count) return ERR_INVALID_ARGUMENT;
    unsigned n = (unsigned)dnum(d, field);
    if (*count < n || (n > 0 && !addresses)) {
        *count = n;
        return ERR_INSUFFICIENT_SIZE;
    }
    for (unsigned i = 0; i < n; i++) addresses[i] = 0x1000ULL * (i + 1);
    *count = n;
    return OK;
}

/* -- MIG --------------------------------------------------------------------- */
#ifndef FAKE_NVML_OLD
static struct fake_device mig_devices[8];

int nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned *count) {
    int rc = derr(d, "mig_devices", "mig_devices.max");
    if (rc == OK) *count = (unsigned)dnum(d, "mig_devices.max");
    return rc;
}

int nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d, unsigned index, nvmlDevice_t *mig) {
    int rc = derr(d, "mig_devices", "mig_devices.max");
    if (rc != OK) return rc;
    if (index >= (unsigned)dnum(d, "mig_devices.max")) return ERR_INVALID_ARGUMENT;
    if (index >= (unsigned)dnum(d, "mig_devices.present") || index >= 8) return ERR_NOT_FOUND;
    mig_devices[index].index = 1000 + (int)index;  /* a handle the device calls know nothing about */
    *mig = &mig_devices[index];
    return OK;
}
#endif

/* -- the GPUs' interconnect ------------------------------------------------------------------------------- */
typedef struct { unsigned long long bar1Total, bar1Free, bar1Used; } nvmlBAR1Memory_t;

int nvmlDeviceGetBAR1MemoryInfo(nvmlDevice_t d, nvmlBAR1Memory_t *b) {
    int rc = derr(d, "bar1", "bar1.total");
    if (rc != OK) return rc;
    b->bar1Total = dnum(d, "bar1.total");
    b->bar1Used = dnum(d, "bar1.used");
    b->bar1Free = b->bar1Total - b->bar1Used;
    return OK;
}

/* device.N.nvlink.L.<what>, else device.N.nvlink.<what> */
static const char *link_get(nvmlDevice_t d, unsigned link, const char *what) {
    char key[128];
    snprintf(key, sizeof key, "nvlink.%u.%s", link, what);
    const char *v = dget(d, key);
    if (v) return v;
    snprintf(key, sizeof key, "nvlink.%s", what);
    return dget(d, key);
}

static int link_err(nvmlDevice_t d, unsigned link) {
    int rc = derr(d, "nvlink", "nvlink.links");
    if (rc != OK) return rc;
    if (link >= (unsigned)dnum(d, "nvlink.links")) return ERR_INVALID_ARGUMENT;
    return OK;
}

int nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned link, unsigned *active) {
    int rc = link_err(d, link);
    if (rc != OK) return rc;
    const char *v = link_get(d, link, "state");
    *active = v ? (unsigned)atoi(v) : 0;
    return OK;
}

int nvmlDeviceGetNvLinkVersion(nvmlDevice_t d, unsigned link, unsigned *version) {
    int rc = link_err(d, link);
    if (rc != OK) return rc;
    const char *v = link_get(d, link, "version");
    if (!v) return ERR_NOT_SUPPORTED;
    *version = (unsigned)atoi(v);
    return OK;
}

int nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t d, unsigned link, nvmlPciInfo_t *pci) {
    int rc = link_err(d, link);
    if (rc != OK) return rc;
    const char *state = link_get(d, link, "state");
    if (!state || atoi(state) == 0) return ERR_NOT_SUPPORTED;  /* an inactive link has no far end */
    const char *bus_id = link_get(d, link, "remote");
    if (!bus_id) return ERR_NOT_SUPPORTED;
    memset(pci, 0, sizeof *pci);
    unsigned dom = 0, bus = 0, dev = 0, fn = 0;
    sscanf(bus_id, "%x:%x:%x.%x", &dom, &bus, &dev, &fn);
    pci->domain = dom;
    pci->bus = bus;
    pci->device = dev;
    snprintf(pci->busId, sizeof pci->busId, "%s", bus_id);
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.%X", dom, bus, dev, fn);
    return OK;
}

typedef union { double dVal; unsigned uiVal; unsigned long ulVal; unsigned long long ullVal; long long sllVal;
                int siVal; unsigned short usVal; } nvmlValue_t;
typedef struct { unsigned fieldId, scopeId; long long timestamp, latencyUsec; int valueType, nvmlReturn;
                 nvmlValue_t value; } nvmlFieldValue_t;

/* NVML_FI_DEV_NVLINK_LINK_COUNT 91; error totals 38 crc_flit, 45 crc_data, 52 replay, 59 recovery;
 * per link (scopeId): 165 state, 166 version. Every other field: NOT_SUPPORTED. */
int nvmlDeviceGetFieldValues(nvmlDevice_t d, int count, nvmlFieldValue_t *values) {
    if (!initialized) return ERR_UNINITIALIZED;
    if (!d || count < 0 || (count > 0 && !values)) return ERR_INVALID_ARGUMENT;
    char key[64];
    snprintf(key, sizeof key, "device.%d.nvlink", d->index);
    misbehave(key);
    int has_links = dget(d, "nvlink.links") != NULL;
    const char *fields_flag = dget(d, "nvlink.fields");
    int new_fields = !(fields_flag && atoi(fields_flag) == 0);
#ifdef FAKE_NVML_OLD
    new_fields = 0;
#endif
    for (int i = 0; i < count; i++) {
        nvmlFieldValue_t *f = &values[i];
        f->valueType = 1;
        f->nvmlReturn = ERR_NOT_SUPPORTED;
        f->value.ullVal = 0;
        const char *v = NULL;
        switch (f->fieldId) {
        case 91:
            if (has_links && new_fields) { f->nvmlReturn = OK; f->value.uiVal = (unsigned)dnum(d, "nvlink.links"); }
            break;
        case 38: case 45: case 52: case 59:
            if (has_links) {
                const char *name = f->fieldId == 38 ? "nvlink.errors.crc_flit" : f->fieldId == 45 ?
                    "nvlink.errors.crc_data" : f->fieldId == 52 ? "nvlink.errors.replay" : "nvlink.errors.recovery";
                f->nvmlReturn = OK;
                f->valueType = 3;
                f->value.ullVal = dnum(d, name);
            }
            break;
        case 165: case 166:
            if (!has_links || !new_fields) break;
            if (f->scopeId >= (unsigned)dnum(d, "nvlink.links")) { f->nvmlReturn = ERR_INVALID_ARGUMENT; break; }
            v = link_get(d, f->scopeId, f->fieldId == 165 ? "state" : "version");
            if (f->fieldId == 166 && !v) break;
            f->nvmlReturn = OK;
            f->value.uiVal = v ? (unsigned)atoi(v) : 0;
            break;
        default:
            break;
        }
    }
    return OK;
}

#ifndef FAKE_NVML_OLD
typedef struct { unsigned char clusterUuid[16]; int status; unsigned cliqueId; unsigned state; } nvmlGpuFabricInfo_t;
typedef struct { unsigned version; unsigned char clusterUuid[16]; int status; unsigned cliqueId; unsigned state;
                 unsigned healthMask; } nvmlGpuFabricInfo_v2_t;

static int fabric_common(nvmlDevice_t d, unsigned char *uuid, int *status, unsigned *clique, unsigned *state) {
    int rc = derr(d, "fabric", "fabric.state");
    if (rc != OK) return rc;
    *status = (int)dnum(d, "fabric.status");
    *clique = (unsigned)dnum(d, "fabric.clique");
    *state = (unsigned)dnum(d, "fabric.state");
    const char *hex = dget(d, "fabric.cluster");
    memset(uuid, 0, 16);
    for (int i = 0; hex && i < 16 && hex[2 * i] && hex[2 * i + 1]; i++) {
        unsigned byte = 0;
        sscanf(hex + 2 * i, "%2x", &byte);
        uuid[i] = (unsigned char)byte;
    }
    return OK;
}

int nvmlDeviceGetGpuFabricInfo(nvmlDevice_t d, nvmlGpuFabricInfo_t *info) {
    if (!info) return ERR_INVALID_ARGUMENT;
    return fabric_common(d, info->clusterUuid, &info->status, &info->cliqueId, &info->state);
}

int nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t d, nvmlGpuFabricInfo_v2_t *info) {
    if (!info) return ERR_INVALID_ARGUMENT;
    int rc = fabric_common(d, info->clusterUuid, &info->status, &info->cliqueId, &info->state);
    if (rc == OK && (info->version >> 24) >= 2) info->healthMask = (unsigned)dnum(d, "fabric.health");
    return rc;
}

typedef struct { unsigned isC2cEnabled; } nvmlC2cModeInfo_v1_t;
int nvmlDeviceGetC2cModeInfoV(nvmlDevice_t d, nvmlC2cModeInfo_v1_t *info) {
    int rc = derr(d, "c2c", NULL);
    if (rc == OK) info->isC2cEnabled = (unsigned)dnum(d, "c2c");
    return rc;
}
#endif

/* pair.A.B.<what> in either order of the two GPUs */
static const char *pair_get(nvmlDevice_t a, nvmlDevice_t b, const char *what) {
    char key[128];
    snprintf(key, sizeof key, "pair.%d.%d.%s", a->index, b->index, what);
    const char *v = get(key);
    if (v) return v;
    snprintf(key, sizeof key, "pair.%d.%d.%s", b->index, a->index, what);
    return get(key);
}

static int pair_call(nvmlDevice_t a, nvmlDevice_t b, const char *what, unsigned *out) {
    if (!initialized) return ERR_UNINITIALIZED;
    if (!a || !b) return ERR_INVALID_ARGUMENT;
    char key[128];
    snprintf(key, sizeof key, "pair.%d.%d", a->index < b->index ? a->index : b->index,
             a->index < b->index ? b->index : a->index);
    misbehave(key);
    char ekey[128];
    snprintf(ekey, sizeof ekey, "%s.error", what);
    const char *e = pair_get(a, b, ekey);
    if (e) return atoi(e);
    const char *v = pair_get(a, b, what);
    if (!v) return ERR_NOT_SUPPORTED;
    *out = (unsigned)atoi(v);
    return OK;
}

int nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t a, nvmlDevice_t b, int *level) {
    calls[CALL_ANCESTOR]++;
    unsigned v = 0;
    int rc = pair_call(a, b, "ancestor", &v);
    if (rc == OK) *level = (int)v;
    return rc;
}

int nvmlDeviceGetP2PStatus(nvmlDevice_t a, nvmlDevice_t b, int index, int *status) {
    static const char *names[] = {"p2p.read", "p2p.write", "p2p.nvlink", "p2p.atomics", "p2p.pci"};
    calls[CALL_P2P]++;
    if (index < 0 || index > 4) return ERR_INVALID_ARGUMENT;
    unsigned v = 0;
    int rc = pair_call(a, b, names[index], &v);
    if (rc == OK) *status = (int)v;
    return rc;
}

/* nvmlDeviceGetTopologyNearestGpus: the GPUs whose common ancestor with d is at `level` or nearer. */
int nvmlDeviceGetTopologyNearestGpus(nvmlDevice_t d, int level, unsigned *count, nvmlDevice_t *array) {
    calls[CALL_NEAREST]++;
    if (!initialized) return ERR_UNINITIALIZED;
    if (!d || !count || (*count && !array)) return ERR_INVALID_ARGUMENT;
    if (level != 0 && level != 10 && level != 20 && level != 30 && level != 40 && level != 50)
        return ERR_INVALID_ARGUMENT;
    char key[64];
    snprintf(key, sizeof key, "device.%d.nearest", d->index);
    misbehave(key);
    const char *e = dget(d, "nearest.error");
    if (e) return atoi(e);
    unsigned n = 0;
    int rc = nvmlDeviceGetCount_v2(&n);
    if (rc != OK) return rc;
    unsigned found = 0;
    int any = 0;
    nvmlDevice_t hits[MAX_DEVICES];
    for (unsigned j = 0; j < n; j++) {
        if ((int)j == d->index) continue;
        const char *err = pair_get(d, &devices[j], "ancestor.error");
        const char *v = pair_get(d, &devices[j], "ancestor");
        if (err || !v) continue;
        any = 1;
        if (atoi(v) <= level) hits[found++] = &devices[j];
    }
    if (!any) return ERR_NOT_SUPPORTED;
    if (*count == 0) { *count = found; return OK; }
    if (*count < found) { *count = found; return ERR_INSUFFICIENT_SIZE; }
    for (unsigned k = 0; k < found; k++) array[k] = hits[k];
    *count = found;
    return OK;
}
