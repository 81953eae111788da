"""Checks on running GPU containers: Docker without the NVIDIA Container Toolkit or its runtime,
and Docker installed from snap (whose confinement the NVIDIA runtime does not support).

When docker talks to a daemon envdoctor did not contact (DOCKER_HOST or a docker context elsewhere:
diagnose opens no network connection), the toolkit and runtime checks are not made -- they concern the
machine that daemon runs on -- and one info finding says so instead."""

from __future__ import annotations

import posixpath
from typing import Any, Dict, Iterable, List, Optional

from packaging.version import Version

from .. import lazyre, versions
from ..facts import Facts
from ..findings import Finding, Fix
from ..host.nvml_worker import MAX_GPUS
from ..matrix.hardware import min_driver_for_cuda
from ..probes.containers import OPERATOR_TOOLKIT_DIR
from . import CheckContext, CodeDoc, Message, check
from .suggest import INSTALL_LINE_READS, install_line

CHECKED = "2026-11-22"
INSTALL_GUIDE = "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html"
SNAP_ISSUE = "https://github.com/NVIDIA/nvidia-container-toolkit/issues/522"
CONFIGURE = ["sudo nvidia-ctk runtime configure --runtime=docker", "sudo systemctl restart docker"]
CONTEXTS = "https://docs.docker.com/engine/reference/commandline/context_use/"
LOCAL_RUN = "DOCKER_HOST=unix:///var/run/docker.sock envdoctor diagnose"


def _ev(facts: Facts, *keys: str) -> List[Dict[str, Any]]:
    return [f.to_dict() for f in (facts.get(k) for k in keys) if f is not None]


def _has_gpu(facts: Facts) -> bool:
    count = facts.value("gpu.count")
    return isinstance(count, int) and count > 0


@check("container-toolkit", requires=("container.docker", "gpu.count"), reads=("container.*",) + INSTALL_LINE_READS,
       layers=("containers",), codes=(
    CodeDoc("container-toolkit.missing", "warning", "Docker is installed on a GPU machine without the NVIDIA "
            "Container Toolkit.", "container.docker, container.toolkit, gpu.count",
            "`docker run --gpus all` fails with 'could not select device driver \"\" with capabilities: [[gpu]]'.",
            INSTALL_GUIDE,
        messages=(Message("could not select device driver \"*\" with capabilities: [[gpu]]",
                "https://github.com/moby/moby/blob/master/daemon/devices.go"),)),
    CodeDoc("container-toolkit.runtime_not_configured", "warning", "The NVIDIA Container Toolkit is installed but "
            "Docker has no nvidia runtime registered.", "container.toolkit, container.nvidia_runtime_configured",
            "`docker run --runtime=nvidia` fails with 'unknown or invalid runtime name: nvidia'.", INSTALL_GUIDE,
        messages=(Message("could not select device driver \"*\" with capabilities: [[gpu]]",
                "https://github.com/moby/moby/blob/master/daemon/devices.go"),)),
    CodeDoc("docker.snap", "warning", "Docker is installed from snap.", "container.docker_snap",
            "The snap's confinement does not see the host's NVIDIA libraries: GPU containers fail with "
            "'nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1'.", SNAP_ISSUE),
    CodeDoc("docker.daemon_not_contacted", "info", "Docker on a GPU machine talks to a daemon envdoctor did not "
            "contact (DOCKER_HOST or a docker context pointing elsewhere, or one it could not resolve), so the "
            "GPU-container checks were not made.", "container.docker, gpu.count",
            "diagnose opens no network connection; the NVIDIA Container Toolkit and runtime checks concern the "
            "machine the daemon runs on, so run envdoctor there (or point docker at the local socket).", CONTEXTS),
))
def container_toolkit(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    docker = facts.value("container.docker")
    if not isinstance(docker, dict) or not docker.get("installed"):
        return
    ver = docker.get("server") or docker.get("client")
    dname = "Docker %s" % ver if ver else "Docker"  # "Docker ?" said nothing when the version is unknown
    if facts.value("container.docker_snap") is True:
        yield Finding(
            code="docker.snap", severity="warning", components=["docker", "container-toolkit"],
            title="%s is the snap package; the NVIDIA Container Toolkit does not support snap Docker" % dname,
            detail="The snap runs dockerd confined, with its own daemon.json under /var/snap/docker; the NVIDIA "
                   "runtime hook cannot load the host's libnvidia-ml.so.1 from inside it (canonical/docker-snap#148), "
                   "and NVIDIA's toolkit tracks snap support as an open request (NVIDIA/nvidia-container-toolkit#522).",
            evidence=_ev(facts, "container.docker_snap", "container.docker"),
            source={"rule": "the NVIDIA Container Toolkit supports Docker from Docker's or the distribution's "
                            "packages, not the snap", "url": SNAP_ISSUE, "checked": CHECKED},
            fix=Fix(text="Replace the snap with Docker Engine from Docker's apt repository, then install and "
                         "configure the toolkit.",
                    commands=["sudo snap remove --purge docker",
                              "curl -fsSL https://get.docker.com | sh"] + CONFIGURE,
                    install=install_line(facts, "container-toolkit")))
    if not _has_gpu(facts):
        return
    if docker.get("error") == "not_contacted":
        where = docker.get("endpoint")
        yield Finding(
            code="docker.daemon_not_contacted", severity="info", components=["docker", "container-toolkit"],
            title="%s talks to %s, which envdoctor did not contact: GPU containers were not checked" % (
                dname, "the daemon at %s" % where if where else "a daemon it could not resolve"),
            detail="%s. Whether `docker run --gpus all` works depends on the NVIDIA Container Toolkit and the "
                   "nvidia runtime of the machine that daemon runs on, which envdoctor cannot see from here."
                   % (docker.get("message") or "The daemon was not contacted"),
            evidence=_ev(facts, "container.docker", "container.nvidia_runtime_configured", "gpu.count"),
            source={"rule": "diagnose and snapshot open no network connection; docker talks to the daemon "
                            "DOCKER_HOST or the current docker context names", "url": CONTEXTS,
                    "checked": CHECKED},
            fix=Fix(text="Run envdoctor on the machine the daemon runs on; to check this machine's own Docker "
                         "daemon, point docker at its local socket for the run.", commands=[LOCAL_RUN]))
        return
    tk = facts.value("container.toolkit")
    if isinstance(tk, dict) and tk.get("installed") is False:
        yield Finding(
            code="container-toolkit.missing", severity="warning", components=["container-toolkit", "docker"],
            title="%s is installed on a machine with %s NVIDIA GPU(s), but the NVIDIA Container Toolkit "
                  "is not" % (dname, facts.value("gpu.count")),
            detail="Without nvidia-container-toolkit, `docker run --gpus all ...` fails with 'could not select "
                   "device driver \"\" with capabilities: [[gpu]]'.",
            evidence=_ev(facts, "container.docker", "container.toolkit", "gpu.count"),
            source={"rule": "GPU containers under Docker need the NVIDIA Container Toolkit", "url": INSTALL_GUIDE,
                    "checked": CHECKED},
            fix=Fix(text="Install the NVIDIA Container Toolkit and register its runtime with Docker.",
                    commands=CONFIGURE, install=install_line(facts, "container-toolkit")))
        return
    if isinstance(tk, dict) and tk.get("installed") and facts.value("container.nvidia_runtime_configured") is False:
        desktop = next((e for e in str(docker.get("endpoint") or "").split(" or ") if "/.docker/desktop/" in e), None)
        yield Finding(
            code="container-toolkit.runtime_not_configured", severity="warning",
            components=["container-toolkit", "docker"],
            title="NVIDIA Container Toolkit %s is installed, but %s has no nvidia runtime registered%s" % (
                tk.get("version"), dname, " (docker's context may be Docker Desktop's daemon, %s, not this host's "
                "engine)" % desktop if desktop else ""),
            detail="`docker run --runtime=nvidia` fails with 'unknown or invalid runtime name: nvidia' until the "
                   "runtime is added to /etc/docker/daemon.json and dockerd is restarted." + (
                       " Docker Desktop (context desktop-linux) runs its own daemon in a VM, which the toolkit on "
                       "this host does not configure: switch back with `docker context use default`." if desktop
                       else ""),
            evidence=_ev(facts, "container.toolkit", "container.nvidia_runtime_configured",
                         "container.daemon_json", "container.docker"),
            source={"rule": "configure Docker with nvidia-ctk runtime configure --runtime=docker",
                    "url": INSTALL_GUIDE + "#configuring-docker", "checked": CHECKED},
            fix=Fix(text="Point docker at this host's engine (Docker Desktop's context is current)." if desktop else
                    "Register the nvidia runtime with Docker and restart it.",
                    commands=["docker context use default"] if desktop else CONFIGURE,
                    install=None if desktop else install_line(facts, "container-toolkit")))


DEV_CHAR_NOTICE = "https://github.com/NVIDIA/nvidia-docker/issues/1730"


@check("container-toolkit.dev-char", requires=("container.dev_char_nvidia_links", "container.toolkit"),
       reads=("container.*", "os.*"), layers=("containers",), codes=(
    CodeDoc("container-toolkit.dev_char_symlinks_missing", "warning",
            "Docker manages container cgroups with systemd and /dev/char holds no links to the NVIDIA devices.",
            "container.docker_cgroup_driver, container.dev_char_nvidia_links, container.toolkit, os.container",
            "After any `systemctl daemon-reload` (package upgrades run one) systemd re-applies the containers' "
            "device rules without the NVIDIA devices: running GPU containers fail with 'Failed to initialize "
            "NVML: Unknown Error' until recreated.", DEV_CHAR_NOTICE,
        messages=(Message("Failed to initialize NVML: Unknown Error",
                "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/troubleshooting.html"),)),
))
def dev_char_links(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    links = facts.get("container.dev_char_nvidia_links")
    if facts.value("container.docker_cgroup_driver") != "systemd" or links is None or not links.known or links.value:
        return
    if facts.value("os.container"):
        return  # the host's /dev/char is not visible from a container
    toolkit = facts.value("container.toolkit")
    if not (isinstance(toolkit, dict) and toolkit.get("installed")) and \
            facts.value("container.nvidia_runtime_configured") is not True:
        return
    yield Finding(
        code="container-toolkit.dev_char_symlinks_missing", severity="warning",
        components=["container-toolkit", "docker"],
        title="Docker uses the systemd cgroup driver, but /dev/char has no links to /dev/nvidia*: GPU containers "
              "lose their GPUs at the next systemctl daemon-reload",
        detail="runc gives containers the NVIDIA devices, and systemd re-applies the containers' device rules on "
               "every daemon-reload, resolving devices through /dev/char/<major>:<minor>. Without links for the "
               "NVIDIA devices (major %s) they are dropped: NVML inside running containers then fails with "
               "'Failed to initialize NVML: Unknown Error'." % "195",
        evidence=_ev(facts, "container.docker_cgroup_driver", "container.dev_char_nvidia_links", "container.toolkit"),
        source={"rule": "NVIDIA's notice: with the systemd cgroup driver, /dev/char links for the NVIDIA devices "
                        "are needed", "url": DEV_CHAR_NOTICE, "checked": "2026-11-25"},
        fix=Fix(text="Create the links now and at every boot (a udev rule running the same command), then recreate "
                     "the GPU containers; or switch Docker to the cgroupfs driver "
                     "(\"exec-opts\": [\"native.cgroupdriver=cgroupfs\"] in /etc/docker/daemon.json).",
                commands=["sudo nvidia-ctk system create-dev-char-symlinks --create-all",
                          "echo 'ACTION==\"add\", DEVPATH==\"/bus/pci/drivers/nvidia\", RUN+=\"/usr/bin/nvidia-ctk "
                          "system create-dev-char-symlinks --create-all\"' | sudo tee "
                          "/lib/udev/rules.d/71-nvidia-dev-char.rules"]))


NO_CGROUPS_THREAD = "https://github.com/NVIDIA/nvidia-container-toolkit/issues/381"
#: The sockets of the system (rootful) Docker daemon; a rootless daemon listens in $XDG_RUNTIME_DIR.
ROOTFUL_SOCKETS = ("unix:///var/run/docker.sock", "unix:///run/docker.sock")


@check("container-toolkit.no-cgroups", requires=("container.toolkit", "container.docker"),
       reads=("container.*", "os.*"), layers=("containers",), codes=(
    CodeDoc("container-toolkit.no_cgroups_rootful", "warning",
            "/etc/nvidia-container-runtime/config.toml sets no-cgroups = true (a setting for rootless containers) "
            "while Docker runs as the system (rootful) daemon.",
            "container.toolkit (config.toml no-cgroups, mode), container.docker (endpoint)",
            "The toolkit's hook then adds no device cgroup rules: GPU containers start, but nvidia-smi in them "
            "prints 'Failed to initialize NVML: Unknown Error' (toolkit 1.14.0 ignored config.toml, so the "
            "setting bites from 1.14.1 on).", NO_CGROUPS_THREAD,
        messages=(Message("Failed to initialize NVML: Unknown Error",
                "https://github.com/NVIDIA/nvidia-container-runtime/issues/85"),)),
))
def no_cgroups_rootful(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    tk = facts.value("container.toolkit")
    docker = facts.value("container.docker")
    if not (isinstance(tk, dict) and tk.get("installed") and tk.get("no_cgroups") is True):
        return
    if str(tk.get("mode") or "auto") == "cdi":
        return  # CDI mode: the runtime injects the devices itself, the legacy hook's cgroup setting is unused
    if not (isinstance(docker, dict) and docker.get("server") and not docker.get("error")):
        return
    if docker.get("endpoint") not in ROOTFUL_SOCKETS or facts.value("os.container"):
        return  # a rootless daemon (its socket in $XDG_RUNTIME_DIR) needs no-cgroups = true
    yield Finding(
        code="container-toolkit.no_cgroups_rootful", severity="warning", components=["container-toolkit", "docker"],
        title="config.toml sets no-cgroups = true, but Docker %s is the rootful daemon (%s): GPU containers "
              "fail with 'Failed to initialize NVML: Unknown Error'" % (docker.get("server"), docker.get("endpoint")),
        detail="no-cgroups = true stops the NVIDIA Container Toolkit %s's hook from adding the GPU device rules to "
               "the container's cgroup; only rootless containers, which cannot set them, need it. Under the "
               "system Docker daemon the container then cannot open /dev/nvidia*. (Toolkit 1.14.0 ignored "
               "config.toml, so an upgrade from it makes a long-standing setting bite.)" % tk.get("version"),
        evidence=_ev(facts, "container.toolkit", "container.docker"),
        source={"rule": "no-cgroups = true is only for rootless containers (NVIDIA maintainers in the thread)",
                "url": NO_CGROUPS_THREAD, "checked": "2026-11-27"},
        fix=Fix(text="Set no-cgroups = false in /etc/nvidia-container-runtime/config.toml (for rootless use, "
                     "give that daemon its own config instead), then recreate the GPU containers.",
                commands=["sudo sed -i 's/^no-cgroups *= *true/no-cgroups = false/' "
                          "/etc/nvidia-container-runtime/config.toml"]))


CDI_DOC = "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/cdi-support.html"
CDI_STALE_THREAD = "https://github.com/NVIDIA/nvidia-container-toolkit/issues/885"
#: Nodes the driver creates on demand (nvidia-uvm at the first CUDA call): their absence is the driver's
#: finding (driver.device_nodes_missing), not a stale spec.
_ON_DEMAND_NODES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset")


def _cdi_wrong_majors(facts: Facts, spec: Dict[str, Any], wrong: List[Dict[str, Any]]) -> Finding:
    """A spec that pins device numbers (major/minor) the host's driver no longer has: nvidia-uvm's and
    nvidia-caps' majors are handed out when their module loads, so a driver reload or another kernel moves them."""
    path = spec.get("path")
    first = wrong[0]
    what = ", ".join("%s (major %s in the spec, %s now)" % (w.get("path"), w.get("spec_major"), w.get("host_major"))
                     for w in wrong)
    return Finding(
        code="container-toolkit.cdi_spec_stale", severity="warning", components=["container-toolkit"],
        title="The CDI spec %s pins device numbers the host no longer has: %s" % (path, what),
        detail="The spec gives %s the major number %s, but /proc/devices gives the %s driver %s now (its major is "
               "handed out when the module loads, and moves with a driver reload or another kernel). A container "
               "gets a device node that reaches no driver: CUDA fails in it ('unknown error', cuInit 999)." % (
                   first.get("path"), first.get("spec_major"), first.get("driver"), first.get("host_major")),
        evidence=_ev(facts, "container.cdi_specs"),
        source={"rule": "a CDI spec's device nodes must match the host's (path, major, minor); regenerate it after "
                        "driver changes", "url": CDI_DOC, "checked": "2026-11-29"},
        fix=Fix(text="Regenerate the spec from the devices present now (nvidia-ctk writes no device numbers, so "
                     "the runtime reads them from the host's nodes).",
                commands=["grep nvidia /proc/devices", "sudo nvidia-ctk cdi generate --output=%s" % path,
                          "nvidia-ctk cdi list"]))


#: The installed driver release, in the order it is believed: the loaded kernel module's, NVML's, the user-space
#: library's.
_DRIVER_RELEASE_FACTS = ("driver.kernel_module.version", "driver.version", "driver.userspace.version")


def _installed_releases(facts: Facts) -> List[str]:
    out: List[str] = []
    for key in _DRIVER_RELEASE_FACTS:
        v = facts.value(key)
        if versions.is_driver_version(v) and v not in out:
            out.append(v)
    return out


def _cdi_other_release(facts: Facts, spec: Dict[str, Any], installed: List[str]) -> Optional[Finding]:
    """A spec generated under another driver release: its mounts bind that release's versioned files
    (libcuda.so.<release>, firmware/nvidia/<release>/...), which an update removed (or left behind, mismatched
    with the loaded module). Quiet when the spec's release is any of the installed ones (a module not yet
    reloaded after an update is the driver's finding)."""
    files = [f for f in spec.get("driver_files") or [] if isinstance(f, dict)
             and versions.is_driver_version(f.get("release")) and isinstance(f.get("path"), str)]
    own = spec.get("driver_release")
    other = [f for f in files if f["release"] not in installed]
    gone = [f for f in other if f.get("missing") is True]
    if installed:
        stale_own = versions.is_driver_version(own) and own not in installed
        if not other and not stale_own:
            return None
    elif not gone:
        return None  # the release installed is not known: only files that are gone show the spec is stale
    releases: List[str] = []
    for r in [f["release"] for f in other] + ([own] if versions.is_driver_version(own) and own not in installed
                                             else []):
        if r not in releases:
            releases.append(r)
    path = spec.get("path")
    now = installed[0] if installed else None
    was = " and ".join(releases)
    shown = [posixpath.basename(f["path"]) if "/firmware/" not in f["path"] else f["path"] for f in (gone or other)]
    named = ", ".join(shown[:3]) + (" and %d more" % (len(shown) - 3) if len(shown) > 3 else "")
    if gone:
        title = "The CDI spec %s mounts driver %s files that no longer exist (%s)%s: GPU containers using it fail " \
                "to start" % (path, was, named, "; driver %s is installed" % now if now else "")
        effect = ("The runtime cannot bind them: a container given the GPU through CDI does not start ('%s: no "
                  "such file or directory')." % gone[0]["path"])
    elif other:
        title = "The CDI spec %s mounts driver %s files, but driver %s is installed: containers get libraries " \
                "that do not match the loaded module" % (path, was, now)
        effect = ("Those files are left over from the old release: CUDA and NVML in a container started through "
                  "CDI fail with 'Driver/library version mismatch'.")
    else:
        title = "The CDI spec %s was generated for driver %s, but driver %s is installed" % (path, was, now)
        effect = "Its hooks set up the container for the old release's libraries."
    detail = ("`nvidia-ctk cdi generate` writes into the spec the full versioned names of the driver files "
              "installed when it runs; a driver update does not rewrite the spec. %s "
              "was generated under driver %s; %s. %s" % (
                  path, was, "driver %s is installed now" % now if now else "those files are gone", effect))
    return Finding(
        code="container-toolkit.cdi_spec_stale", severity="warning", components=["container-toolkit"],
        title=title, detail=detail,
        evidence=_ev(facts, "container.cdi_specs", *_DRIVER_RELEASE_FACTS),
        source={"rule": "a CDI spec mounts the driver files of the release it was generated under; regenerate it "
                        "after a driver update (toolkit 1.18.0 and later: the nvidia-cdi-refresh service "
                        "regenerates /var/run/cdi/nvidia.yaml)", "url": CDI_DOC, "checked": "2026-11-30"},
        fix=Fix(text="Regenerate the spec for the driver installed now, then recreate the containers (NVIDIA "
                     "Container Toolkit 1.18.0 and later ship the nvidia-cdi-refresh service, which regenerates "
                     "/var/run/cdi/nvidia.yaml at boot and on driver changes; a spec kept elsewhere must be "
                     "regenerated or removed by hand).",
                commands=["sudo nvidia-ctk cdi generate --output=%s" % path, "nvidia-ctk cdi list"]))


@check("container-toolkit.cdi-spec", requires=("container.cdi_specs",),
       reads=("container.*", "os.*") + _DRIVER_RELEASE_FACTS, layers=("containers",), codes=(
    CodeDoc("container-toolkit.cdi_spec_stale", "warning",
            "An NVIDIA CDI spec in /etc/cdi or /var/run/cdi names device nodes that do not exist on this host "
            "(it was generated for another GPU or device layout), pins device numbers (major) the host's "
            "driver no longer has (/proc/devices), or mounts the versioned files (libcuda.so.<release>, "
            "firmware/nvidia/<release>/...) of another driver release than the one installed (it was generated "
            "before a driver update).",
            "container.cdi_specs (missing_nodes, wrong_majors, driver_files, driver_release), "
            "driver.kernel_module.version, driver.version, driver.userspace.version",
            "Podman, containerd or Docker in CDI mode refuse the devices that name them: 'setting up CDI "
            "devices: failed to inject devices: failed to stat CDI host device \"/dev/...\": no such file or "
            "directory', or fail to bind the old release's libraries ('libcuda.so.<old release>: no such file "
            "or directory').", CDI_STALE_THREAD),
))
def cdi_spec_stale(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    cdi = facts.value("container.cdi_specs")
    if not isinstance(cdi, dict) or facts.value("os.container"):
        return  # inside a container /dev is the container's, not the host's the spec describes
    installed = _installed_releases(facts)
    for spec in cdi.get("specs") or []:
        if not isinstance(spec, dict) or not str(spec.get("kind") or "").startswith("nvidia.com/"):
            continue
        gone = [n for n in spec.get("missing_nodes") or [] if n not in _ON_DEMAND_NODES]
        wrong = [w for w in spec.get("wrong_majors") or [] if isinstance(w, dict)]
        # another release than the installed one is the more precise finding; where the installed release is not
        # known, files that are gone say less than device nodes that are (regenerating fixes both)
        release = _cdi_other_release(facts, spec, installed) if installed or not (gone or wrong) else None
        if release is not None:
            yield release
            continue
        if wrong and not gone:
            yield _cdi_wrong_majors(facts, spec, wrong)
            continue
        if not gone:
            continue
        path = spec.get("path")
        yield Finding(
            code="container-toolkit.cdi_spec_stale", severity="warning", components=["container-toolkit"],
            title="The CDI spec %s names %s, which %s not exist on this host: GPU containers using it fail to "
                  "start" % (path, ", ".join(gone), "does" if len(gone) == 1 else "do"),
            detail="A CDI spec lists the host device nodes each device injects; it was generated for an earlier "
                   "device layout (another GPU, a removed or re-enumerated card, another driver). Podman (or "
                   "containerd, or Docker in CDI mode) refuses such a device: 'failed to stat CDI host device "
                   "\"%s\": no such file or directory'. nvidia-ctk regenerates it from the devices present now." %
                   gone[0],
            evidence=_ev(facts, "container.cdi_specs"),
            source={"rule": "a CDI spec must name existing host device nodes; regenerate it after hardware or "
                            "driver changes", "url": CDI_DOC, "checked": "2026-11-27"},
            fix=Fix(text="Regenerate the spec from the devices present now (toolkit 1.18 and later also ship the "
                         "nvidia-cdi-refresh service, which does this at boot and on driver changes).",
                    commands=["sudo nvidia-ctk cdi generate --output=%s" % path, "nvidia-ctk cdi list"]))


NCCL_DOCKER = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#docker"
#: Docker's default size of a container's /dev/shm (``--shm-size`` unset): 64 MiB.
DOCKER_DEFAULT_SHM = 64 * 1024 * 1024


@check("container-shm", requires=("gpu.count",), reads=("container.shm", "os.container"), layers=("containers",),
       codes=(
    CodeDoc("nccl.shm_too_small", "warning", "Inside a container with several GPUs, /dev/shm is "
            "Docker's default 64 MiB (or smaller).", "container.shm, gpu.count, os.container",
            "NCCL keeps its intra-node buffers in /dev/shm: multi-GPU training fails at start-up ('Error while "
            "creating shared memory segment ... No space left on device', 'unhandled system error').", NCCL_DOCKER),
))
def container_shm(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    shm, count = facts.mapping("container.shm"), facts.value("gpu.count")
    size = shm.get("size_bytes")
    if not facts.value("os.container") or not isinstance(count, int) or count < 2 or not isinstance(size, int):
        return []
    if size > DOCKER_DEFAULT_SHM:
        return []
    return [Finding(
        code="nccl.shm_too_small", severity="warning", components=["docker", "nccl"],
        title="/dev/shm in this container is %d MiB, with %d GPUs: too small for NCCL" % (size // (1024 * 1024),
                                                                                        count),
        detail="Docker gives a container 64 MiB of /dev/shm unless told otherwise; NCCL allocates its buffers "
               "between GPUs of one node there, so multi-GPU jobs (DDP, torchrun, Horovod) fail at their first "
               "collective with 'No space left on device' or 'unhandled system error'.",
        evidence=_ev(facts, "container.shm", "gpu.count", "os.container"),
        source={"rule": "NCCL in Docker needs a larger /dev/shm (--shm-size=1g) or the host's IPC namespace",
                "url": NCCL_DOCKER, "checked": "2026-11-29"},
        fix=Fix(text="Start the container with more shared memory (or the host's IPC namespace); in Kubernetes, "
                     "mount an emptyDir with medium: Memory at /dev/shm.",
                commands=["docker run --gpus all --shm-size=1g --ulimit memlock=-1 ...",
                          "docker run --gpus all --ipc=host ..."]))]


#: libibverbs lists a device from sysfs (/sys/class/infiniband_verbs/uverbsN) and opens /dev/infiniband/uverbsN to
#: use it (rdma-core libibverbs/device.c, __ibv_open_device); a container gets only the device nodes it is given.
RDMA_OPEN = "https://github.com/linux-rdma/rdma-core/blob/master/libibverbs/device.c"
#: AWS: EFA in containers on EKS comes from the EFA device plugin (resource vpc.amazonaws.com/efa).
EFA_EKS = "https://docs.aws.amazon.com/eks/latest/userguide/device-management-efa.html"
#: NVIDIA (Mellanox): InfiniBand/RoCE HCAs in Kubernetes pods come from the RDMA shared device plugin.
RDMA_K8S_PLUGIN = "https://github.com/Mellanox/k8s-rdma-shared-dev-plugin"
#: fi_info prints a failed fi_getinfo as "fi_getinfo: <ret> (<fi_strerror>)" (libfabric's FT_PRINTERR).
LIBFABRIC_INFO = "https://github.com/ofiwg/libfabric/blob/main/util/info.c"
#: aws-ofi-nccl warns "OFI fi_getinfo() call failed: <fi_strerror>" (NCCL prefixes NET/OFI) when no provider answers.
AWS_OFI_NCCL = "https://github.com/aws/aws-ofi-nccl/blob/master/src/nccl_ofi_net.cpp"
#: The most --device flags spelled out in a fix command.
MAX_DEVICE_FLAGS = 8


def _more(items: List[Any], shown: int) -> str:
    """' and N more' after the first ``shown`` of ``items`` (nothing when they are all shown)."""
    return " and %d more" % (len(items) - shown) if len(items) > shown else ""


def _some(items: List[Any], shown: int = 4) -> str:
    """The first ``shown`` of ``items``, then how many more."""
    return ", ".join(str(i) for i in items[:shown]) + _more(items, shown)


@check("container-rdma", requires=("container.rdma",), reads=("container.rdma", "os.container"),
       layers=("containers",), codes=(
    CodeDoc("container.rdma_devices_not_passed", "warning", "Inside a container with RDMA user space (libibverbs, "
            "libfabric or an NCCL net plugin), the host's RDMA devices (InfiniBand, RoCE, EFA) are visible in sysfs "
            "but no /dev/infiniband/uverbs* device node was passed in.", "container.rdma, os.container",
            "libibverbs opens /dev/infiniband/uverbsN for each device it lists: without the nodes verbs and "
            "libfabric find no usable device ('fi_getinfo: -61 (No data available)'), aws-ofi-nccl fails to "
            "initialise and NCCL falls back to TCP sockets or fails.", RDMA_OPEN,
        messages=(Message("fi_getinfo: -61 (No data available)", LIBFABRIC_INFO),
                  Message("NET/OFI OFI fi_getinfo() call failed: No data available", AWS_OFI_NCCL))),
))
def container_rdma(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    rdma = facts.mapping("container.rdma")
    devices = [d for d in (rdma.get("devices") or []) if isinstance(d, dict)]
    nodes, userspace = rdma.get("nodes"), rdma.get("userspace") or []
    if not facts.value("os.container") or not devices or not isinstance(nodes, list) or not userspace:
        return []
    if any(isinstance(n, str) and n.startswith("uverbs") for n in nodes):
        return []  # some were passed in (a device plugin may give a container only its share)
    verbs = [v for v in (rdma.get("verbs") or []) if isinstance(v, str)]
    drivers = sorted({str(d.get("driver")) for d in devices if d.get("driver")})
    kind = "EFA" if drivers == ["efa"] else "RDMA"
    libs = ", ".join(sorted({str(u.get("soname")) for u in userspace if isinstance(u, dict)}))
    flags = " ".join("--device=/dev/infiniband/%s" % v for v in verbs[:MAX_DEVICE_FLAGS]) or \
        "--device=/dev/infiniband/uverbs0"
    commands = ["docker run --gpus all %s ..." % flags, "ls -l /dev/infiniband"]
    if kind == "EFA":
        commands.append("kubectl describe node <node> | grep vpc.amazonaws.com/efa")
    return [Finding(
        code="container.rdma_devices_not_passed", severity="warning", components=["docker", "nccl"],
        title="This container sees the host's %d %s device(s) (%s) but has no /dev/infiniband/uverbs* node: "
              "they cannot be used from it" % (len(devices), kind, ", ".join(
                  "%s%s" % (d.get("name"), " (%s)" % d["driver"] if d.get("driver") else "")
                  for d in devices[:4]) + _more(devices, 4)),
        detail="libibverbs opens /dev/infiniband/uverbsN for each RDMA device it uses, and this container has "
               "%s, so the RDMA libraries here (%s) find no usable device ('fi_getinfo: -61 (No data available)' "
               "from libfabric's efa provider, no device from verbs): NCCL's network plugin fails to initialise, "
               "or NCCL falls back to TCP sockets between nodes. The kernel lists %s; the container was started "
               "without their device nodes." % (
                   "no uverbs node in /dev/infiniband (%s)" % ", ".join(str(n) for n in nodes[:6]) if nodes
                   else "no /dev/infiniband", libs, _some(verbs)
                   if verbs else "%d RDMA device(s)" % len(devices)),
        evidence=_ev(facts, "container.rdma", "os.container"),
        source={"rule": "libibverbs opens /dev/infiniband/uverbsN for each RDMA device; a container needs the "
                        "nodes passed in (docker --device, --privileged, or a Kubernetes RDMA/EFA device plugin)",
                "url": RDMA_OPEN, "checked": "2026-12-01"},
        fix=Fix(text="Pass the host's RDMA device nodes into the container: docker run --device=/dev/infiniband/"
                     "uverbsN for each device (or --privileged). In Kubernetes request the devices from a device "
                     "plugin: vpc.amazonaws.com/efa from the AWS EFA device plugin (%s), or an rdma/ resource "
                     "from NVIDIA's RDMA shared device plugin for InfiniBand/RoCE (%s)." % (EFA_EKS,
                                                                                          RDMA_K8S_PLUGIN),
                commands=commands))]


#: dockerd decodes daemon.json before it starts (moby daemon/config/config.go, getConflictFreeConfiguration) and
#: exits on a decoding error: "unable to configure the Docker daemon with file /etc/docker/daemon.json: invalid
#: character ...". Docker's troubleshooting page shows the same failure for a file it cannot use.
DAEMON_TROUBLESHOOT = "https://docs.docker.com/engine/daemon/troubleshoot/"
DAEMON_SOURCE = "https://github.com/moby/moby/blob/master/daemon/config/config.go"


@check("docker-daemon-json", requires=("container.daemon_json_invalid",), reads=("container.*",),
       layers=("containers",), codes=(
    CodeDoc("docker.daemon_config_invalid", "error", "/etc/docker/daemon.json is not valid JSON (or not a JSON "
            "object).", "container.daemon_json_invalid", "dockerd reads it before starting and exits: every docker "
            "command then fails with 'Cannot connect to the Docker daemon', GPU containers included.",
            DAEMON_TROUBLESHOOT),
))
def daemon_config_invalid(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    bad = facts.mapping("container.daemon_json_invalid")
    if not bad:
        return
    where = " at line %s, column %s" % (bad.get("line"), bad.get("column")) if bad.get("line") else ""
    path = str(bad.get("path") or "/etc/docker/daemon.json")
    yield Finding(
        code="docker.daemon_config_invalid", severity="error", components=["docker", "container-toolkit"],
        title="%s is not valid JSON (%s%s): dockerd will not start" % (path, bad.get("error"), where),
        detail="dockerd decodes %s before it starts and exits when it cannot ('unable to configure the Docker "
               "daemon with file %s'), so every docker command fails with 'Cannot connect to the Docker daemon'. "
               "A comma missing between two settings (one added by hand beside the nvidia runtime) is the usual "
               "cause." % (path, path),
        evidence=_ev(facts, "container.daemon_json_invalid", "container.docker"),
        source={"rule": "dockerd exits when daemon.json cannot be decoded", "url": DAEMON_SOURCE,
                "checked": "2026-11-29"},
        fix=Fix(text="Correct the JSON%s (or let `nvidia-ctk runtime configure` rewrite the file), then restart "
                     "Docker." % where,
                commands=["python3 -m json.tool %s" % path, "sudo systemctl restart docker"]))


TOOLKIT_CHANGELOG = "https://github.com/NVIDIA/nvidia-container-toolkit/blob/main/CHANGELOG.md"


@check("container-toolkit-release", requires=("container.toolkit",), reads=("container.*",) + INSTALL_LINE_READS,
       layers=("containers",), codes=(
    CodeDoc("container-toolkit.known_broken_release", "warning", "The installed NVIDIA Container Toolkit is a "
            "release with a bug that breaks GPU containers, fixed in the next release (matrix "
            "container_toolkit_bugs, from the toolkit's CHANGELOG); a bug that bites only where "
            "nvidia-container-cli is run directly (enroot's NVIDIA hook, Apptainer's --nvccli) is said only "
            "there.", "container.toolkit, container.apptainer",
            "Containers that reach the bug fail to start or get no GPU, whatever else is set up right.",
            TOOLKIT_CHANGELOG),
))
def toolkit_release(ctx: CheckContext) -> Iterable[Finding]:
    from ..matrix import containers as ctm

    facts = ctx.facts
    tk = facts.mapping("container.toolkit")
    if not tk.get("installed") or not tk.get("version"):
        return
    row = ctm.toolkit_bug(str(tk["version"]))
    if row is None:
        return
    where = ""
    if (row.get("condition") or {}).get("kind") == "direct_cli":
        callers = [str(p) for p in tk.get("direct_cli_callers") or []]
        app = facts.mapping("container.apptainer")
        if app.get("installed") and app.get("uses_nvccli"):
            callers.append("%s (use nvidia-container-cli = yes)" % app.get("program", "apptainer"))
        if not callers:
            return
        where = " Here nvidia-container-cli is run directly by %s." % ", ".join(callers)
    src = row.get("source") or {}
    yield Finding(
        code="container-toolkit.known_broken_release", severity=str(row.get("severity") or "warning"),
        components=["container-toolkit"],
        title="NVIDIA Container Toolkit %s has a bug fixed in %s: %s" % (tk["version"], row["fixed_in"], row["bug"]),
        detail="With this release %s.%s NVIDIA's changelog for %s lists the fix." % (row["effect"], where,
                                                                                   row["fixed_in"]),
        evidence=_ev(facts, "container.toolkit", "container.cdi_specs", *(("container.apptainer",) if where else ())),
        source={"rule": "toolkit %s: %s (fixed in %s)" % (row["release"], row["bug"], row["fixed_in"]),
                "url": src.get("url", TOOLKIT_CHANGELOG), "checked": src.get("checked", CHECKED)},
        fix=Fix(text="Upgrade the NVIDIA Container Toolkit to %s or later (its packages together), then regenerate "
                     "the CDI spec if you use one." % row["fixed_in"],
                commands=["sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml"],
                install=install_line(facts, "container-toolkit")))


CDI_LIBRARY = "https://github.com/cncf-tags/container-device-interface"


@check("container-engine-cdi", requires=("container.podman", "container.cdi_specs"), reads=("container.*",),
       layers=("containers",), codes=(
    CodeDoc("container.engine_without_cdi", "error", "NVIDIA CDI specs are set up, but the installed Podman cannot "
            "read them: it has no CDI support, or its CDI library loads only JSON specs in /etc/cdi (Podman "
            "3.2-3.4) and the NVIDIA spec is YAML or in /var/run/cdi (matrix cdi_engines).",
            "container.podman, container.cdi_specs",
            "`podman run --device nvidia.com/gpu=all` finds no such CDI device and takes the name for a host path "
            "('stat nvidia.com/gpu=all: no such file or directory').", CDI_LIBRARY),
    CodeDoc("container-toolkit.cdi_spec_unreadable_by_runtime", "error", "An NVIDIA CDI spec has a cdiVersion (or "
            "a field of one) newer than the installed Podman's CDI library accepts (matrix cdi_engines).",
            "container.podman, container.cdi_specs",
            "Podman refuses the spec ('unknown field \"additionalGids\"', 'invalid version'), so no nvidia.com/gpu "
            "device can be injected.", CDI_LIBRARY),
))
def engine_cdi(ctx: CheckContext) -> Iterable[Finding]:
    from ..matrix import containers as ctm
    from ..versions import parse

    facts = ctx.facts
    podman = facts.mapping("container.podman")
    specs = [s for s in facts.mapping("container.cdi_specs").get("specs") or []
             if isinstance(s, dict) and str(s.get("kind") or "").startswith("nvidia.com/")]
    if not podman.get("installed") or not podman.get("version") or not specs:
        return
    version = str(podman["version"])
    row = ctm.cdi_reading("podman", version)
    if row is None:
        return
    src = row.get("source") or {}
    source = {"rule": "Podman %s-%s reads CDI specs: %s in %s, cdiVersion up to %s" % (
        row["first"], row["last"], "/".join(row["formats"]) or "none", ", ".join(row["dirs"]) or "-",
        row.get("max_cdi_version") or "any it knows"), "url": src.get("url", CDI_LIBRARY),
        "checked": src.get("checked", CHECKED)}
    ev = _ev(facts, "container.podman", "container.cdi_specs")
    regenerate = "sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml"
    unseen = [s for s in specs if posixpath.dirname(str(s.get("path"))) not in row["dirs"]
              or str(s.get("path")).rsplit(".", 1)[-1].replace("yml", "yaml") not in row["formats"]]
    if unseen:
        paths = ", ".join(str(s.get("path")) for s in unseen)
        what = ("has no CDI support (Podman added it in 3.2.0)" if not row["formats"] else
                "reads only %s CDI specs in %s" % ("/".join(f.upper() for f in row["formats"]),
                                                  ", ".join(row["dirs"])))
        yield Finding(
            code="container.engine_without_cdi", severity="error", components=["container-toolkit"],
            title="Podman %s %s: it cannot see the NVIDIA CDI spec %s" % (version, what, paths),
            detail="Podman %s's CDI library %s, so `--device nvidia.com/gpu=...` names no CDI device and Podman takes "
                   "it for a host path ('stat nvidia.com/gpu=all: no such file or directory'). Podman 4.1 and later "
                   "read YAML and JSON specs in /etc/cdi and /var/run/cdi." % (version, what),
            evidence=ev, source=source,
            fix=Fix(text="Upgrade Podman to 4.1 or later (your distribution's newer release), or, with this Podman, "
                         "use the NVIDIA Container Runtime hook instead of CDI devices.",
                    commands=["podman --version"]))
        return
    top = parse(row.get("max_cdi_version"))
    if top is None:
        return
    fields = {str(f["key"]): str(f["cdi_version"]) for f in ctm.cdi_fields()}
    for s in specs:
        newer = [k for k in s.get("fields") or [] if k in fields and (parse(fields[k]) or top) > top]
        spec_v = parse(s.get("cdi_version"))
        if not newer and not (spec_v is not None and spec_v > top):
            continue
        why = ("uses %s (cdiVersion %s)" % (", ".join(newer), max((fields[k] for k in newer),
                                                                  key=lambda v: parse(v) or top))
               if newer else "is cdiVersion %s" % s.get("cdi_version"))
        yield Finding(
            code="container-toolkit.cdi_spec_unreadable_by_runtime", severity="error",
            components=["container-toolkit"],
            title="%s %s, newer than Podman %s's CDI library reads (cdiVersion %s at most)" % (
                s.get("path"), why, version, row["max_cdi_version"]),
            detail="Podman %s loads CDI specs with a library that accepts cdiVersion up to %s and refuses unknown "
                   "fields ('json: unknown field \"%s\"'), so it drops this spec and no nvidia.com/gpu device can be "
                   "injected. The NVIDIA Container Toolkit writes the newest version the spec's content needs." % (
                       version, row["max_cdi_version"], newer[0] if newer else "..."),
            evidence=ev, source=source,
            fix=Fix(text="Upgrade Podman to a release whose CDI library reads this spec, or write the spec "
                         "without the newer fields (an older NVIDIA Container Toolkit's `nvidia-ctk cdi generate`).",
                    commands=[regenerate]))


REQUIRE_DOC = ("https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/docker-specialized.html"
               "#nvidia-require-constraints")
#: The comparison operators of a constraint (libnvidia-container's: cuda>=9.2, driver<471, brand=tesla).
_CONSTRAINT = lazyre.compile(r"^(cuda|driver|arch|brand)(>=|<=|==|!=|=|<|>)(\S+)$")


def _compare(have: Version, op: str, want: Version) -> bool:
    return {">=": have >= want, "<=": have <= want, ">": have > want, "<": have < want,
            "=": have == want, "==": have == want, "!=": have != want}[op]


def _constraint(term: str, known: Dict[str, Any]) -> Optional[bool]:
    """One constraint (``cuda>=9.2``) against this machine: True, False, or None when it cannot be told (a
    brand or architecture not known, a version that does not parse)."""
    m = _CONSTRAINT.match(term.strip().lower())
    if not m:
        return None
    key, op, want = m.groups()
    if key == "brand":
        # the names the GPU's brand may have (one when NVML's answer is recorded); compared without case, = and !=
        names = known.get("brand") or []
        if not names or op not in ("=", "==", "!="):
            return None
        if len(names) == 1:
            return (names[0] == want) == (op != "!=")
        return None if want in names else op == "!="
    if key == "arch":
        ccs = known.get("arch") or []
        wanted = versions.parse(want)
        if not ccs or wanted is None:
            return None
        return all(_compare(cc, op, wanted) for cc in ccs)
    have, wanted = known.get(key), versions.parse(want)
    if have is None or wanted is None:
        return None
    return _compare(have, op, wanted)


def require_holds(expression: str, known: Dict[str, Any]) -> Optional[bool]:
    """An NVIDIA_REQUIRE_* expression against this machine: space-separated alternatives (any one suffices) of
    comma-separated constraints (all must hold). None when it cannot be told."""
    verdicts = []
    for alternative in expression.split():
        terms = [_constraint(t, known) for t in alternative.split(",") if t]
        verdicts.append(False if False in terms else (None if None in terms else True))
    if True in verdicts:
        return True
    return None if None in verdicts or not verdicts else False


def gpu_brand_names(facts: Facts, i: int) -> List[str]:
    """The names GPU ``i``'s brand may have as the NVIDIA Container Toolkit compares them (lower case): the one its
    NVML brand maps to, else those of the brands its product segment (gpus.json, by the model name) reports; empty
    when neither is known."""
    from ..matrix.containers import gpu_brands, segment_brands
    from ..matrix.hardware import gpu_product

    nvml = facts.value("gpu.%d.brand" % i)
    row = next((r for r in gpu_brands() if r["nvml_name"] == nvml), None) if isinstance(nvml, str) else None
    if row is not None:
        return [str(row["toolkit_brand"]).lower()]
    product = gpu_product(str(facts.value("gpu.%d.name" % i) or ""))
    return segment_brands(str(product["segment"])) if product else []


#: The requirement a legacy CUDA image is held to (CUDA_VERSION set, NVIDIA_REQUIRE_CUDA not): ``cuda>=<major.minor>``
#: of its CUDA_VERSION, as the toolkit's ``CUDA.GetRequirements`` adds it (NVIDIA/nvidia-container-toolkit
#: internal/config/image/cuda_image.go: IsLegacy, legacyVersion); nvidia-docker 1.0 compared the image's
#: com.nvidia.cuda.version label, the same release, with the driver's CUDA (NVIDIA/nvidia-docker v1.0
#: src/nvidia-docker/utils.go: cudaSupported, "unsupported CUDA version: driver %s < image %s").
LEGACY_REQUIRE = "CUDA_VERSION"
NVIDIA_DOCKER1_URL = ("https://github.com/NVIDIA/nvidia-docker/blob/3422bca272d64600ca15874d96e4e511b669c7c4/src/"
                      "nvidia-docker/utils.go")
_MAJOR_MINOR = lazyre.compile(r"^v?(\d+)\.(\d+)(?:\.\d+)*$")


def image_requirements(image: Dict[str, Any]) -> Dict[str, str]:
    """The constraints the NVIDIA Container Toolkit checks for an image: its NVIDIA_REQUIRE_* variables, and for a
    legacy CUDA image (CUDA_VERSION without NVIDIA_REQUIRE_CUDA) ``cuda>=<major.minor>`` under ``CUDA_VERSION``."""
    out = {str(k): str(v) for k, v in (image.get("require") or {}).items() if isinstance(v, str)}
    m = _MAJOR_MINOR.match(str(image.get("cuda_version") or "").strip())
    if m and "NVIDIA_REQUIRE_CUDA" not in out:
        out[LEGACY_REQUIRE] = "cuda>=%s.%s" % (m.group(1), m.group(2))
    return out


@check("container-image-requirements", requires=("container.images", "driver.cuda_version"),
       reads=("driver.version", "gpu.N.compute_capability", "gpu.N.brand", "gpu.N.name"), layers=("containers",),
       codes=(
    CodeDoc("container.image_needs_newer_driver", "error",
            "A Docker image on this machine requires (NVIDIA_REQUIRE_CUDA) a newer CUDA than the installed driver "
            "supports.", "container.images, driver.cuda_version",
            "The NVIDIA Container Toolkit refuses to start it: 'nvidia-container-cli: requirement error: "
            "unsatisfied condition: cuda>=X'.", REQUIRE_DOC,
        messages=(Message("requirement error: unsatisfied condition", REQUIRE_DOC),
                  Message("unsupported CUDA version: driver", NVIDIA_DOCKER1_URL))),
))
def container_image_requirements(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    cuda = versions.parse(str(facts.value("driver.cuda_version") or ""))
    if cuda is None:
        return
    driver_version = versions.parse(str(facts.value("driver.version") or ""))
    # libnvidia-container checks the constraints against each GPU given to the container (its arch and brand);
    # an image is refused here when they fail on every GPU, so whichever GPUs it is given.
    gpus: List[Dict[str, Any]] = []
    for i in range(facts.count("gpu.count", MAX_GPUS) or 0):
        cc = versions.parse(str(facts.value("gpu.%d.compute_capability" % i) or ""))
        gpus.append({"cuda": cuda, "driver": driver_version, "arch": [cc] if cc is not None else [],
                     "brand": gpu_brand_names(facts, i)})
    if not gpus:
        gpus = [{"cuda": cuda, "driver": driver_version, "arch": [], "brand": []}]

    def refused_everywhere(expression: str) -> bool:
        return all(require_holds(expression, known) is False for known in gpus)

    refused = []
    for image in facts.items("container.images"):
        if not isinstance(image, dict) or image.get("disable_require"):
            continue
        unmet = {k: v for k, v in sorted(image_requirements(image).items())
                 if isinstance(v, str) and refused_everywhere(v)}
        if unmet:
            refused.append((image, unmet))
    if not refused:
        return
    needs = []
    for image, unmet in refused:
        wants = [m.group(3) for v in unmet.values() for t in v.split() for m in [_CONSTRAINT.match(t.lower())]
                 if m and m.group(1) == "cuda" and m.group(2) in (">=", ">")]
        needs.append((", ".join(image.get("tags") or [image.get("id", "?")]),
                      " ".join("CUDA_VERSION=%s, held to %s" % (image.get("cuda_version"), v) if k == LEGACY_REQUIRE
                               else "%s=%s" % (k, v) for k, v in unmet.items()),
                      max(wants, key=versions.sort_key) if wants else ""))
    newest = max((n[2] for n in needs if n[2]), key=versions.sort_key, default="")
    brands = sorted({b for known in gpus for b in known["brand"]})
    brand_note = (" Its brand=... alternatives (older driver branches admitted through CUDA forward compatibility, "
                  "for the brands they name) do not hold either: the GPU brand here is %s." % " or ".join(brands)
                  if brands and any("brand=" in v.lower() for _, unmet in refused for v in unmet.values()) else "")
    names = "; ".join("%s (%s)" % (tags, req) for tags, req, _ in needs)
    legacy = [str(image.get("cuda_version")) for image, unmet in refused if LEGACY_REQUIRE in unmet]
    legacy_note = (" An image that sets CUDA_VERSION (%s) and no NVIDIA_REQUIRE_CUDA is a legacy CUDA image: the "
                   "toolkit requires cuda>= its major.minor, and nvidia-docker 1.0 compares it with the driver's "
                   "CUDA the same way ('unsupported CUDA version: driver %s < image %s')." % (
                       ", ".join(legacy), cuda, legacy[0]) if legacy else "")
    floor = min_driver_for_cuda(newest) if newest else None
    driver = facts.value("driver.version") or "?"
    yield Finding(
        code="container.image_needs_newer_driver", severity="error", components=["docker", "driver"],
        title="Docker image%s %s need%s a newer driver than %s (CUDA %s)" % (
            "s" if len(needs) > 1 else "", ", ".join(n[0] for n in needs), "" if len(needs) > 1 else "s", driver,
            cuda),
        detail="The NVIDIA Container Toolkit checks an image's NVIDIA_REQUIRE_* constraints against the driver "
               "before it starts the container and refuses it ('nvidia-container-cli: requirement error: "
               "unsatisfied condition'). Unmet here: %s.%s%s" % (names, brand_note, legacy_note),
        evidence=_ev(facts, "container.images", "driver.cuda_version", "driver.version"),
        source={"rule": "NVIDIA_REQUIRE_*: space-separated alternatives of comma-separated constraints, checked "
                        "against the driver's CUDA version, the driver version and the GPUs",
                "url": REQUIRE_DOC, "checked": "2026-11-29"},
        fix=Fix(text="Install a driver that supports CUDA %s%s, or use an image built for CUDA %s or older." % (
                    newest, " (%s or newer)" % floor if floor else "", cuda) if newest else
                "Install a driver that meets the image's constraints, or use an image that the driver meets."))


APPTAINER_GPU_DOC = "https://apptainer.org/docs/user/latest/gpu.html"


def _nvliblist_covers(entries: List[str], soname: str) -> bool:
    """Whether ``apptainer --nv`` binds ``soname`` from this list: a bare name that is a prefix of the loader cache's
    name (Apptainer's paths.Resolve), or an absolute path to that library."""
    for entry in entries:
        if ".so" not in entry:
            continue  # a binary
        if entry.startswith("/") and posixpath.basename(entry).startswith(soname.split(".so", 1)[0] + ".so"):
            return True
        if not entry.startswith("/") and soname.startswith(entry):
            return True
    return False


@check("apptainer-nvliblist", requires=("container.apptainer", "driver.library_links"), reads=(),
       layers=("containers",), codes=(
    CodeDoc("container.nvliblist_missing_library", "warning",
            "Apptainer's (or Singularity's) nvliblist.conf lacks a driver library CUDA or OpenCL needs in a "
            "container, and the installed driver has it.",
            "container.apptainer (nvliblist.conf), driver.library_links, matrix container_compute_libraries",
            "`apptainer --nv` binds into the container only the driver libraries nvliblist.conf names: one it lacks "
            "is missing inside, and what needs it fails there (OpenCL program compilation without libnvidia-nvvm "
            "on drivers from 525.85.05).", "https://github.com/apptainer/apptainer/blob/v1.2.5/CHANGELOG.md"),
))
def apptainer_nvliblist(ctx: CheckContext) -> Iterable[Finding]:
    """Each driver library NVIDIA lists as needed by CUDA or OpenCL in a container, installed on this machine, against
    the list `apptainer --nv` binds from."""
    from ..matrix.containers import compute_libraries

    facts = ctx.facts
    app = facts.mapping("container.apptainer")
    entries = app.get("entries")
    if not app.get("installed") or not isinstance(entries, list) or app.get("uses_nvccli"):
        return  # no Apptainer, no list read, or --nv handed to nvidia-container-cli (which does not read it)
    installed = sorted({posixpath.basename(str(link.get("link"))) for link in facts.items("driver.library_links")
                        if isinstance(link, dict) and link.get("exists") and link.get("link")})
    conf, program = str(app.get("nvliblist")), str(app.get("program") or "apptainer")
    for row in compute_libraries():
        lib = str(row["library"])
        have = [s for s in installed if s.startswith(lib + ".")]
        if not have or _nvliblist_covers([str(e) for e in entries], have[0]):
            continue
        since = versions.parse(str(row.get("apptainer_lists_from")))
        mine = versions.parse(str(app.get("version") or "")) if program == "apptainer" else None
        upgrade = program == "apptainer" and since is not None and (mine is None or mine < since)
        src = row.get("source") or {}
        yield Finding(
            code="container.nvliblist_missing_library", severity="warning", components=["apptainer", "driver"],
            title="%s %s's nvliblist.conf (%s) lacks %s, which this driver has: `%s --nv` does not bind it" % (
                program.capitalize(), app.get("version") or "", conf, lib, program),
            detail="%s --nv binds into a container only the driver libraries %s names; %s (%s) is installed but "
                   "not listed, so it is missing inside the container. Needed for %s.%s" % (
                       program.capitalize(), conf, lib, ", ".join(have), row.get("needed_for"),
                       " Apptainer's default list has it from %s." % row.get("apptainer_lists_from")
                       if program == "apptainer" else ""),
            evidence=_ev(facts, "container.apptainer", "driver.library_links"),
            source={"rule": "%s is a driver library CUDA/OpenCL need in a container" % lib,
                    "url": str(src.get("url") or APPTAINER_GPU_DOC), "checked": str(src.get("checked") or CHECKED)},
            fix=Fix(text="Add %s to %s (one line; it binds every library whose name starts with it)%s." % (
                        lib, conf, ", or upgrade Apptainer to %s or later, whose default list has it" %
                        row.get("apptainer_lists_from") if upgrade else ""),
                    commands=["echo %s | sudo tee -a %s" % (lib, conf)]))


LDCONFIG_ISSUE = "https://github.com/NVIDIA/nvidia-container-toolkit/issues/553"
#: The first toolkit release whose hook prefers ``<ldconfig>.real`` when it exists (NVIDIA/nvidia-container-toolkit
#: commit 232df647, "Resolve LDConfig path passed to nvidia-container-cli", first in v1.15.0; its CHANGELOG: "Normalize
#: ldconfig path on use. This automatically adjust the ldconfig setting applied to ldconfig.real on systems where
#: this exists").
LDCONFIG_NORMALIZED = Version("1.15.0")


@check("container-toolkit.ldconfig", requires=("container.toolkit_ldconfig",), reads=("container.*",),
       layers=("containers",), codes=(
    CodeDoc("container-toolkit.ldconfig_is_wrapper_script", "warning", "The NVIDIA Container Toolkit's config names "
            "a host ldconfig (ldconfig = \"@/sbin/ldconfig\") that is a shell script, not the ldconfig program: "
            "Debian's and Ubuntu's libc-bin /sbin/ldconfig is a wrapper that execs /sbin/ldconfig.real.",
            "container.toolkit_ldconfig",
            "nvidia-container-cli runs that file for each GPU container; the script does not rebuild the "
            "container's library cache, so the injected driver libraries are not found ('NVIDIA-SMI couldn't find "
            "libnvidia-ml.so library in your system'; the GPU Operator's toolkit-validation exits with status 12). "
            "Toolkit 1.15.0 and later use ldconfig.real themselves when it exists.", LDCONFIG_ISSUE),
))
def toolkit_ldconfig(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    for cfg in facts.value("container.toolkit_ldconfig") or []:
        if not isinstance(cfg, dict) or not cfg.get("script"):
            continue
        release = versions.parse(cfg.get("release"))
        real = cfg["ldconfig"] + ".real"
        if cfg.get("real_present") and (release is None or release >= LDCONFIG_NORMALIZED):
            continue  # the hook itself runs <ldconfig>.real (or the release that would say so is unknown)
        yield Finding(
            code="container-toolkit.ldconfig_is_wrapper_script", severity="warning",
            components=["container-toolkit"],
            title="The NVIDIA Container Toolkit%s runs ldconfig %s, which on this host is a shell script, not the "
                  "ldconfig program" % (" %s" % cfg["release"] if cfg.get("release") else "", cfg["ldconfig"]),
            detail="%s sets ldconfig = \"%s\" (the @ means the host's file). That file is a wrapper script (Debian's "
                   "and Ubuntu's libc-bin ship /sbin/ldconfig as a script that execs /sbin/ldconfig.real); run for "
                   "a container it does not rebuild the container's library cache, so GPU containers do not find "
                   "the driver libraries the toolkit mounts (\"NVIDIA-SMI couldn't find libnvidia-ml.so\", the GPU "
                   "Operator's toolkit-validation exits with status 12).%s" % (
                       cfg["config"], cfg["ldconfig"],
                       " %s exists beside it; toolkit 1.15.0 and later would use it on their own." % real[1:]
                       if cfg.get("real_present") else ""),
            evidence=_ev(facts, "container.toolkit_ldconfig", "container.toolkit"),
            source={"rule": "nvidia-container-cli needs the ldconfig program; toolkit releases before 1.15.0 run the "
                            "configured path as is", "url": LDCONFIG_ISSUE, "checked": "2026-12-01"},
            fix=Fix(text=("The GPU Operator writes this file each time its toolkit pod starts: use an operator "
                          "release whose toolkit is 1.15.0 or newer (it picks ldconfig.real on its own); until then "
                          "the edit below helps." if cfg["config"].startswith(OPERATOR_TOOLKIT_DIR + "/") else
                          "Point the toolkit's ldconfig setting at the program itself%s, or update the toolkit to "
                          "1.15.0 or newer, which picks ldconfig.real on its own." % (
                              " (ldconfig = \"%s\")" % real if cfg.get("real_present") else "")),
                    commands=["sudo sed -i 's|^\\(\\s*ldconfig\\s*=\\s*\\)\"%s\"|\\1\"%s\"|' %s" % (
                        cfg["ldconfig"], real, cfg["config"])] if cfg.get("real_present") else []))


CONTAINERD_GUIDE = ("https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/getting-started.html"
                    "#rancher-kubernetes-engine-2")
K3S_NVIDIA = "https://docs.k3s.io/advanced#nvidia-container-runtime-support"


@check("container-toolkit.containerd", requires=("container.kube_containerd",), reads=("container.*",),
       layers=("containers",), codes=(
    CodeDoc("container-toolkit.containerd_runtime_not_configured", "warning", "The NVIDIA Container Toolkit is "
            "installed on a Kubernetes node, but the containerd that runs the node's pods (RKE2's or k3s's own "
            "under /var/lib/rancher, or /etc/containerd's) has no nvidia runtime.", "container.kube_containerd",
            "GPU pods and the GPU Operator's own pods do not start (RuntimeClass nvidia not handled, or no GPU in "
            "the container); on RKE2/k3s a toolkit pointed at /etc/containerd/config.toml and "
            "/run/containerd/containerd.sock configures a containerd that is not running ('Error signaling "
            "containerd ... containerd.sock: connect: no such file or directory').", CONTAINERD_GUIDE),
))
def kube_containerd(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    cd = facts.mapping("container.kube_containerd")
    tk = facts.value("container.toolkit")
    host_toolkit = isinstance(tk, dict) and bool(tk.get("installed"))
    if not cd or not cd.get("present") or not cd.get("complete") or cd.get("nvidia_runtime") or cd.get("cdi") \
            or cd.get("cri_disabled") or not (cd.get("operator_toolkit") or host_toolkit):
        return
    rancher = cd.get("flavour") in ("RKE2", "k3s")
    config, socket = str(cd.get("config")), str(cd.get("socket"))
    if cd.get("operator_toolkit"):
        fix = Fix(text="Point the GPU Operator's toolkit at this containerd: in the ClusterPolicy's toolkit.env set "
                       "CONTAINERD_CONFIG=%s and CONTAINERD_SOCKET=%s (the helm chart's toolkit.env values), then "
                       "let the toolkit pod restart." % (
                           config + ".tmpl" if rancher else config, socket))
    elif rancher:
        fix = Fix(text="Restart %s so it detects nvidia-container-runtime and adds the nvidia runtime to its "
                       "generated config (edits to %s itself are overwritten; put custom settings in %s.tmpl)."
                       % (cd["flavour"], config, config),
                  commands=["sudo systemctl restart %s" % ("rke2-agent" if cd["flavour"] == "RKE2" else "k3s")])
    else:
        fix = Fix(text="Register the nvidia runtime with containerd and restart it.",
                  commands=["sudo nvidia-ctk runtime configure --runtime=containerd",
                            "sudo systemctl restart containerd"])
    yield Finding(
        code="container-toolkit.containerd_runtime_not_configured", severity="warning",
        components=["container-toolkit"],
        title="The NVIDIA Container Toolkit is installed, but %s containerd that runs this node's pods has no "
              "nvidia runtime (%s)" % ("%s's own" % cd["flavour"] if rancher else "the", config),
        detail="%s names no nvidia runtime, so GPU pods (RuntimeClass nvidia, or the GPU Operator's own pods) "
               "cannot get the GPU.%s" % (
                   config, " %s runs its own containerd, configured from %s (generated from %s.tmpl) and listening "
                   "on %s; a toolkit left at the default /etc/containerd/config.toml and "
                   "/run/containerd/containerd.sock configures a containerd that is not running here." % (
                       cd["flavour"], config, config, socket) if rancher else ""),
        evidence=_ev(facts, "container.kube_containerd", "container.toolkit"),
        source={"rule": "containerd runs GPU pods through the nvidia runtime the toolkit registers in the config of "
                        "the containerd the kubelet uses", "url": CONTAINERD_GUIDE if cd.get("operator_toolkit")
                else K3S_NVIDIA if rancher else INSTALL_GUIDE + "#configuring-containerd-for-kubernetes",
                "checked": "2026-12-01"},
        fix=fix)
