/*
 * A stand-in libcuda.so.1 for envdoctor bench's tests (no GPU runs here).
 *
 * It exports the CUDA driver API entry points envdoctor/host/driver_api.py declares, with the prototypes of
 * NVIDIA's cuda.h, and answers from a "key=value" file named by $FAKE_CUDA_CONFIG (written by
 * tests/fakecuda/build.py from a JSON document):
 *
 *   device_count=2
 *   device.0.bus_id=0000:18:00.0            what cuDeviceGetPCIBusId answers for ordinal 0
 *   rate.h2d.pinned=25.9                    GB/s of each kind of copy (defaults: 20 pinned, 8 pageable,
 *   rate.h2d.pageable=9.5                   1000 device to device, 40 peer)
 *   rate.d2h.pinned=26.3   rate.d2h.pageable=8.1
 *   rate.d2d=1600                           counted as bytes read and written (2 x bytes per copy)
 *   rate.p2p=40
 *   device.1.rate.h2d.pinned=6.2            one GPU's own rate
 *   p2p.0.1.rate=18                         one ordered pair's
 *   p2p.0.1.access=0                        cuDeviceCanAccessPeer answers 0 for the pair (default 1)
 *   p2p.0.1.corrupt=1                       cuMemcpyPeer flips a byte of what it copies
 *   factors=1,1,0.5,1,3                     each copy's time multiplied by the next factor, in turn
 *   sleep=1                                 copies also take their time for real (default: they only
 *                                           report it through the events)
 *   init.error=100                          cuInit returns this (100 CUDA_ERROR_NO_DEVICE)
 *   <function>.error=N                      that entry point returns N
 *   <function>.hang_seconds=N               ... sleeps N seconds first (a hung driver)
 *   <function>.crash=segv|abort|exit        ... dies inside the call
 *   <function>.after=K                      ... only from its (K+1)th call on
 *
 * "Device memory" is host memory (malloc), so copies really move the bytes and the bench's verification of
 * peer copies is real; times follow bytes / rate on a clock the events read (CUDA events time what the GPU
 * did, not the host: reporting the time instead of taking it keeps the tests fast).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>
#include <time.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct ctx { int dev; } *CUcontext;
typedef struct ev { double t; int recorded; } *CUevent;
typedef void *CUstream;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_INVALID_CONTEXT 201
#define CUDA_ERROR_INVALID_HANDLE 400
#define CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED 704
#define MAX_LINES 1024
#define MAX_DEVICES 64
#define MAX_PINNED 256

static char *keys[MAX_LINES], *vals[MAX_LINES];
static int nlines = -1, initialized = 0;
static struct ctx contexts[MAX_DEVICES];
static CUcontext current = NULL;
static double clock_ms = 0.0;
static int factor_at = 0;
static struct { char *p; size_t n; } pinned[MAX_PINNED];
static int npinned = 0;
static int peer_enabled[MAX_DEVICES][MAX_DEVICES];

static void load(void) {
    if (nlines >= 0) return;
    nlines = 0;
    const char *path = getenv("FAKE_CUDA_CONFIG");
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
        nlines++;
    }
    fclose(fh);
}

static const char *get(const char *key) {
    load();
    for (int i = nlines - 1; i >= 0; i--)
        if (strcmp(keys[i], key) == 0) return vals[i];
    return NULL;
}

/* How many times each entry point was called (for <function>.after). */
static struct { const char *fn; int n; } calls[64];
static int ncalls = 0;

static int count_call(const char *fn) {
    for (int i = 0; i < ncalls; i++)
        if (strcmp(calls[i].fn, fn) == 0) return ++calls[i].n;
    if (ncalls < 64) { calls[ncalls].fn = fn; calls[ncalls].n = 1; ncalls++; }
    return 1;
}

/* Misbehave as <fn>.hang_seconds / .crash / .error ask; returns the error to return, or 0. */
static CUresult misbehave(const char *fn) {
    char k[256];
    const char *v;
    int n = count_call(fn);
    snprintf(k, sizeof k, "%s.after", fn);
    if ((v = get(k)) && n <= atoi(v)) return CUDA_SUCCESS;
    snprintf(k, sizeof k, "%s.hang_seconds", fn);
    if ((v = get(k))) sleep((unsigned)atoi(v));
    snprintf(k, sizeof k, "%s.crash", fn);
    if ((v = get(k))) {
        if (strcmp(v, "abort") == 0) abort();
        if (strcmp(v, "exit") == 0) _exit(3);
        raise(SIGSEGV);
    }
    snprintf(k, sizeof k, "%s.error", fn);
    if ((v = get(k))) return atoi(v);
    return CUDA_SUCCESS;
}

#define ENTER(fn) do { CUresult rc_ = misbehave(fn); if (rc_) return rc_; } while (0)
#define NEED_INIT() do { if (!initialized) return CUDA_ERROR_NOT_INITIALIZED; } while (0)

static int device_count(void) {
    const char *v = get("device_count");
    int n = v ? atoi(v) : 0;
    return n < 0 ? 0 : n > MAX_DEVICES ? MAX_DEVICES : n;
}

static double number(const char *key, double dflt) {
    const char *v = get(key);
    return v ? atof(v) : dflt;
}

/* GB/s of a copy of this kind on device dev (a device's own rate first). */
static double rate(int dev, const char *kind, double dflt) {
    char k[128];
    snprintf(k, sizeof k, "device.%d.rate.%s", dev, kind);
    if (get(k)) return number(k, dflt);
    snprintf(k, sizeof k, "rate.%s", kind);
    return number(k, dflt);
}

static double next_factor(void) {
    const char *v = get("factors");
    if (!v) return 1.0;
    int count = 1;
    for (const char *p = v; *p; p++) if (*p == ',') count++;
    int want = factor_at++ % count;
    const char *p = v;
    for (int i = 0; i < want; i++) p = strchr(p, ',') + 1;
    return atof(p);
}

/* A copy of `bytes` (counted `weight` times) at `gbs`: advance the events' clock, and sleep with sleep=1. */
static void take_time(size_t bytes, double weight, double gbs) {
    if (gbs <= 0) gbs = 1e-3;
    double ms = weight * (double)bytes / (gbs * 1e9) * 1e3 * next_factor();
    clock_ms += ms;
    if (get("sleep") && atoi(get("sleep"))) {
        struct timespec ts = { (time_t)(ms / 1e3), (long)(((long long)(ms * 1e6)) % 1000000000LL) };
        nanosleep(&ts, NULL);
    }
}

static int is_pinned(const void *p, size_t n) {
    for (int i = 0; i < npinned; i++)
        if ((const char *)p >= pinned[i].p && (const char *)p + n <= pinned[i].p + pinned[i].n) return 1;
    return 0;
}

/* -- init, devices ---------------------------------------------------------------------------------- */
CUresult cuInit(unsigned int flags) {
    (void)flags;
    ENTER("cuInit");
    const char *e = get("init.error");
    if (e && atoi(e)) return atoi(e);
    for (int i = 0; i < MAX_DEVICES; i++) contexts[i].dev = i;
    initialized = 1;
    return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *v) {
    if (!v) return CUDA_ERROR_INVALID_VALUE;
    *v = (int)number("driver_version", 12040);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
    NEED_INIT();
    ENTER("cuDeviceGetCount");
    *count = device_count();
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *dev, int ordinal) {
    NEED_INIT();
    if (ordinal < 0 || ordinal >= device_count()) return 101; /* CUDA_ERROR_INVALID_DEVICE */
    *dev = ordinal;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char *buf, int len, CUdevice dev) {
    NEED_INIT();
    ENTER("cuDeviceGetPCIBusId");
    char k[64];
    snprintf(k, sizeof k, "device.%d.bus_id", dev);
    const char *v = get(k);
    char dflt[32];
    snprintf(dflt, sizeof dflt, "0000:%02x:00.0", 0x10 + dev);
    if (!buf || len < 13) return CUDA_ERROR_INVALID_VALUE;
    snprintf(buf, (size_t)len, "%s", v ? v : dflt);
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
    NEED_INIT();
    ENTER("cuDevicePrimaryCtxRetain");
    if (dev < 0 || dev >= device_count()) return 101;
    *pctx = &contexts[dev];
    return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
    NEED_INIT();
    current = ctx;
    return CUDA_SUCCESS;
}

/* -- memory ----------------------------------------------------------------------------------------- */
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t n) {
    NEED_INIT();
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    ENTER("cuMemAlloc_v2");
    void *p = malloc(n ? n : 1);
    if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
    *dptr = (CUdeviceptr)(size_t)p;
    return CUDA_SUCCESS;
}

CUresult cuMemAllocHost_v2(void **pp, size_t n) {
    NEED_INIT();
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    ENTER("cuMemAllocHost_v2");
    void *p = malloc(n ? n : 1);
    if (!p || npinned >= MAX_PINNED) return CUDA_ERROR_OUT_OF_MEMORY;
    pinned[npinned].p = p;
    pinned[npinned].n = n;
    npinned++;
    *pp = p;
    return CUDA_SUCCESS;
}

CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char c, size_t n) {
    NEED_INIT();
    ENTER("cuMemsetD8_v2");
    memset((void *)(size_t)d, c, n);
    return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
    NEED_INIT();
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    ENTER("cuMemcpyHtoD_v2");
    int pin = is_pinned(src, n);
    memcpy((void *)(size_t)dst, src, n);
    take_time(n, 1.0, rate(current->dev, pin ? "h2d.pinned" : "h2d.pageable", pin ? 20.0 : 8.0));
    return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
    NEED_INIT();
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    ENTER("cuMemcpyDtoH_v2");
    int pin = is_pinned(dst, n);
    memcpy(dst, (void *)(size_t)src, n);
    take_time(n, 1.0, rate(current->dev, pin ? "d2h.pinned" : "d2h.pageable", pin ? 20.0 : 8.0));
    return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
    NEED_INIT();
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    ENTER("cuMemcpyDtoD_v2");
    memmove((void *)(size_t)dst, (void *)(size_t)src, n);
    take_time(n, 2.0, rate(current->dev, "d2d", 1000.0));
    return CUDA_SUCCESS;
}

CUresult cuDeviceCanAccessPeer(int *can, CUdevice a, CUdevice b) {
    NEED_INIT();
    char k[64];
    snprintf(k, sizeof k, "p2p.%d.%d.access", a, b);
    *can = get(k) ? atoi(get(k)) : (a != b);
    return CUDA_SUCCESS;
}

CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags) {
    NEED_INIT();
    (void)flags;
    if (!current || !peer) return CUDA_ERROR_INVALID_CONTEXT;
    ENTER("cuCtxEnablePeerAccess");
    if (peer_enabled[current->dev][peer->dev]) return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
    peer_enabled[current->dev][peer->dev] = 1;
    return CUDA_SUCCESS;
}

CUresult cuMemcpyPeer(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n) {
    NEED_INIT();
    if (!dctx || !sctx) return CUDA_ERROR_INVALID_CONTEXT;
    ENTER("cuMemcpyPeer");
    memmove((void *)(size_t)dst, (void *)(size_t)src, n);
    char k[64];
    snprintf(k, sizeof k, "p2p.%d.%d.corrupt", sctx->dev, dctx->dev);
    if (get(k) && atoi(get(k)) && n > 0) ((unsigned char *)(size_t)dst)[n / 2] ^= 0x40;
    snprintf(k, sizeof k, "p2p.%d.%d.rate", sctx->dev, dctx->dev);
    take_time(n, 1.0, get(k) ? number(k, 40.0) : number("rate.p2p", 40.0));
    return CUDA_SUCCESS;
}

/* -- events ----------------------------------------------------------------------------------------- */
CUresult cuEventCreate(CUevent *e, unsigned int flags) {
    NEED_INIT();
    (void)flags;
    ENTER("cuEventCreate");
    *e = calloc(1, sizeof **e);
    return *e ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuEventRecord(CUevent e, CUstream s) {
    NEED_INIT();
    (void)s;
    if (!e) return CUDA_ERROR_INVALID_HANDLE;
    ENTER("cuEventRecord");
    e->t = clock_ms;
    e->recorded = 1;
    return CUDA_SUCCESS;
}

CUresult cuEventSynchronize(CUevent e) {
    NEED_INIT();
    if (!e) return CUDA_ERROR_INVALID_HANDLE;
    ENTER("cuEventSynchronize");
    return CUDA_SUCCESS;
}

/* Only the name drivers before CUDA 12.8 export (the bench falls back to it from cuEventElapsedTime_v2). */
CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
    NEED_INIT();
    if (!a || !b || !a->recorded || !b->recorded) return CUDA_ERROR_INVALID_HANDLE;
    ENTER("cuEventElapsedTime");
    *ms = (float)(b->t - a->t);
    return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char **name) {
    switch (error) {
    case 0: *name = "CUDA_SUCCESS"; break;
    case 2: *name = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case 3: *name = "CUDA_ERROR_NOT_INITIALIZED"; break;
    case 100: *name = "CUDA_ERROR_NO_DEVICE"; break;
    case 101: *name = "CUDA_ERROR_INVALID_DEVICE"; break;
    case 700: *name = "CUDA_ERROR_ILLEGAL_ADDRESS"; break;
    case 999: *name = "CUDA_ERROR_UNKNOWN"; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}
