"""Driver and toolkit layouts outside the usual paths, and the host compiler nvcc really runs.

nvcc reads the nvcc.profile beside it before it looks for a host compiler; NVIDIA's own (nvcc 13.0.88, PyPI
nvidia-cuda-nvcc) says ``PATH += $(CICC_PATH):$(_HERE_):`` ("+=" prepends), Debian's nvidia-cuda-toolkit
12.4.131 says ``PATH += /usr/lib/nvidia-cuda-toolkit/bin:`` and ships a ``gcc`` wrapper script there, and Arch's
cuda package links /opt/cuda/bin/gcc to the newest gcc its nvcc accepts. So the gcc nvcc runs is the one beside
it, not necessarily /usr/bin/gcc. The profile texts below are those files' own lines.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from envdoctor.checks import CheckContext
from envdoctor.checks.compat import compat
from envdoctor.probes.compilers import parse_nvcc_profile

from .conftest import corpus_snapshot, make_host, probe_facts

NVIDIA_PROFILE = """
TOP              = $(_HERE_)/..

CICC_PATH        = $(TOP)/nvvm/bin
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice

LD_LIBRARY_PATH += $(TOP)/lib:
PATH            += $(CICC_PATH):$(_HERE_):

INCLUDES        +=  "-I$(TOP)/$(_TARGET_DIR_)/include" $(_SPACE_)
"""

DEBIAN_PROFILE = """# Syntax:
#   name  = <text>   assignment
#   name += <text>   prepend
NVVMIR_LIBRARY_DIR = /usr/lib/nvidia-cuda-toolkit/libdevice

PATH		+= /usr/lib/nvidia-cuda-toolkit/bin:

LIBRARIES	=+ $(_SPACE_) -L/usr/lib/x86_64-linux-gnu/stubs -L/usr/lib/x86_64-linux-gnu
"""


def test_nvcc_profile_path_lines() -> None:
    assert parse_nvcc_profile(NVIDIA_PROFILE, "/opt/cuda/bin") == {
        "before": ["/opt/cuda/nvvm/bin", "/opt/cuda/bin"], "after": []}
    assert parse_nvcc_profile(DEBIAN_PROFILE, "/usr/lib/nvidia-cuda-toolkit/bin")["before"] == [
        "/usr/lib/nvidia-cuda-toolkit/bin"]
    assert parse_nvcc_profile("garbage = \n PATH =+ /extra/bin\n", "/x")["after"] == ["/extra/bin"]


def _machine(nvcc_dir: str, nvcc_release: str, gcc_beside: Optional[str], profile: Optional[str],
             path: str, environ: Optional[Dict[str, str]] = None) -> Any:
    files = {nvcc_dir + "/nvcc": "", "/usr/bin/gcc": "", "/usr/bin/g++": "", "/usr/bin/gcc-7": ""}
    commands: List[Dict[str, Any]] = [
        {"argv": [nvcc_dir + "/nvcc", "--version"],
         "stdout": "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release %s, V%s.130\n" % (
             nvcc_release, nvcc_release)},
        {"argv": ["/usr/bin/gcc", "--version"], "stdout": "gcc (GCC) 8.2.1 20181127\n"},
        {"argv": ["/usr/bin/g++", "--version"], "stdout": "g++ (GCC) 8.2.1 20181127\n"}]
    if profile is not None:
        files[nvcc_dir + "/nvcc.profile"] = profile
    if gcc_beside is not None:
        files[nvcc_dir + "/gcc"] = ""
        commands.append({"argv": [nvcc_dir + "/gcc", "--version"], "stdout": gcc_beside})
    return make_host(files=files, commands=commands, environ=dict({"PATH": path}, **(environ or {})),
                     uname={"sysname": "Linux", "release": "4.20.3-arch1-1-ARCH", "machine": "x86_64"})


def _gcc_findings(host: Any) -> List[Any]:
    facts = probe_facts(host)
    return [f for f in compat(CheckContext(facts, [])) if f.code == "compiler.gcc_too_new_for_cuda"]


def test_arch_nvcc_runs_its_own_gcc_not_usr_bin_gcc() -> None:
    # Arch, cuda 10.0 in /opt/cuda (PATH from /etc/profile.d/cuda.sh), /usr/bin/gcc 8.2.1; the package links
    # /opt/cuda/bin/gcc to gcc-7, the newest CUDA 10.0 accepts (cuda.json gcc_max 7)
    host = _machine("/opt/cuda/bin", "10.0", "gcc-7 (GCC) 7.4.1 20181207\n", NVIDIA_PROFILE,
                    "/usr/local/bin:/usr/bin:/opt/cuda/bin")
    facts = probe_facts(host)
    own = facts.value("compiler.nvcc_gcc")
    assert own["path"] == "/opt/cuda/bin/gcc" and own["version"] == "7.4.1"
    assert _gcc_findings(host) == []  # the known false warning: judging /usr/bin/gcc 8.2.1
    # without the link, nvcc runs /usr/bin/gcc 8.2.1: too new for CUDA 10.0
    f = _gcc_findings(_machine("/opt/cuda/bin", "10.0", None, NVIDIA_PROFILE, "/usr/local/bin:/usr/bin:/opt/cuda/bin"))
    assert len(f) == 1 and "8.2.1" in f[0].title and "GCC <= 7" in f[0].title


def test_debian_wrapper_beside_nvcc_is_judged_and_named() -> None:
    # Debian's nvidia-cuda-toolkit: /usr/bin/nvcc -> the wrapper picks the newest supported gcc-N; here one too new
    # for the toolkit would be named as the one nvcc runs
    host = _machine("/usr/lib/nvidia-cuda-toolkit/bin", "10.0", "gcc-9 (Debian 9.3.0-22) 9.3.0\n", DEBIAN_PROFILE,
                    "/usr/bin:/usr/lib/nvidia-cuda-toolkit/bin")
    f = _gcc_findings(host)
    assert len(f) == 1 and "9.3.0" in f[0].title and "/usr/lib/nvidia-cuda-toolkit/bin/gcc" in f[0].title


def test_nvcc_ccbin_names_the_compiler_judged() -> None:
    # NVCC_CCBIN (nvcc reads it like -ccbin) at gcc-7: /usr/bin/gcc 8.2.1 is not what nvcc runs
    host = _machine("/opt/cuda/bin", "10.0", None, NVIDIA_PROFILE, "/usr/bin:/opt/cuda/bin",
                    environ={"NVCC_CCBIN": "/usr/bin/gcc-7"})
    host.doc["commands"].append({"argv": ["/usr/bin/gcc-7", "--version"], "stdout": "gcc-7 (GCC) 7.4.1 20181207\n"})
    assert _gcc_findings(host) == []
    # NVCC_PREPEND_FLAGS with -ccbin at an 8.x: judged, named
    host = _machine("/opt/cuda/bin", "10.0", None, NVIDIA_PROFILE, "/usr/bin:/opt/cuda/bin",
                    environ={"NVCC_PREPEND_FLAGS": "-ccbin /usr/bin/gcc"})
    f = _gcc_findings(host)
    assert len(f) == 1 and "8.2.1" in f[0].title


# -- the driver's user-space outside the loader's directories ---------------------------------------------

def _driver_findings(files: Dict[str, str]) -> Dict[str, Any]:
    from envdoctor.checks import run_checks

    from .test_checks_driver_health import OS_UBUNTU
    from .test_probe_driver import PROC_550, machine, nvml_error

    f = {"/etc/os-release": OS_UBUNTU, "/proc/driver/nvidia/version": PROC_550}
    f.update(files)
    host = machine(files=f, nvml=nvml_error("NVML_ERROR_LIBRARY_NOT_FOUND", 12))
    return {x.code: x for x in run_checks(CheckContext(probe_facts(host), []))}


def test_gpu_operator_host_is_not_missing_its_user_space() -> None:
    # the GPU Operator's driver container mounts its root at /run/nvidia/driver (its libraries in the Ubuntu layout);
    # the host's loader has none, so NVML cannot start here: the driver is installed, in that root
    found = _driver_findings({"/run/nvidia/driver/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15": "",
                              "/run/nvidia/driver/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15": ""})
    assert "driver.userspace_missing" not in found
    f = found["driver.gpu_operator_driver_root"]
    assert f.severity == "info" and "550.54.15" in f.title
    assert "sudo chroot /run/nvidia/driver nvidia-smi" in f.fix.commands


def test_nixos_driver_libraries_are_where_wheels_do_not_look() -> None:
    found = _driver_findings({"/run/opengl-driver/lib/libnvidia-ml.so.550.54.15": "",
                              "/run/opengl-driver/lib/libcuda.so.550.54.15": ""})
    assert "driver.userspace_missing" not in found
    f = found["driver.userspace_outside_loader_path"]
    assert f.severity == "warning" and "LD_LIBRARY_PATH=/run/opengl-driver/lib" in f.fix.commands[0]
    # nothing anywhere: the user-space is missing
    assert "driver.userspace_missing" in _driver_findings({})


NIX_TF = "b16-nixos-2003-nix-shell-pip-tensorflow-ld-library-path-without-run-opengl-driver"


def _nix_codes(doc: Dict[str, Any]) -> Dict[str, Any]:
    from .conftest import snapshot_findings

    return {f.code: f for f in snapshot_findings(doc)}


def test_nixos_pip_framework_without_the_driver_directory_warns_though_nvml_answered() -> None:
    # NixOS 20.03 in a nix-shell (the NixOS wiki's TensorFlow page): LD_LIBRARY_PATH holds cudatoolkit and cuDNN
    # from the store but not /run/opengl-driver/lib; pip's tf-nightly has no RUNPATH. envdoctor's own NVML
    # answered (it reached the driver some other way), the inspected environment's TensorFlow cannot.
    f = _nix_codes(corpus_snapshot(NIX_TF))["driver.userspace_outside_loader_path"]
    assert f.severity == "warning" and "tf-nightly" in f.title and "/run/opengl-driver/lib" in f.title
    assert "LD_LIBRARY_PATH=/run/opengl-driver/lib" in f.fix.commands[0]


def test_nixos_with_the_driver_directory_on_ld_library_path_is_quiet() -> None:
    # the wiki's fix: the shellHook appends /run/opengl-driver/lib to LD_LIBRARY_PATH
    doc = corpus_snapshot(NIX_TF)
    doc["environ"]["LD_LIBRARY_PATH"] += ":/run/opengl-driver/lib"
    found = _nix_codes(doc)
    assert "driver.userspace_outside_loader_path" not in found and "driver.userspace_missing" not in found


def test_nixos_program_built_by_nix_is_quiet() -> None:
    # a Nix-built framework (python3Packages.tensorflow from the store): nixpkgs' addDriverRunpath appends
    # /run/opengl-driver/lib to its libraries' RUNPATH. A stand-in: the same site-packages moved into the store.
    doc = json.loads(json.dumps(corpus_snapshot(NIX_TF)).replace(
        "/home/user/tfproj/_build/pip_packages", "/nix/store/0000000000000000000000000000000-python3.7-tensorflow"))
    assert "driver.userspace_outside_loader_path" not in _nix_codes(doc)
    # and without a framework that uses CUDA there is nothing to find libcuda for
    doc = corpus_snapshot(NIX_TF)
    doc["environ"].pop("PYTHONPATH")
    doc["python"]["sys_path"] = [p for p in doc["python"]["sys_path"] if "pip_packages" not in p]
    assert "driver.userspace_outside_loader_path" not in _nix_codes(doc)


def test_arch_toolkit_in_opt_cuda_is_found_without_its_profile_path() -> None:
    # a non-login shell on Arch: /etc/profile.d/cuda.sh did not put /opt/cuda/bin on PATH
    host = make_host(files={"/opt/cuda/version.json": '{"cuda": {"name": "CUDA SDK", "version": "12.4.1"}}',
                            "/opt/cuda/bin/nvcc": ""}, environ={"PATH": "/usr/bin"})
    toolkits = probe_facts(host).value("cuda.toolkits")
    assert [(t["path"], t["version"], t["found_by"]) for t in toolkits] == [("/opt/cuda", "12.4.1", "dir:/opt")]


# Debian's nvidia-cuda-toolkit 12.4.131~12.4.1-2 (trixie, dpkg-deb -x): /usr/bin/nvcc is this wrapper script, the
# real nvcc is /usr/lib/nvidia-cuda-toolkit/bin/nvcc, whose nvcc.profile links to /etc/nvcc.profile (DEBIAN_PROFILE's
# lines), and /usr/lib/nvidia-cuda-toolkit/bin/gcc is a selector script (excerpt below: its header, its first
# branches and its last; the full script tries g++-13 down to g++-6, then clang-17 down to clang-6.0 with an error).
# nvidia-cuda-toolkit-gcc 12.4.1-2 adds /usr/bin/cuda-gcc -> gcc-13 and depends on g++-13.
DEBIAN_NVCC_WRAPPER = '#!/bin/sh\n\nexport PATH="/usr/lib/nvidia-cuda-toolkit/bin:$PATH"\n' \
                      'exec /usr/lib/nvidia-cuda-toolkit/bin/nvcc "$@"\n'
DEBIAN_GCC_SELECTOR = """#!/bin/sh

# Check for g++ to avoid using different versions of gcc and g++ on systems
# with both g++-X and gcc-Y but not g++-Y installed.

prog=false
if g++-13 --version >/dev/null 2>&1; then
\tprog=gcc-13
elif g++-13 --version >/dev/null 2>&1; then
\tprog=gcc-13
elif g++-12 --version >/dev/null 2>&1; then
\tprog=gcc-12
elif clang-17 --version >/dev/null 2>&1; then
        echo "ERROR: No supported gcc/g++ host compiler found, but clang-17 is available." >&2
        echo "       Use 'nvcc -ccbin clang-17' to use that instead." >&2
        exit 1
else
\techo "ERROR: No supported gcc/g++ host compiler found." >&2
\techo "       Use 'nvcc -ccbin <compiler>' to specify a host compiler." >&2
\texit 1
fi

exec $prog "$@"
"""
# Debian sid's banners (gcc-14 14.3.0-5 the default, gcc-13 13.4.0-2) and nvcc 12.5's (release 12.5, V12.5.40).
SID_GCC = {"/usr/bin/gcc-14": "gcc (Debian 14.3.0-5) 14.3.0\n",
           "/usr/bin/g++-14": "g++ (Debian 14.3.0-5) 14.3.0\n",
           "/usr/bin/gcc-13": "gcc-13 (Debian 13.4.0-2) 13.4.0\n",
           "/usr/bin/g++-13": "g++-13 (Debian 13.4.0-2) 13.4.0\n"}


def _debian_machine(selector: bool, compilers: Dict[str, str]) -> Any:
    tk = "/usr/lib/nvidia-cuda-toolkit/bin"
    files = {"/usr/bin/nvcc": DEBIAN_NVCC_WRAPPER, tk + "/nvcc": "", "/etc/nvcc.profile": DEBIAN_PROFILE}
    if selector:
        files[tk + "/gcc"] = DEBIAN_GCC_SELECTOR
    files.update({p: "" for p in compilers})
    commands: List[Dict[str, Any]] = [
        {"argv": ["/usr/bin/nvcc", "--version"],
         "stdout": "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 12.5, V12.5.40\n"}]
    commands += [{"argv": [p, "--version"], "stdout": banner} for p, banner in compilers.items()]
    links = {tk + "/nvcc.profile": "/etc/nvcc.profile", "/usr/bin/gcc": "gcc-14", "/usr/bin/g++": "g++-14"}
    commands += [{"argv": ["/usr/bin/gcc", "--version"], "stdout": compilers["/usr/bin/gcc-14"]},
                 {"argv": ["/usr/bin/g++", "--version"], "stdout": compilers["/usr/bin/g++-14"]}]
    host = make_host(files=files, links=links, commands=commands,
                     environ={"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
                     uname={"sysname": "Linux", "release": "6.16.3+deb14-amd64", "machine": "x86_64"})
    return host


def test_debian_nvcc_wrapper_runs_the_gcc_its_selector_picks_not_usr_bin_gcc() -> None:
    # sid: /usr/bin/gcc is GCC 14, too new for CUDA 12.5 (gcc_max 13); Debian's nvcc runs gcc-13 (g++-13 installed)
    host = _debian_machine(True, SID_GCC)
    own = probe_facts(host).value("compiler.nvcc_gcc")
    assert own["path"] == "/usr/bin/gcc-13" and own["version"] == "13.4.0"
    assert "/usr/lib/nvidia-cuda-toolkit/bin/gcc" in own["via"]
    assert _gcc_findings(host) == []


def test_debian_nvcc_wrapper_without_a_selector_runs_usr_bin_gcc() -> None:
    # no gcc script beside the real nvcc: the wrapper's PATH then the caller's finds /usr/bin/gcc (GCC 14): judged
    f = _gcc_findings(_debian_machine(False, SID_GCC))
    assert len(f) == 1 and "14.3.0" in f[0].title and "GCC <= 13" in f[0].title


def test_debian_selector_with_no_supported_gpp_is_unknown_not_judged_as_usr_bin_gcc() -> None:
    # only GCC 14 installed: the selector finds no g++-13/12 and fails; what nvcc runs is not /usr/bin/gcc
    only14 = {k: v for k, v in SID_GCC.items() if k.endswith("-14")}
    host = _debian_machine(True, only14)
    fact = probe_facts(host).get("compiler.nvcc_gcc")
    assert fact is not None and not fact.known and "none is" in fact.reason
    assert _gcc_findings(host) == []
