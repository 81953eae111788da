"""WSL: a distribution under WSL 1 (no GPU at all); on WSL2 a Linux driver installed inside WSL, or the Windows
driver's libraries out of the loader's reach."""

from __future__ import annotations

from typing import List

from ...facts import Facts
from ...findings import Finding, Fix
from .. import CheckContext, check, docs_for
from ..suggest import rpm_tool
from . import DOCS, READS, WSL_LIB, _evidence, _family, _installed, _nvml_status, _source, _wsl_libcuda_missing


def _wsl(facts: Facts) -> List[Finding]:
    if facts.value("os.wsl") != "WSL2":
        return []
    out: List[Finding] = []
    libs = facts.items("driver.userspace.libraries")
    linux_libs = [p for p in libs if isinstance(p, str) and not p.startswith(WSL_LIB + "/")]
    module = facts.value("driver.kernel_module.loaded") is True
    if linux_libs or module:
        remove = _remove_linux_driver(facts) + ["sudo ldconfig", "wsl.exe --shutdown   # then reopen the WSL terminal"]
        uver = facts.value("driver.userspace.version")
        out.append(Finding(
            code="driver.linux_driver_in_wsl", severity="error", components=["driver", "os"],
            title="A Linux NVIDIA driver%s is installed inside WSL2, shadowing the Windows driver %s" % (
                " %s" % uver if uver else "", facts.value("driver.version") or "in " + WSL_LIB),
            detail="On WSL2 the GPU is driven by the Windows NVIDIA driver, whose libcuda and libnvidia-ml WSL "
                   "mounts in %s. A Linux driver installed inside WSL (%s) is found first and breaks CUDA: "
                   "NVIDIA's WSL guide says never to install a Linux NVIDIA driver in WSL 2 (install only the "
                   "CUDA toolkit, e.g. the cuda-toolkit-12-x package of the WSL-Ubuntu repository)."
                   % (WSL_LIB, ", ".join(linux_libs) or "nvidia kernel module"),
            evidence=_evidence(facts, "os.wsl", "driver.userspace.libraries", "driver.kernel_module.loaded",
                               "driver.wsl_libcuda"),
            source=_source("wsl"),
            fix=Fix(text="Remove the Linux driver packages from the WSL distribution (keep the Windows driver), "
                         "refresh the loader cache and restart WSL.", commands=remove),
        ))
    if not facts.value("driver.wsl_libcuda"):
        out.append(_wsl_libcuda_missing(facts, "error"))
    elif _unversioned_libcuda_unreachable(facts) and not linux_libs:
        cudnn8 = sorted({str(c.get("version")) for c in facts.items("libraries.cudnn")
                         if isinstance(c, dict) and str(c.get("version", "")).split(".")[0] == "8"})
        out.append(Finding(
            code="driver.wsl_libcuda_unversioned_unreachable", severity="error" if cudnn8 else "warning",
            components=["driver", "os"],
            title="WSL2: libcuda.so.1 loads, but the unversioned libcuda.so in %s is not where the loader looks "
                  "(not in the ld.so cache, %s not on LD_LIBRARY_PATH)%s" % (
                      WSL_LIB, WSL_LIB, "; cuDNN %s needs it" % ", ".join(cudnn8) if cudnn8 else ""),
            detail="In %s the libcuda files are copies, not symbolic links, so ldconfig caches only the soname "
                   "libcuda.so.1. Libraries that dlopen(\"libcuda.so\") (cuDNN's sub-libraries, some CUDA "
                   "runtime builds, Triton) fail with 'libcuda.so: cannot open shared object file'.%s" % (
                       WSL_LIB, " cuDNN 8 is installed here (%s): its convolution sub-library "
                       "(libcudnn_cnn_infer.so.8) opens libcuda.so, so convolutions fail ('Could not load library "
                       "libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared object file')." % ", ".join(
                           cudnn8) if cudnn8 else ""),
            evidence=_evidence(facts, "os.wsl", "driver.wsl_libcuda", "libraries.libcuda", "cuda.ld_library_path",
                               "libraries.cudnn"),
            source=_source("wsl"),
            fix=Fix(text="Put %s on LD_LIBRARY_PATH (in your shell profile) so the unversioned name is found."
                         % WSL_LIB,
                    commands=["export LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" % WSL_LIB]),
        ))
    elif _nvml_status(facts) == "NVML_ERROR_LIBRARY_NOT_FOUND" and not linux_libs:
        out.append(Finding(
            code="driver.wsl_lib_not_in_loader_path", severity="error", components=["driver", "os"],
            title="WSL2: the Windows driver's libraries are in %s, but the loader does not find libnvidia-ml.so.1 "
                  "there" % WSL_LIB,
            detail="%s holds the Windows driver's libcuda and libnvidia-ml, but the dynamic loader's search path "
                   "does not include it (WSL normally lists it in /etc/ld.so.conf.d/ld.wsl.conf), so CUDA and NVML "
                   "cannot load." % WSL_LIB,
            evidence=_evidence(facts, "os.wsl", "driver.wsl_libcuda", "driver.nvml.status"),
            source=_source("wsl"),
            fix=Fix(text="Put %s back on the loader path and rebuild the loader cache." % WSL_LIB,
                    commands=["echo %s | sudo tee /etc/ld.so.conf.d/ld.wsl.conf" % WSL_LIB, "sudo ldconfig"]),
        ))
    return out


def _remove_linux_driver(facts: Facts) -> List[str]:
    if _family(facts) in ("rhel", "fedora"):
        return ["sudo %s remove -y 'nvidia-driver*' 'kmod-nvidia*'" % rpm_tool(facts)]
    return ["sudo apt-get purge -y 'nvidia-driver-*' 'libnvidia-compute-*' 'nvidia-utils-*'"]


def _wsl1(facts: Facts) -> List[Finding]:
    """WSL 1 translates Linux system calls on the Windows kernel: no Linux kernel, no /dev/dxg, no GPU. A Linux
    driver installed there (an error), or CUDA toolkits and wheels that will find no device (a warning)."""
    driver = facts.value("driver.installed") is True
    toolkits = [str(t.get("version") or t.get("path")) if isinstance(t, dict) else str(t)
                for t in facts.items("cuda.toolkits")]
    wheels = [w for w in facts.items("cuda.pip_wheels") if w]
    if not (driver or toolkits or wheels):
        return []
    uver = facts.value("driver.userspace.version")
    if driver:
        what = "a Linux NVIDIA driver%s is installed in it" % (" %s" % uver if uver else "")
    else:
        what = "CUDA%s is installed in it" % (" toolkit %s" % ", ".join(toolkits) if toolkits else " wheels")
    commands: List[str] = ["wsl.exe -l -v   # VERSION 1: this distribution runs under WSL 1",
                              "wsl.exe --set-version \"$WSL_DISTRO_NAME\" 2"]
    if driver:
        commands = _remove_linux_driver(facts) + ["sudo ldconfig"] + commands
    return [Finding(
        code="driver.wsl1_no_gpu", severity="error" if driver else "warning", components=["driver", "os"],
        title="This Linux runs under WSL 1, which gives Linux no GPU, and %s" % what,
        detail="WSL 1 (kernel release %s) runs Linux programs on the Windows kernel without a Linux kernel or GPU "
               "device: no driver installed inside it can reach the GPU (nvidia-smi cannot communicate with the "
               "driver, CUDA finds no device, DKMS has no kernel headers to build against). CUDA on WSL is for WSL "
               "2 only, where the Windows NVIDIA driver provides the GPU through /dev/dxg and its libraries in "
               "%s; NVIDIA's WSL guide says never to install a Linux NVIDIA driver inside WSL."
               % (facts.value("kernel.release") or "4.4.0-<build>-Microsoft", WSL_LIB),
        evidence=_evidence(facts, "os.wsl", "kernel.release", "driver.installed", "driver.userspace.version",
                           "driver.nvml.status", "cuda.toolkits", "cuda.pip_wheels"),
        source=_source("wsl1"),
        fix=Fix(text="Convert the distribution to WSL 2 (from a Windows terminal, or through wsl.exe here) with the "
                     "NVIDIA driver installed on Windows%s." % (
                         "; remove the Linux driver packages from the distribution" if driver else ""),
                commands=commands),
    )]


def _unversioned_libcuda_unreachable(facts: Facts) -> bool:
    """WSL's /usr/lib/wsl/lib has libcuda.so, libcuda.so.1 loads, and a dlopen of libcuda.so finds nothing."""
    if WSL_LIB + "/libcuda.so" not in facts.strings("driver.wsl_libcuda"):
        return False
    libcuda = facts.mapping("libraries.libcuda")
    one, bare = libcuda.get("libcuda.so.1"), libcuda.get("libcuda.so")
    return isinstance(one, dict) and bool(one.get("path")) and isinstance(bare, dict) and not bare.get("path")


@check("driver-health.wsl", requires=("driver.installed",), reads=READS, layers=("driver",),
       codes=docs_for(DOCS, "driver.wsl1_no_gpu", "driver.linux_driver_in_wsl", "driver.wsl_libcuda_missing",
                      "driver.wsl_lib_not_in_loader_path", "driver.wsl_libcuda_unversioned_unreachable"))
def wsl_driver(ctx: CheckContext) -> List[Finding]:
    if ctx.facts.value("os.wsl") == "WSL1":
        return _wsl1(ctx.facts)
    return _wsl(ctx.facts) if _installed(ctx.facts) else []
