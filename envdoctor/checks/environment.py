"""The environment a CUDA program starts in: which GPUs CUDA_VISIBLE_DEVICES leaves it, and which libcuda the
loader hands it.

* ``CUDA_VISIBLE_DEVICES`` empty, or naming no GPU that exists (an index past the last GPU, an unknown UUID,
  ``-1``): CUDA sees no device ("no CUDA-capable device is detected", error 100; torch.cuda.is_available() is
  False) while nvidia-smi, which ignores the variable, shows every GPU.  CUDA reads the list up to its first
  invalid entry (CUDA C++ Programming Guide, "CUDA Environment Variables").
* The CUDA toolkit's stub ``libcuda.so`` (``.../lib64/stubs``, for linking only) first on the loader path:
  programs that load it get CUDA_ERROR_STUB_LIBRARY (34) instead of the driver.
* The Video Codec SDK's stub ``libnvcuvid.so`` / ``libnvidia-encode.so`` (``Lib/linux/stubs/<arch>``, for linking
  only; a ``.so.1`` link made to them) first on the loader path for the driver's ``libnvcuvid.so.1`` /
  ``libnvidia-encode.so.1``: programs get the stub's entry points, not the driver's, and cannot create a decoder or
  an encoder.
"""

from __future__ import annotations

import posixpath
from typing import Any, Dict, Iterable, List, Optional

from packaging.version import Version

from .. import versions
from ..facts import Facts
from ..findings import AnyOf, Finding, Fix
from ..matrix import hardware as hw
from ..versions import torch_arch_list_entries, torch_arch_list_runs_on
from . import CheckContext, CodeDoc, Message, check
from .compat import _can_compile
from .compat.toolkit_vs_framework import extension_toolkit

ENV_DOC = "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#cuda-environment-variables"
MIG_DOC = "https://docs.nvidia.com/datacenter/tesla/mig-user-guide/index.html#cuda-visible-devices"
STUB_DOC = "https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html"
CHECKED = "2026-11-25"


def _ev(facts: Facts, *keys: str) -> List[Dict[str, Any]]:
    return [f.to_dict() for f in (facts.get(k) for k in keys) if f is not None]


def visible(value: str, count: int, uuids: List[str], mig: Optional[List[Optional[bool]]] = None
            ) -> Optional[List[str]]:
    """The GPUs CUDA keeps for ``CUDA_VISIBLE_DEVICES=value`` (entries up to the first invalid one), or None
    when that cannot be told (a UUID and the GPUs' UUIDs are unknown; a MIG device on a GPU in MIG mode).
    ``uuids`` holds the GPUs' UUIDs by index ("" where unknown).

    ``mig`` holds each GPU's MIG mode (True, False, None when unknown), by index. A MIG device is named
    ``MIG-<UUID>`` (drivers from R470) or ``MIG-GPU-<GPU UUID>/<GPU instance>/<compute instance>`` (R450,
    R460), as NVIDIA's MIG user guide gives them (``MIG_DOC``); the MIG devices' own UUIDs are not facts, so such
    an entry is valid for all that can be told while a GPU it may belong to is in MIG mode, and names nothing
    when every GPU's MIG mode is known to be off."""
    modes = list(mig or [])
    modes += [None] * (count - len(modes))
    kept: List[str] = []
    for raw in value.split(","):
        entry = raw.strip()
        if entry.isdigit():
            if int(entry) >= count:
                break
            kept.append(entry)
        elif entry.startswith("MIG-"):
            parent = entry[4:].split("/")[0]
            if parent.startswith("GPU-"):  # the R450/R460 form names its GPU
                if not all(uuids[:count]) or len(uuids) < count:
                    return None
                on = [modes[i] for i, u in enumerate(uuids[:count]) if u.startswith(parent) or parent.startswith(u)]
            else:
                on = modes[:count]
            if True in on or None in on:
                return None  # a MIG device of a GPU in MIG mode (or one whose mode is unknown): cannot be told
            break  # no GPU it can belong to is in MIG mode: CUDA finds no such device
        elif entry.startswith("GPU-"):
            known = [u for u in uuids if u]
            if not known:
                return None
            if not any(u.startswith(entry) or entry.startswith(u) for u in known):
                break
            kept.append(entry)
        else:  # "", "-1", anything else: the list ends here
            break
    return kept


def _mode(value: Any) -> Optional[bool]:
    return value if isinstance(value, bool) else None


@check("environment.cuda-visible-devices", requires=("env.cuda_visible_devices", "gpu.N.uuid"),
       reads=("env.*", "gpu.*", "gpu.*.*"), layers=("gpu",), codes=(
    CodeDoc("gpu.cuda_visible_devices_hides_all", "error",
            "CUDA_VISIBLE_DEVICES is set but names no GPU this machine has (empty, an index past the last GPU, an "
            "unknown UUID, -1): CUDA programs see no GPU.", "env.cuda_visible_devices, gpu.count, gpu.N.uuid",
            "torch.cuda.is_available() is False, TensorFlow lists no GPU, CUDA returns 'no CUDA-capable device is "
            "detected', while nvidia-smi (which ignores the variable) shows the GPUs.", ENV_DOC,
        messages=(Message("no CUDA-capable device is detected",
                "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html"),)),
))
def cuda_visible_devices(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    value = facts.value("env.cuda_visible_devices")
    count = facts.value("gpu.count")
    if not isinstance(value, str) or not isinstance(count, int) or count < 1:
        return
    uuids = [str(facts.value("gpu.%d.uuid" % i) or "") for i in range(count)]
    mig = [_mode(facts.value("gpu.%d.mig_mode_current" % i)) for i in range(count)]
    kept = visible(value, count, uuids, mig)
    if kept is None or kept:
        return
    valid = ", ".join(str(i) for i in range(count))
    yield Finding(
        code="gpu.cuda_visible_devices_hides_all", severity="error", components=["gpu", "cuda"],
        title="CUDA_VISIBLE_DEVICES=%r hides every GPU: this machine has %d (valid indexes: %s)" % (
            value, count, valid),
        detail="CUDA shows a program only the GPUs CUDA_VISIBLE_DEVICES lists, reading it up to the first entry "
               "that names no GPU; %s. CUDA then reports no device (torch.cuda.is_available() is False) although "
               "nvidia-smi, which ignores the variable, lists the GPUs." % (
                   "the variable is empty" if not value.strip() else "its first entry %r names none" %
                   value.split(",")[0].strip()),
        evidence=_ev(facts, "env.cuda_visible_devices", "gpu.count"),
        source={"rule": "CUDA_VISIBLE_DEVICES: a comma-separated list of GPU indexes or UUIDs; only the listed "
                        "devices are visible, up to the first invalid one", "url": ENV_DOC, "checked": CHECKED},
        fix=Fix(text="Unset it, or name GPUs that exist (0 to %d); look for where it is exported (shell profile, "
                     "job script, notebook kernel)." % (count - 1),
                commands=[AnyOf("unset CUDA_VISIBLE_DEVICES", "export CUDA_VISIBLE_DEVICES=0"),
                          "grep -rn CUDA_VISIBLE_DEVICES ~/.bashrc ~/.profile /etc/environment"]))


VIDEO_SDK_DOC = "https://docs.nvidia.com/video-technologies/video-codec-sdk/index.html"


def _in_stubs(path: str) -> bool:
    """A file in a directory of link-time stubs: the toolkit's ``lib64/stubs``, the Video Codec SDK's
    ``Lib/linux/stubs/x86_64``."""
    return "stubs" in posixpath.dirname(path).split("/")


@check("environment.libcuda-stub", requires=("libraries.libcuda", "cuda.ld_library_path"),
       reads=("libraries.video_libs",),
       layers=("driver",), codes=(
    CodeDoc("driver.libcuda_stub_on_loader_path", "error",
            "The CUDA toolkit's stub libcuda.so (lib64/stubs, meant for linking only) is what the loader finds "
            "first for libcuda.", "libraries.libcuda, cuda.ld_library_path",
            "Programs that load it get CUDA_ERROR_STUB_LIBRARY ('CUDA driver is a stub library') instead of the "
            "driver: no GPU.", STUB_DOC,
        messages=(Message("CUDA driver is a stub library",
                "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html"),)),
    CodeDoc("driver.video_stub_on_loader_path", "warning",
            "The Video Codec SDK's stub libnvcuvid / libnvidia-encode (Lib/linux/stubs, meant for linking only) is "
            "what the loader finds first for the driver's libnvcuvid.so.1 / libnvidia-encode.so.1.",
            "libraries.video_libs, cuda.ld_library_path",
            "Programs that decode or encode on the GPU (FFmpeg's cuvid/nvenc, VideoProcessingFramework, DALI, "
            "GStreamer's nvcodec) load the stub instead of the driver's library and cannot create a decoder or "
            "encoder.", VIDEO_SDK_DOC),
))
def libcuda_stub(ctx: CheckContext) -> Iterable[Finding]:
    yield from _video_stubs(ctx.facts)
    yield from _libcuda_stub(ctx.facts)


def _video_stubs(facts: Facts) -> Iterable[Finding]:
    libs = facts.mapping("libraries.video_libs")
    stubs = [(name, res) for name, res in sorted(libs.items()) if isinstance(res, dict) and res.get("path") and
             (_in_stubs(str(res["path"])) or _in_stubs(str(res.get("resolved") or "")))]
    if not stubs:
        return
    dirs = list(dict.fromkeys(posixpath.dirname(str(res["path"])) for _, res in stubs))
    vias = {str(res.get("via") or "the loader's search") for _, res in stubs}
    via = "LD_LIBRARY_PATH" if vias == {"LD_LIBRARY_PATH"} else ", ".join(sorted(vias))
    others = [str(o["path"]) for _, res in stubs for o in res.get("others") or []
              if isinstance(o, dict) and o.get("path")]
    yield Finding(
        code="driver.video_stub_on_loader_path", severity="warning", components=["driver"],
        title="The loader finds the Video Codec SDK's stub %s (%s, via %s) before the driver's" % (
            " and ".join(name for name, _ in stubs), ", ".join(dirs), via),
        detail="%s %s link-time stub%s from the Video Codec SDK, not the driver's librar%s: a program that loads "
               "%s (FFmpeg's NVDEC/NVENC, VideoProcessingFramework, DALI, GStreamer's nvcodec) cannot create a "
               "decoder or encoder.%s" % (
                   ", ".join(str(res["path"]) for _, res in stubs), "are" if len(stubs) > 1 else "is a",
                   "s" if len(stubs) > 1 else "", "ies" if len(stubs) > 1 else "y",
                   "them" if len(stubs) > 1 else "it",
                   " The driver's cop%s hidden: %s." % ("ies" if len(others) > 1 else "y",
                                                        ", ".join(others)) if others else ""),
        evidence=_ev(facts, "libraries.video_libs", "cuda.ld_library_path"),
        source={"rule": "The Video Codec SDK's Lib/linux/stubs libraries are for linking only; at run time "
                        "programs must load the driver's libnvcuvid.so.1 and libnvidia-encode.so.1",
                "url": VIDEO_SDK_DOC, "checked": "2026-11-30"},
        fix=Fix(text="Take %s off %s (keep the other entries); link against the stubs with -L at build time "
                     "only." % (" and ".join(dirs), "LD_LIBRARY_PATH" if via == "LD_LIBRARY_PATH" else
                                "the loader path"),
                commands=['export LD_LIBRARY_PATH="$(echo "$LD_LIBRARY_PATH" | tr \':\' \'\\n\' | grep -vx %s '
                          '| paste -sd:)"' % d for d in dirs] if via == "LD_LIBRARY_PATH" else
                ["grep -rn %s /etc/ld.so.conf /etc/ld.so.conf.d/" % d for d in dirs] + ["sudo ldconfig"]))


def _libcuda_stub(facts: Facts) -> Iterable[Finding]:
    libcuda = facts.mapping("libraries.libcuda")
    for name in ("libcuda.so.1", "libcuda.so"):
        res = libcuda.get(name)
        if not isinstance(res, dict) or not res.get("path"):
            continue
        where = posixpath.dirname(str(res["path"]))
        if posixpath.basename(where.rstrip("/")) != "stubs":
            continue
        via = res.get("via") or "the loader's search"
        others = [str(o["path"]) for o in res.get("others") or [] if isinstance(o, dict) and o.get("path")]
        yield Finding(
            code="driver.libcuda_stub_on_loader_path", severity="error", components=["driver", "cuda"],
            title="The loader finds the CUDA toolkit's stub %s (%s, via %s) before the driver's libcuda" % (
                name, res["path"], via),
            detail="%s is a stub for linking against, not the driver: a program that loads it fails with "
                   "CUDA_ERROR_STUB_LIBRARY ('CUDA driver is a stub library').%s" % (
                       res["path"], " The driver's copy it hides: %s." % ", ".join(others) if others else ""),
            evidence=_ev(facts, "libraries.libcuda", "cuda.ld_library_path"),
            source={"rule": "CUDA_ERROR_STUB_LIBRARY: the stub libcuda from the toolkit was loaded instead of the "
                            "driver's", "url": STUB_DOC, "checked": CHECKED},
            fix=Fix(text="Take %s off %s (keep the other entries); link against the stubs with -L at build time "
                         "only." % (where, "LD_LIBRARY_PATH" if via == "LD_LIBRARY_PATH" else "the loader path"),
                    commands=['export LD_LIBRARY_PATH="$(echo "$LD_LIBRARY_PATH" | tr \':\' \'\\n\' | grep -vx %s '
                              '| paste -sd:)"' % where] if via == "LD_LIBRARY_PATH" else
                    ["grep -rn %s /etc/ld.so.conf /etc/ld.so.conf.d/" % where, "sudo ldconfig"]))
        return


@check("environment.cuda-device-order", requires=("env.cuda_device_order", "gpu.N.name"),
       reads=("env.*", "gpu.*", "gpu.*.*"), layers=("gpu",), codes=(
    CodeDoc("gpu.cuda_device_order_differs", "warning",
            "CUDA_VISIBLE_DEVICES selects GPUs by index on a machine with different GPU models, without "
            "CUDA_DEVICE_ORDER=PCI_BUS_ID: CUDA's index is not nvidia-smi's.",
            "env.cuda_visible_devices, env.cuda_device_order, gpu.N.name",
            "CUDA numbers GPUs fastest first by default, nvidia-smi by PCI bus: the job runs on another GPU than "
            "the one chosen in nvidia-smi (and may collide with another job).", ENV_DOC),
))
def cuda_device_order(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    value = facts.value("env.cuda_visible_devices")
    count = facts.value("gpu.count")
    if not isinstance(value, str) or not isinstance(count, int) or count < 2:
        return
    if str(facts.value("env.cuda_device_order") or "").upper() == "PCI_BUS_ID":
        return
    indexes = [e.strip() for e in value.split(",") if e.strip()]
    if not indexes or not all(e.isdigit() for e in indexes):
        return  # UUIDs name a GPU whatever the order
    names = [facts.value("gpu.%d.name" % i) for i in range(count)]
    if len({n for n in names if n}) < 2:
        return  # identical GPUs: fastest-first keeps the PCI order
    yield Finding(
        code="gpu.cuda_device_order_differs", severity="warning", components=["gpu", "cuda"],
        title="CUDA_VISIBLE_DEVICES=%s picks GPUs in CUDA's fastest-first order, not nvidia-smi's: set "
              "CUDA_DEVICE_ORDER=PCI_BUS_ID (this machine mixes %s)" % (
                  value, ", ".join(sorted({str(n) for n in names if n}))),
        detail="Without CUDA_DEVICE_ORDER=PCI_BUS_ID, CUDA numbers the GPUs fastest first; nvidia-smi numbers them by "
               "PCI bus. With different GPU models the two orders differ, so index %s is not nvidia-smi's GPU %s." % (
                   indexes[0], indexes[0]),
        evidence=_ev(facts, "env.cuda_visible_devices", "env.cuda_device_order", "gpu.count"),
        source={"rule": "CUDA_DEVICE_ORDER: FASTEST_FIRST (default) or PCI_BUS_ID", "url": ENV_DOC,
                "checked": CHECKED},
        fix=Fix(text="Number GPUs as nvidia-smi does, or select them by UUID.",
                commands=[AnyOf("export CUDA_DEVICE_ORDER=PCI_BUS_ID",
                                "nvidia-smi -L   # UUIDs for CUDA_VISIBLE_DEVICES")]))


ARCH_LIST_DOC = "https://pytorch.org/docs/stable/cpp_extension.html"


@check("environment.torch-cuda-arch-list", requires=("env.torch_cuda_arch_list",),
       reads=("env.*", "gpu.*", "gpu.*.*", "cuda.*"), layers=("cuda",), codes=(
    CodeDoc("cuda.arch_list_excludes_gpu", "warning",
            "TORCH_CUDA_ARCH_LIST is set and names no architecture that runs on a GPU of this machine.",
            "env.torch_cuda_arch_list, gpu.N.compute_capability",
            "PyTorch CUDA extensions (and PyTorch) built here are compiled only for the listed architectures: on "
            "this GPU they fail with 'no kernel image is available for execution on the device'.", ARCH_LIST_DOC,
        messages=(Message("no kernel image is available for execution on the device",
                "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html"),)),
    CodeDoc("cuda.arch_list_unsupported", "warning",
            "TORCH_CUDA_ARCH_LIST names an architecture the CUDA toolkit that builds extensions cannot compile "
            "for (newer than its nvcc targets, or one it no longer targets).",
            "env.torch_cuda_arch_list, cuda.extension_home / cuda.nvcc / cuda.home / cuda.default_symlink",
            "Every PyTorch CUDA extension build here fails: torch.utils.cpp_extension passes -gencode for each "
            "listed architecture and nvcc stops ('nvcc fatal : Unsupported gpu architecture'); a PyTorch release "
            "older than the architecture stops earlier ('Unknown CUDA arch (9.0+PTX) or GPU not supported').",
            ARCH_LIST_DOC,
        messages=(Message("nvcc fatal : Unsupported gpu architecture '*'",
                          "https://docs.nvidia.com/cuda/cuda-compiler-driver-nvcc/index.html#gpu-architecture-arch"),
                  Message("Unknown CUDA arch (*) or GPU not supported",
                          "https://github.com/pytorch/pytorch/blob/main/torch/utils/cpp_extension.py"))),
))
def torch_cuda_arch_list(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    yield from _arch_list_vs_toolkit(facts)
    value = facts.value("env.torch_cuda_arch_list")
    count = facts.value("gpu.count")
    if not isinstance(value, str) or not isinstance(count, int) or count < 1:
        return
    missed: Dict[str, str] = {}  # compute capability -> GPU name
    for i in range(count):
        cc = facts.value("gpu.%d.compute_capability" % i)
        if cc is None:
            continue
        cc = str(cc)
        if torch_arch_list_runs_on(value, cc) is False:
            missed.setdefault(cc, str(facts.value("gpu.%d.name" % i) or "GPU %d" % i))
    if not missed:
        return  # covered, or a list envdoctor cannot read (a variable, "All"): nothing to say
    ccs = sorted(missed, key=versions.sort_key)
    gpus = ", ".join("%s (%s)" % (missed[c], c) for c in ccs)
    keys = ["env.torch_cuda_arch_list"] + ["gpu.%d.compute_capability" % i for i in range(count)]
    yield Finding(
        code="cuda.arch_list_excludes_gpu", severity="warning", components=["cuda", "gpu", "torch"],
        title="TORCH_CUDA_ARCH_LIST=%s has no code for %s: CUDA extensions built here will not run on %s" % (
            value, " or ".join("compute capability %s" % c for c in ccs), "it" if len(ccs) == 1 else "them"),
        detail="torch.utils.cpp_extension compiles CUDA extensions (flash-attn, apex, mmcv, DeepSpeed ops, a "
               "project's own kernels) for exactly the architectures TORCH_CUDA_ARCH_LIST names; SASS of X.Y runs "
               "only on X.Y to X.9 and PTX (+PTX) on later GPUs. None of them runs on %s, so the extension "
               "loads but every kernel fails with 'no kernel image is available for execution on the device'. "
               "(A list meant for other machines, e.g. a wheel built for a cluster, is fine: then ignore this.)"
               % gpus,
        evidence=_ev(facts, *keys),
        source={"rule": "TORCH_CUDA_ARCH_LIST decides the -gencode flags torch.utils.cpp_extension passes to nvcc; "
                        "a cubin runs on its own major at an equal or higher minor, PTX at or above its capability",
                "url": ARCH_LIST_DOC, "checked": "2026-11-27"},
        fix=Fix(text="Add this machine's GPU architecture to the list (or unset it: the extension is then built "
                     "for the GPUs present), then rebuild the extension from scratch (a cached wheel or build "
                     "directory keeps the old architectures).",
                commands=['export TORCH_CUDA_ARCH_LIST="%s"' % ";".join([value.strip().strip("\"'")] + ccs)]))


def _arch_list_vs_toolkit(facts: Facts) -> Iterable[Finding]:
    """TORCH_CUDA_ARCH_LIST entries outside the range of architectures the extension-building toolkit's nvcc
    targets (``cuda.json`` ``cc_min``..``cc_max``, the table cuda.toolkit_cannot_target_gpu reads)."""
    value = facts.value("env.torch_cuda_arch_list")
    entries = torch_arch_list_entries(value) if isinstance(value, str) else None
    active = extension_toolkit(facts)
    if not entries or active is None or not _can_compile(facts, active[2]):
        return
    row = hw.cuda_release(active[0])
    if row is None:
        return
    lo, hi = Version(row["cc_min"]), Version(row["cc_max"])
    bad = [e for e, arch in entries if not lo <= Version("%d.%d" % arch) <= hi]
    if not bad:
        return
    kept = [e for e, arch in entries if lo <= Version("%d.%d" % arch) <= hi]
    newer = [e for e, arch in entries if Version("%d.%d" % arch) > hi]
    if kept and any(e.upper().endswith("+PTX") for e in newer) and not any(e.upper().endswith("+PTX") for e in kept):
        kept[-1] += "+PTX"  # newer GPUs keep running the extension, through PTX of the newest kept architecture
    first = None
    if newer:
        top = max((arch for e, arch in entries if e in newer))
        fits = hw.cuda_for_cc("%d.%d" % top)
        first = fits[0] if fits else None
    yield Finding(
        code="cuda.arch_list_unsupported", severity="warning", components=["cuda", "torch"],
        title="TORCH_CUDA_ARCH_LIST=%s names %s, which CUDA %s (%s) cannot compile for: every CUDA extension "
              "build here fails" % (value, ", ".join(bad), active[0], active[1]),
        detail="torch.utils.cpp_extension turns each entry of TORCH_CUDA_ARCH_LIST into nvcc -gencode flags; "
               "CUDA %s's nvcc targets compute capability %s to %s, so it stops with 'nvcc fatal : Unsupported "
               "gpu architecture' (and a PyTorch release older than the architecture stops before it, with "
               "'Unknown CUDA arch ... or GPU not supported'). Building flash-attn, apex, DeepSpeed ops, mmcv or "
               "a project's own kernels fails until the list fits the toolkit.%s" % (
                   row["version"], row["cc_min"], row["cc_max"],
                   " The first CUDA that targets %s is %s." % (newer[-1], first) if first else ""),
        evidence=_ev(facts, "env.torch_cuda_arch_list") + [active[2].to_dict()],
        source={"rule": "CUDA %s nvcc targets compute capability %s..%s; TORCH_CUDA_ARCH_LIST decides the "
                        "-gencode flags torch.utils.cpp_extension passes to it" % (
                            row["version"], row["cc_min"], row["cc_max"]),
                "url": (row.get("source") or {}).get("url") or ARCH_LIST_DOC,
                "checked": (row.get("source") or {}).get("checked") or "2026-11-30"},
        fix=Fix(text="Drop the architectures this toolkit cannot build from the list%s, then rebuild the "
                     "extension." % (" (or build with CUDA %s or newer)" % first if first else ""),
                commands=['export TORCH_CUDA_ARCH_LIST="%s"' % ";".join(kept)] if kept else
                ["unset TORCH_CUDA_ARCH_LIST"]))


@check("environment.driver-libs-loadable", requires=("driver.userspace.libraries",),
       reads=("libraries.driver_libs_unloadable",), layers=("driver",), codes=(
    CodeDoc("driver.library_unloadable", "error",
            "The libnvidia-ml.so.1 or libcuda.so.1 the loader finds first is not a loadable library (truncated, "
            "not an ELF file, damaged).", "libraries.driver_libs_unloadable",
            "NVML and CUDA fail to start with the loader's error; it is not a machine without a driver.", STUB_DOC),
))
def driver_libs_loadable(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    for b in facts.items("libraries.driver_libs_unloadable"):
        if not isinstance(b, dict):
            continue
        yield Finding(
            code="driver.library_unloadable", severity="error", components=["driver"],
            title="The loader's first %s is %s, which is not a loadable library (%s)" % (
                b.get("soname"), b.get("path"), b.get("message") or b.get("error")),
            detail="dlopen(\"%s\") takes %s (via %s) and fails there (%s): NVML and CUDA report the library "
                   "missing or the driver absent, although a driver may be installed; the copy is corrupt, "
                   "truncated, or not a library." % (b.get("soname"), b.get("resolved") or b.get("path"),
                                                   b.get("via"), b.get("message") or b.get("error")),
            evidence=_ev(facts, "libraries.driver_libs_unloadable", "driver.userspace.libraries"),
            source={"rule": "dlopen loads the first file of that name in the search order and fails on a file "
                            "that is not a valid ELF shared object", "url": "https://man7.org/linux/man-pages/man8/ld.so.8.html",
                    "checked": CHECKED},
            fix=Fix(text="Remove or replace that file (reinstall the driver's user-space package), or take its "
                         "directory off the loader path, then refresh the cache.",
                    commands=["ls -l %s" % b.get("path"), "file -L %s" % b.get("path"), "sudo ldconfig"]))


NCCL_ENV_DOC = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"


def _unset_step(name: str, where: str) -> str:
    if where == "environment":
        return "unset %s" % name
    return "sudo sed -i '/^%s=/d' %s" % (name, where) if where.startswith("/etc/") else \
        "sed -i '/^%s=/d' %s" % (name, where)


@check("environment.nccl-topology-override", requires=("env.nccl",), reads=("gpu.pci_devices", "gpu.count"),
       layers=("libraries",), codes=(
    CodeDoc("nccl.topology_file_override", "warning",
            "An NCCL variable replaces what NCCL would detect or search on this machine: NCCL_GRAPH_FILE (its "
            "channels taken from an XML file), or a topology XML (NCCL_TOPO_FILE, or NCCL's default "
            "/var/run/nvidia-topologyd/virtualTopology.xml) that describes GPUs this machine does not have; set in "
            "the environment, $NCCL_CONF_FILE, ~/.nccl.conf or /etc/nccl.conf.",
            "env.nccl (the variables of matrix/data/nccl_env.json as NCCL reads them, the XML files they name), "
            "gpu.pci_devices",
            "A file written for another machine, GPU count or NCCL release makes NCCL fail at start-up "
            "('unhandled system error', 'invalid usage') or pick wrong, slow channels; a cloud image's "
            "configuration file can carry it to a VM it does not describe.",
            "nccl_env.json (src/graph/topo.cc ncclTopoGetSystem, src/graph/search.cc ncclTopoCompute); "
            + NCCL_ENV_DOC),
))
def nccl_topology_override(ctx: CheckContext) -> Iterable[Finding]:
    from ..matrix import nccl_env

    facts = ctx.facts
    info = facts.mapping("env.nccl")
    raw = info.get("variables")
    variables: Dict[str, Any] = raw if isinstance(raw, dict) else {}
    files = [x for x in info.get("xml_files") or [] if isinstance(x, dict)]
    machine = sorted({str(d.get("bus_id", "")).lower() for d in facts.items("gpu.pci_devices")
                      if isinstance(d, dict) and d.get("bus_id")})
    for name in ("NCCL_GRAPH_FILE", "NCCL_TOPO_FILE", None):
        row = nccl_env.row(name or "NCCL_TOPO_FILE") or {}
        setting = variables.get(name) if name else None
        xml = next((x for x in files if x.get("variable") == name), None)
        if name and not isinstance(setting, dict):
            continue
        if name is None and xml is None:
            continue
        where = str(setting.get("from")) if isinstance(setting, dict) else ""
        path = str(setting.get("value")) if isinstance(setting, dict) else str((xml or {}).get("path"))
        src = {"rule": "NCCL %s: %s" % (name or "default topology file", row.get("effect", "")),
               "url": (row.get("source") or {}).get("url", NCCL_ENV_DOC), "checked": "2026-11-29"}
        if name == "NCCL_GRAPH_FILE":
            yield Finding(
                code="nccl.topology_file_override", severity="warning", components=["nccl"],
                title="NCCL_GRAPH_FILE=%s (set in %s) replaces NCCL's own channel search" % (path, where),
                detail="NCCL takes its rings and trees from that XML file instead of searching this machine's "
                       "topology; a graph written for another machine, GPU count or NCCL release makes "
                       "communicators fail at start-up ('unhandled system error') or run on wrong channels. It is "
                       "a tuning and debugging setting%s." % (
                           "" if (xml or {}).get("readable") else ", and the file is not readable here"),
                evidence=_ev(facts, "env.nccl"), source=src,
                fix=Fix(text="Remove the setting (NCCL then searches the topology itself); keep it only if the "
                             "file was written for this very machine and NCCL release.",
                        commands=[_unset_step(name, where)]))
            continue
        described = [b for b in (xml or {}).get("gpu_bus_ids") or [] if isinstance(b, str)]
        if not described or not machine:
            continue  # nothing to compare: a file without GPUs, or the machine's GPUs not seen
        foreign = [b for b in described if b not in machine]
        if not foreign:
            continue
        label = "NCCL_TOPO_FILE=%s (set in %s)" % (path, where) if name else "NCCL's default topology file %s" % path
        yield Finding(
            code="nccl.topology_file_override", severity="warning", components=["nccl"],
            title="%s describes GPUs this machine does not have (%s)" % (label, ", ".join(foreign[:4])),
            detail="NCCL loads that XML before detecting the machine and takes the GPUs, PCI switches and links it "
                   "describes as this machine's; it lists GPUs at %s while this machine's are at %s, so it was "
                   "written for another machine or VM size, and NCCL fails at start-up or builds wrong "
                   "channels." % (", ".join(described[:8]), ", ".join(machine[:8])),
            evidence=_ev(facts, "env.nccl", "gpu.pci_devices"), source=src,
            fix=Fix(text="Remove the setting (or the stale file) so NCCL detects the topology itself, or point it "
                         "at the file written for this machine.",
                    commands=[_unset_step(name, where)] if name else ["sudo mv %s %s.stale" % (path, path)]))


NUMBA_DRIVER_DOC = "https://numba.readthedocs.io/en/stable/cuda/overview.html#setting-cuda-installation-path"
#: From this Numba release a NUMBAPRO_ variable is only warned about and ignored (numba/cuda/envvars.py: from 0.46.0
#: get_numbapro_envvar returns the default; 0.45 still returned the value with a deprecation warning).
NUMBAPRO_IGNORED_FROM = Version("0.46")


@check("environment.numba-cuda-driver", requires=("env.numba_cuda_driver",), reads=("libraries.libcuda",),
       layers=("python",), codes=(
    CodeDoc("framework.numba_cuda_driver_not_libcuda", "error",
            "NUMBA_CUDA_DRIVER (or the older NUMBAPRO_CUDA_DRIVER) names a file that is not the NVIDIA driver's "
            "libcuda: the CUDA runtime libcudart, the toolkit's stub libcuda, another library, or nothing at "
            "all.", "env.numba_cuda_driver",
            "Numba loads exactly that file as the CUDA driver: with another library it finds no driver API "
            "('driver missing function: cuInit'), with the stub it gets CUDA_ERROR_STUB_LIBRARY, with a path "
            "that is no file it refuses it; numba.cuda then sees no GPU.", NUMBA_DRIVER_DOC,
        messages=(Message("driver missing function: cuInit", NUMBA_DRIVER_DOC),
                  Message("is not a valid file path", NUMBA_DRIVER_DOC))),
))
def numba_cuda_driver(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    info = facts.mapping("env.numba_cuda_driver")
    name, value = str(info.get("variable") or ""), str(info.get("value") or "")
    if not name or not value or info.get("is_file") is None:
        return  # unset, "0" (Numba told to use no GPU), or a relative path (resolved from a directory unknown here)
    numba = versions.parse(str(info.get("numba") or ""))
    if name.startswith("NUMBAPRO_") and numba is not None and numba >= NUMBAPRO_IGNORED_FROM:
        return  # ignored by this Numba: only a warning at import
    file_name = str(info.get("file_name") or "")
    soname = str(info.get("soname") or "")
    is_libcuda = (soname or file_name).startswith("libcuda.so")
    if info.get("is_file") and is_libcuda and not info.get("stub"):
        return
    if not info.get("is_file"):
        what = "%s does not exist" % value
        effect = "Numba refuses it ('%s ... is not a valid file path')" % name
        if not file_name.startswith("libcuda.so"):
            what += ", and its name is not the driver's libcuda (%s)" % file_name
    elif info.get("stub"):
        what = "%s is the CUDA toolkit's stub libcuda, for linking only" % value
        effect = "CUDA calls fail with CUDA_ERROR_STUB_LIBRARY"
    else:
        what = "%s is %s, not the driver's libcuda" % (
            value, "the CUDA runtime" if (soname or file_name).startswith("libcudart") else soname or file_name)
        effect = "Numba finds no driver API in it ('driver missing function: cuInit')"
    libcuda = facts.mapping("libraries.libcuda").get("libcuda.so.1")
    driver_path = str(libcuda.get("path")) if isinstance(libcuda, dict) and libcuda.get("path") and \
        posixpath.basename(posixpath.dirname(str(libcuda["path"]))) != "stubs" else ""
    commands = ["export %s=%s" % (name, driver_path)] if driver_path else ["unset %s" % name]
    yield Finding(
        code="framework.numba_cuda_driver_not_libcuda", severity="error", components=["python", "driver"],
        title="%s names %s, not the NVIDIA driver's libcuda: numba.cuda cannot use the GPU" % (name, value),
        detail="%s, so %s and numba.cuda sees no GPU. Numba %s loads the file %s names as the CUDA driver "
               "library." % (what[0].upper() + what[1:], effect, info.get("numba") or "", name),
        evidence=_ev(facts, "env.numba_cuda_driver", "libraries.libcuda"),
        source={"rule": "Numba loads the CUDA driver library from the path %s names, else finds libcuda.so "
                        "itself" % name, "url": NUMBA_DRIVER_DOC, "checked": "2026-11-29"},
        fix=Fix(text="Point %s at the driver's libcuda%s, or unset it: Numba finds the driver's library "
                     "itself when the loader can." % (name, " (%s)" % driver_path if driver_path else ""),
                commands=commands))


NUMBA_PATHS_DOC = "https://numba.readthedocs.io/en/stable/cuda/overview.html#cudatoolkit-lookup"
_NUMBA_PARTS = {"nvvm": "libNVVM", "libdevice": "libdevice"}


def _numba_trail(part: Dict[str, Any]) -> str:
    """Where Numba looked, in its order, up to the place it took: 'NUMBAPRO_NVVM (not set), ...'."""
    said = []
    for p in part.get("places") or []:
        if not p.get("defined"):
            said.append("%s (%s)" % (p.get("place"), "not set" if str(p.get("place")).isupper() else "not there"))
            continue
        said.append("%s (%s)" % (p.get("place"), p.get("where")) if p.get("where") != p.get("place") else
                    str(p.get("place")))
        break
    return ", then ".join(said)


@check("environment.numba-cuda-paths", requires=("env.numba_cuda_paths",), reads=(), layers=("python",), codes=(
    CodeDoc("framework.numba_cuda_libs_not_found", "error",
            "Numba's CUDA target will not find libNVVM (or libdevice), although a CUDA toolkit on the machine "
            "holds it.", "env.numba_cuda_paths (Numba's lookup per release: matrix numba_cuda_paths)",
            "Numba compiles CUDA kernels with libNVVM and libdevice, which it finds only in the places its release "
            "searches (NUMBAPRO_ variables before 0.46, the conda environment, CUDA_HOME, /usr/local/cuda), never "
            "through the loader's path: @cuda.jit fails ('libNVVM cannot be found').", NUMBA_PATHS_DOC,
        messages=(Message("libNVVM cannot be found. Do `conda install cudatoolkit`:*",
                          "https://github.com/numba/numba/blob/0.61.0/numba/cuda/cudadrv/nvvm.py"),
                  Message("Missing libdevice file*", "https://github.com/numba/numba/blob/0.61.0/numba/cuda/cudadrv/nvvm.py"))),
))
def numba_cuda_paths(ctx: CheckContext) -> Iterable[Finding]:
    """The libNVVM and libdevice Numba's CUDA target would take, walked as its release walks them: missing while a
    toolkit on the machine has them is an error naming where it looked and the setting that points it there. A
    machine with no libNVVM at all has no CUDA toolkit for Numba to use: nothing is said (Numba may be there for the
    CPU)."""
    facts = ctx.facts
    info = facts.mapping("env.numba_cuda_paths")
    toolkits = [t for t in info.get("elsewhere") or [] if isinstance(t, dict) and t.get("nvvm")]
    parts: Dict[str, Dict[str, Any]] = {k: info[k] for k in _NUMBA_PARTS if isinstance(info.get(k), dict)}
    missing = [k for k, v in parts.items() if not v.get("found")]
    if not missing or not toolkits or len(parts) != len(_NUMBA_PARTS):
        return
    tk = toolkits[0]
    old = any(p.get("place") == "NUMBAPRO_NVVM" for p in parts["nvvm"].get("places") or [])
    if old:
        commands = ["export NUMBAPRO_NVVM=%s" % tk["nvvm"], "export NUMBAPRO_LIBDEVICE=%s" % tk["libdevice"]]
        how = "point NUMBAPRO_NVVM at the library and NUMBAPRO_LIBDEVICE at its libdevice directory"
    else:
        commands = ["export CUDA_HOME=%s" % tk["root"]]
        how = "set CUDA_HOME to the toolkit (Numba then looks in its nvvm/lib64 and nvvm/libdevice)"
    names = " and ".join(_NUMBA_PARTS[k] for k in missing)
    looked = "; ".join("for %s it looks at %s%s" % (
        _NUMBA_PARTS[k], _numba_trail(parts[k]),
        ", which has none" if parts[k].get("where") else ", and takes none of them") for k in missing)
    src: Dict[str, Any] = info["source"] if isinstance(info.get("source"), dict) else {}
    yield Finding(
        code="framework.numba_cuda_libs_not_found", severity="error", components=["python", "cuda"],
        title="Numba %s will not find %s, which %s has: numba.cuda cannot compile kernels" % (
            info.get("numba"), names, tk["root"]),
        detail="Numba %s searches only its own places, never the loader's path: %s. CUDA JIT compilation then "
               "fails ('libNVVM cannot be found'); the toolkit at %s has %s." % (
                   info.get("numba"), looked, tk["root"], tk["nvvm"]),
        evidence=_ev(facts, "env.numba_cuda_paths"),
        source={"rule": "Numba %s's CUDA library lookup" % info.get("numba"),
                "url": str(src.get("url") or NUMBA_PATHS_DOC), "checked": str(src.get("checked") or "2026-11-30")},
        fix=Fix(text="Tell Numba where the toolkit is: %s (in the shell profile that starts Python)." % how,
                commands=commands))


PROFILE_DOC = "https://www.gnu.org/software/bash/manual/html_node/Bash-Startup-Files.html"
SUDOERS_DOC = "https://www.sudo.ws/docs/man/sudoers.man/"


@check("environment.toolkit-login-path", requires=("cuda.login_path_toolkits", "cuda.nvcc"), reads=("cuda.home",),
       layers=("cuda",), codes=(
    CodeDoc("cuda.toolkit_not_on_path", "warning",
            "A CUDA toolkit is installed and a login script (or the user's own shell startup file) puts its bin "
            "directory on PATH, but this session's PATH lacks it (a session started by sudo gets sudoers' "
            "secure_path) and no other nvcc is on PATH.", "cuda.login_path_toolkits, cuda.nvcc",
            "`nvcc` is 'command not found' and builds that look for the toolkit through PATH do not find it until the "
            "next login (or in shells that do not read /etc/profile.d).", PROFILE_DOC,
        messages=(Message("nvcc: command not found", PROFILE_DOC),
                  Message("ERROR (theano.sandbox.cuda): nvcc compiler not found on $PATH*",
                          "https://github.com/Theano/Theano/blob/rel-0.7/theano/sandbox/cuda/__init__.py"))),
))
def toolkit_login_path(ctx: CheckContext) -> Iterable[Finding]:
    """A toolkit whose package puts it on PATH through /etc/profile.d (System76's /usr/lib/cuda, Arch's /opt/cuda):
    a login shell reads those scripts, so a session started before the install, or a shell that does not read them,
    has no nvcc."""
    facts = ctx.facts
    nvcc = facts.get("cuda.nvcc")
    if nvcc is None or not nvcc.known or nvcc.value is not None:
        return  # an nvcc is on PATH (which one is judged elsewhere), or it is not known
    for tk in facts.items("cuda.login_path_toolkits"):
        if not isinstance(tk, dict) or tk.get("on_path") is not False:
            continue
        version = " %s" % tk["version"] if tk.get("version") else ""
        title = "CUDA toolkit%s is installed in %s, but its nvcc is not on this session's PATH" % (
            version, tk.get("root"))
        evidence = _ev(facts, "cuda.login_path_toolkits", "cuda.nvcc", "cuda.home")
        if tk.get("kind") == "user":
            # the user's own startup file: sessions that do not read it (sudo's, cron's, services') lack the entry
            if tk.get("sudo"):
                why = ("this session was started by sudo, which resets PATH to the secure_path of /etc/sudoers "
                       "(env_reset), so the user's PATH, with %s, is not passed on" % tk.get("bin"))
                fix = Fix(text="Run the program as the user, without sudo (CUDA needs no root), or pass the user's "
                               "PATH through sudo.",
                          commands=['sudo env "PATH=$PATH" nvcc --version'])
            else:
                why = ("this session did not read that file (a non-interactive or login shell that skips it, cron, a "
                       "service, another shell)")
                fix = Fix(text="Start the program from a shell that reads %s, or add %s to PATH where this session "
                               "is set up (the service's or job's environment, or the shell's own startup file)." % (
                                   tk.get("script"), tk.get("bin")),
                          commands=['export PATH=%s:$PATH' % tk.get("bin"), "nvcc --version"])
            yield Finding(
                code="cuda.toolkit_not_on_path", severity="warning", components=["cuda"], title=title,
                detail="%s puts %s on PATH in the user's shells, but this session's PATH does not have it: %s. `nvcc` "
                       "is not found ('nvcc: command not found'; programs that compile with it at run time fail), and "
                       "builds that find CUDA through nvcc on PATH do not see this toolkit." % (
                           tk.get("script"), tk.get("bin"), why),
                evidence=evidence,
                source={"rule": "sudo's env_reset sets PATH to secure_path; only the shells that read a startup file "
                                "get its PATH", "url": SUDOERS_DOC, "checked": "2026-11-30"},
                fix=fix)
            continue
        yield Finding(
            code="cuda.toolkit_not_on_path", severity="warning", components=["cuda"], title=title,
            detail="%s puts %s on PATH when a login shell starts (/etc/profile reads /etc/profile.d); this session's "
                   "PATH does not have it, because the session started before the toolkit was installed or its "
                   "shell does not read /etc/profile.d (zsh, some terminals' non-login shells). `nvcc` is not found, "
                   "and builds that find CUDA through nvcc on PATH do not see this toolkit." % (
                       tk.get("script"), tk.get("bin")),
            evidence=evidence,
            source={"rule": "login shells source /etc/profile, which runs /etc/profile.d/*.sh; other shells do not",
                    "url": PROFILE_DOC, "checked": "2026-11-30"},
            fix=Fix(text="Log out and back in (or reboot); in a shell that is already open, read the script; for "
                         "shells that never read it, add %s to PATH in the shell's own startup file." % tk.get("bin"),
                    commands=[". %s" % tk.get("script"), "nvcc --version"]))
