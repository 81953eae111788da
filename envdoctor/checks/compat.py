"""Compatibility between the driver, the CUDA toolkits, the GPU architecture and the framework builds.

Every rule comes from the matrix (``envdoctor/matrix/data``): the driver each
CUDA release needs and its major's minor-version-compatibility floor
(``cuda.json``), the compute capabilities each nvcc targets, its newest host
GCC and its distributions (``cuda.json``), and the architectures each torch
wheel carries (``torch.json``).  A finding cites the row it used
(``source``); a row that was not verified against its vendor table yields a
warning at most.

Two NVIDIA rules are applied as stated in the CUDA C++ Programming Guide,
"Binary Compatibility" / "PTX Compatibility"
(https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#binary-compatibility):
a cubin built for X.y runs on X.z with z >= y, never across majors; PTX runs
on any compute capability at or above its own, JIT-compiled by the driver.
And CUDA minor-version compatibility
(https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html):
a driver at or above a major's floor runs every minor of that major, except
what needs the driver to JIT PTX newer than it knows.

Healthy is quiet: ``nvcc`` older than the "CUDA Version" the driver reports is
normal (that number is the newest CUDA the driver runs, not what is installed),
so it is documented (``driver.cuda_version_is_a_ceiling``, for
``envdoctor explain``) but never reported.
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

from packaging.version import Version

from .. import frameworks as framework_table
from .. import matrix, versions
from ..facts import Fact, Facts
from ..findings import Finding, Fix
from ..matrix import builds
from ..matrix import frameworks as fw
from ..matrix import hardware as hw
from ..osinfo import nvidia_distro
from . import CodeDoc, check, docs_for, group
from .suggest import INSTALL_LINE_READS, install_line, rpm_tool

if TYPE_CHECKING:  # advise imports the checks' neighbours; the suggestions import it when they run
    from ..advise import Candidate, Verdict

PROG_GUIDE = "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#binary-compatibility"
MINOR_COMPAT = "https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html"
CPP_EXTENSION = "https://github.com/pytorch/pytorch/blob/main/torch/utils/cpp_extension.py"
CUDA_ENV = "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html#environment-setup"
#: The date the two NVIDIA pages above and cpp_extension.py were read for these rules.
RULES_CHECKED = "2026-11-22"

#: Framework fact -> (component, display name).
FRAMEWORKS = tuple((name, name) for name in framework_table.COMPONENTS)


DOCS = (
    CodeDoc("driver.too_old_for_framework", "error",
            "The NVIDIA driver is too old for the CUDA runtime an installed framework was built with.",
            "driver.version, driver.cuda_version, framework.* (torch +cuXXX / version.py, TensorFlow build_info, "
            "JAX CUDA plugin, onnxruntime-gpu, CuPy cudaXXx, Paddle, MXNet)",
            "The framework imports but finds no usable GPU (torch.cuda.is_available() is False, 'CUDA driver "
            "version is insufficient for CUDA runtime version'). Within one CUDA major a driver at or above the "
            "major's floor still runs newer minors (minor-version compatibility); across majors it cannot.",
            "cuda.json (min_driver_linux, minor_compat_min_driver): " + MINOR_COMPAT),
    CodeDoc("driver.too_old_for_toolkit", "error",
            "The NVIDIA driver is too old for the active CUDA toolkit (nvcc, /usr/local/cuda) or the conda "
            "environment's cudatoolkit / cuda-version; or nvcc's default build (PTX only for this GPU) is newer "
            "than the driver can JIT.",
            "driver.version, driver.cuda_version, cuda.nvcc, cuda.default_symlink, cuda.home, cuda.toolkits, "
            "cuda.conda", "Programs built with that toolkit fail at their first CUDA call with "
            "cudaErrorInsufficientDriver.", "cuda.json (min_driver_linux, minor_compat_min_driver)"),
    CodeDoc("driver.minor_version_compat", "info",
            "The driver is older than the CUDA minor in use but above its major's floor: it runs under CUDA "
            "minor-version compatibility.",
            "driver.cuda_version, driver.version, the framework's or toolkit's CUDA version",
            "It works, with one limit: code that needs the driver to JIT-compile PTX newer than the driver knows "
            "fails (CUDA_ERROR_UNSUPPORTED_PTX_VERSION, 'the provided PTX was compiled with an unsupported "
            "toolchain'). A warning for a framework that reaches the GPU only through PTX; info otherwise (a "
            "toolkit's code fails only when built for PTX alone).", MINOR_COMPAT),
    CodeDoc("driver.missing_for_framework", "error",
            "A CUDA build of a framework is installed and an NVIDIA GPU is on the PCI bus, but no NVIDIA driver "
            "is installed.", "driver.installed, driver.nvidia_pci_gpus, framework.*",
            "The framework falls back to the CPU or fails ('Found no NVIDIA driver on your system').",
            "cuda.json (min_driver_linux)"),
    CodeDoc("gpu.arch_not_in_build", "error",
            "The installed framework build has no kernels for this GPU's compute capability: neither SASS for it "
            "nor PTX it could JIT ('no kernel image is available for execution on the device').",
            "gpu.N.compute_capability, framework.<name>.gpu_code (the SASS and PTX the framework's own "
            "libraries carry, read from their CUDA fat binaries), else framework.torch (matrix arch_list/ptx), "
            "framework.tensorflow (build_info cuda_compute_capabilities), else the CUDA the build was made with",
            "Every kernel launch fails. A cubin for X.y runs on X.z (z >= y) only; PTX runs on any capability at or "
            "above its own.", "torch.json (variants[].arch_list, ptx); " + PROG_GUIDE),
    CodeDoc("gpu.arch_ptx_jit_only", "warning",
            "The framework build reaches this GPU only through PTX JIT compilation (no SASS for its compute "
            "capability).", "gpu.N.compute_capability, framework.torch, framework.tensorflow",
            "The first start compiles every kernel (minutes) and fills the JIT cache (~/.nv/ComputeCache, "
            "CUDA_CACHE_MAXSIZE); performance may be lower, and under minor-version compatibility the JIT fails. "
            "An error when the build's own CUDA targets no GPU of this generation (cuda.json cc_max has a lower "
            "major): its CUDA libraries have no code for it either.",
            "torch.json (variants[].arch_list, ptx); cuda.json (cc_max); " + PROG_GUIDE),
    CodeDoc("gpu.arch_support_unknown", "warning",
            "Whether the framework build has kernels for this GPU could not be established: its libraries' GPU "
            "code was unreadable and no table lists the build. A warning when the CUDA it was built with cannot "
            "emit SASS for the GPU's major (it runs only if the build embedded PTX); info when nothing is known.",
            "gpu.N.compute_capability, framework.<name>.gpu_code, framework.<name> (cuda)",
            "If the build lacks the GPU's architecture, every kernel launch fails with 'no kernel image is "
            "available for execution on the device'.", "cuda.json (cc_min, cc_max); " + PROG_GUIDE),
    CodeDoc("cuda.toolkit_cannot_target_gpu", "error",
            "The active CUDA toolkit's nvcc cannot compile for this GPU at all (support for its architecture was "
            "dropped: CUDA 12 dropped Kepler, CUDA 13 Maxwell, Pascal and Volta).",
            "cuda.nvcc / cuda.default_symlink / cuda.home, gpu.N.compute_capability",
            "nvcc rejects -arch=sm_XX ('Unsupported gpu architecture'); extensions built with it do not run.",
            "cuda.json (cc_min)"),
    CodeDoc("cuda.gpu_newer_than_toolkit", "warning",
            "The GPU is newer than the active CUDA toolkit knows: nvcc cannot emit SASS for its compute "
            "capability.", "cuda.nvcc / cuda.default_symlink / cuda.home, gpu.N.compute_capability",
            "Building extensions for this GPU (TORCH_CUDA_ARCH_LIST, -arch=native) fails; code built for older "
            "architectures runs only through PTX JIT.", "cuda.json (cc_max)"),
    CodeDoc("framework.cpu_only_build", "warning",
            "A CPU-only build of a framework is installed on a machine with an NVIDIA GPU.",
            "framework.* (build), gpu.count, driver.cuda_version",
            "The GPU sits idle: torch.cuda.is_available() is False, TensorFlow lists no GPU device. The fix names "
            "a CUDA build that this driver runs, picked from the matrix.", "torch.json, tensorflow.json, jax.json"),
    CodeDoc("cuda.toolkits_disagree", "warning",
            "/usr/local/cuda, the nvcc on PATH and CUDA_HOME point at different CUDA toolkits.",
            "cuda.default_symlink, cuda.nvcc, cuda.home",
            "Build tools choose differently (CMake and torch.utils.cpp_extension use CUDA_HOME, then nvcc on PATH, "
            "then /usr/local/cuda): an extension can compile against one CUDA and link or run against another.",
            CUDA_ENV),
    CodeDoc("cuda.toolkit_differs_from_framework", "info",
            "The active CUDA toolkit is not the CUDA the installed PyTorch was built with (a warning for another "
            "CUDA major when its nvcc is on PATH or CUDA_HOME names it: building extensions then fails).",
            "cuda.nvcc / cuda.home / cuda.default_symlink, framework.torch",
            "Matters only when building CUDA extensions: torch.utils.cpp_extension refuses a different CUDA "
            "major and warns on a different minor. Running PyTorch itself does not use the toolkit.",
            CPP_EXTENSION),
    CodeDoc("cuda.extension_home_not_a_toolkit", "warning",
            "The CUDA_HOME that building a PyTorch CUDA extension would use holds no CUDA toolkit.",
            "cuda.extension_home, framework.torch, cuda.toolkits",
            "Building flash-attn, apex, DeepSpeed ops or xformers from source fails ('cuda_runtime.h: No such "
            "file or directory', or no nvcc): torch.utils.cpp_extension takes CUDA_HOME/CUDA_PATH, else the "
            "directory above the nvcc on PATH, which for a wrapper like /usr/local/bin/nvcc is /usr/local.",
            CPP_EXTENSION),
    CodeDoc("compiler.gcc_too_new_for_cuda", "error",
            "The host GCC is newer than the active CUDA toolkit's nvcc accepts.",
            "compiler.gcc (else the compiler nvcc runs: compiler.nvcc_host from -ccbin/NVCC_CCBIN/CUDAHOSTCXX, "
            "compiler.nvcc_gcc from its nvcc.profile's PATH), compiler.extension_cc (CC, which "
            "torch.utils.cpp_extension passes to nvcc as -ccbin), compiler.gcc_versions, the active toolkit",
            "nvcc stops with '#error -- unsupported GNU version! gcc versions later than N are not supported!' "
            "(crt/host_config.h), unless -allow-unsupported-compiler is given: the build fails. An error where the "
            "release's limit was verified, a warning otherwise.",
            "cuda.json (gcc_max, from each release's host_config.h); " + CPP_EXTENSION),
    CodeDoc("os.unsupported_by_cuda", "warning",
            "The active CUDA toolkit release does not list this distribution release as supported.",
            "os.id, os.version, the active toolkit",
            "It may work, but NVIDIA did not test it; packages for it may not exist.", "cuda.json (distributions)"),
    CodeDoc("driver.cuda_version_is_a_ceiling", "info",
            "Explanation only, never reported: the 'CUDA Version' nvidia-smi prints is the newest CUDA the driver "
            "supports, not the installed toolkit; nvcc older than it is normal and healthy.",
            "driver.cuda_version, cuda.nvcc",
            "A driver runs every older CUDA; only a toolkit or framework NEWER than that number needs a newer "
            "driver (or minor-version compatibility within its major).", MINOR_COMPAT),
)


# ------------------------------------------------------------------ small helpers


_v = versions.parse


_mm = versions.major_minor


def _mm_str(mm: Tuple[int, Optional[int]]) -> str:
    major, minor = mm
    return "%d.%d" % (major, minor) if minor is not None else "%d.x" % major


def _ev(*facts: Optional[Fact]) -> List[Dict[str, Any]]:
    return [f.to_dict() for f in facts if f is not None]


def _source(rule: str, row: Optional[Dict[str, Any]] = None, url: str = "", checked: str = "") -> Dict[str, Any]:
    if row is not None:
        src = row.get("source", {})
        return {"rule": rule, "url": src.get("url", ""), "checked": src.get("checked", ""),
                "verified": not matrix.unverified(row)}
    return {"rule": rule, "url": url, "checked": checked or RULES_CHECKED}


def _severity(row: Optional[Dict[str, Any]], fields: Sequence[str], wanted: str = "error") -> str:
    """``wanted``, unless a field the verdict rests on is unverified: then a warning at most."""
    if wanted != "error":
        return wanted
    if row is None or any(matrix.unverified(row, f) for f in fields):
        return "warning"
    return "error"


def _branch(driver: Optional[str]) -> Optional[str]:
    v = _v(driver)
    return str(v.release[0]) if v is not None else None


def _major_rows(major: int) -> List[Dict[str, Any]]:
    return [r for r in hw.cuda_releases() if Version(r["version"]).release[0] == major]


def _rule_row(need: Tuple[int, Optional[int]]) -> Optional[Dict[str, Any]]:
    """The cuda row behind "CUDA X.Y needs driver D": the release itself, or (major only) the major's first."""
    if need[1] is not None:
        return hw.cuda_release(_mm_str(need))
    rows = _major_rows(need[0])
    return rows[0] if rows else None


def _floor_row(major: int) -> Optional[Dict[str, Any]]:
    """A row of this major whose minor-compatibility floor was verified (the floor is the same for the major)."""
    rows = _major_rows(major)
    for r in rows:
        if r.get("minor_compat_min_driver") and not matrix.unverified(r, "minor_compat_min_driver"):
            return r
    return rows[0] if rows else None


class Driver:
    """What the driver runs: the newest CUDA it supports, and its version."""

    def __init__(self, facts: Facts) -> None:
        self.version_fact = facts.get("driver.version")
        self.cuda_fact = facts.get("driver.cuda_version")
        self.version: Optional[str] = facts.value("driver.version")
        self.wsl = bool(facts.value("os.wsl"))
        cuda = _mm(facts.value("driver.cuda_version"))
        if cuda is None and self.version and not self.wsl:  # the Linux driver table answers for it
            derived = hw.newest_cuda_for_driver(self.version)
            cuda = _mm(derived)
        self.cuda = cuda if cuda is not None and cuda[1] is not None else None

    @property
    def known(self) -> bool:
        return self.cuda is not None

    def describe(self) -> str:
        who = "Driver %s" % self.version if self.version else "The driver"
        return "%s supports CUDA up to %s" % (who, _mm_str(self.cuda)) if self.cuda else who

    def verdict(self, need: Tuple[int, Optional[int]]) -> str:
        """"ok", "minor_compat" or "too_old" for a CUDA need (major, minor|None)."""
        assert self.cuda is not None
        have = self.cuda
        if need[1] is None:
            return "ok" if have[0] >= need[0] else "too_old"
        if (have[0], have[1]) >= (need[0], need[1]):  # type: ignore[operator]
            return "ok"
        if have[0] == need[0]:
            floor = hw.min_driver_for_cuda(_mm_str(need), minor_compat=True)
            if self.version and floor and not self.wsl and (_v(self.version) or Version("0")) < Version(floor):
                return "too_old"
            return "minor_compat"
        return "too_old"


# ------------------------------------------------------------------ what needs CUDA


class Need:
    """One consumer of a CUDA runtime: a framework build, a toolkit, a conda environment."""

    def __init__(self, component: str, label: str, cuda: Tuple[int, Optional[int]], fact: Fact,
                 kind: str, reinstall: Optional[Fix] = None, min_driver: Optional[str] = None,
                 min_driver_row: Optional[Dict[str, Any]] = None) -> None:
        self.component, self.label, self.cuda, self.fact, self.kind = component, label, cuda, fact, kind
        self.reinstall = reinstall
        self.min_driver, self.min_driver_row = min_driver, min_driver_row


def _framework_cuda(name: str, value: Dict[str, Any]) -> Optional[Tuple[int, Optional[int]]]:
    """The CUDA a framework build needs, from its fact; None for a CPU build or when unknown."""
    if name == "onnxruntime":
        if not value.get("gpu"):
            return None
        cuda = value.get("cuda")
        if not cuda:
            rel = fw.onnxruntime_release(value.get("version"))
            cuda = rel.get("cuda") if rel else None
        return _mm(cuda)
    if value.get("build") != "cuda":
        return None
    if name == "paddle" and not value.get("cuda"):
        return _mm(_paddle_wheel_cuda(value.get("version")))
    if name == "tensorflow" and not value.get("cuda"):
        return _mm(tensorflow_build_cuda(value))
    return _mm(value.get("cuda"))


def tensorflow_build_cuda(value: Dict[str, Any]) -> Optional[str]:
    """The CUDA of a TensorFlow CUDA build whose build_info names none (TensorFlow up to 2.2 on Linux): NVIDIA's
    nvidia-tensorflow (``+nvYY.MM``) from its NGC release's notes, else the release's tested configuration."""
    raw = value.get("packages")
    packages: Dict[str, Any] = raw if isinstance(raw, dict) else {}
    if "nvidia-tensorflow" in packages:
        built = builds.nvidia_tensorflow_build(packages["nvidia-tensorflow"])
        return built[0] if built else None
    row = fw.tensorflow_release(value.get("version"))
    return str(row["cuda"]) if row is not None and row.get("cuda") else None


def _paddle_wheel_cuda(version: Any) -> Optional[str]:
    """The CUDA of a paddlepaddle-gpu wheel whose version file names none (Paddle 2.0 and older wrote no
    cuda_version): the matrix's build for the release (the plain PyPI wheel, or its ".postNNN"), else a 2.x
    ".postNNN" read as Paddle names those wheels (post101 = CUDA 10.1, post112 = 11.2, post120 = 12.0)."""
    var = fw.paddle_variant(version)
    if var is not None:
        return var.get("cuda")
    v = _v(version)
    if v is None or v.post is None or v.release[0] != 2 or v.post < 10:
        return None  # 1.x's ".post97" / ".post107" named CUDA and cuDNN together: not decoded
    digits = str(v.post)
    return "%s.%s" % (digits[:-1], digits[-1])


def framework_needs(facts: Facts) -> List[Need]:
    out: List[Need] = []
    for name, component in FRAMEWORKS:
        fact = facts.get("framework." + name)
        if fact is None or not fact.known or not isinstance(fact.value, dict):
            continue
        cuda = _framework_cuda(name, fact.value)
        if cuda is None:
            continue
        label = "%s %s" % (fact.value.get("package") or name, fact.value.get("version"))
        need = Need(component, label, cuda, fact, "framework")
        if name == "jax":
            var = fw.jax_plugin_for(fact.value.get("jaxlib") or fact.value.get("version"), cuda[0])
            row = fw.jax_release(fact.value.get("jaxlib") or fact.value.get("version"))
            if var and var.get("min_driver") and row:
                need.min_driver, need.min_driver_row = var["min_driver"], row
        out.append(need)
    return out


def active_toolkit(facts: Facts) -> Optional[Tuple[str, str, Fact]]:
    """(version, how it is chosen, fact) of the toolkit builds use: nvcc on PATH, CUDA_HOME, /usr/local/cuda."""
    nvcc = facts.get("cuda.nvcc")
    if nvcc is not None and nvcc.known and isinstance(nvcc.value, dict) and nvcc.value.get("version"):
        return str(nvcc.value["version"]), "nvcc on PATH (%s)" % nvcc.value.get("path"), nvcc
    home = facts.get("cuda.home")
    if home is not None and home.known and isinstance(home.value, dict) and home.value.get("version"):
        return str(home.value["version"]), "%s=%s" % (home.value.get("var"), home.value.get("path")), home
    link = facts.get("cuda.default_symlink")
    if link is not None and link.known and isinstance(link.value, dict) and link.value.get("version"):
        return str(link.value["version"]), "/usr/local/cuda -> %s" % link.value.get("resolved"), link
    return None


def toolkit_needs(facts: Facts) -> List[Need]:
    out: List[Need] = []
    active = active_toolkit(facts)
    if active is not None:
        version, how, fact = active
        mm = _mm(version)
        if mm is not None and mm[1] is not None:
            out.append(Need("cuda", "CUDA toolkit %s (%s)" % (version, how), mm, fact, "toolkit"))
    conda = facts.get("cuda.conda")
    for env in (conda.value if conda is not None and conda.known and isinstance(conda.value, list) else []):
        if not isinstance(env, dict) or env.get("found_by") != "env:CONDA_PREFIX" or not env.get("cuda_version"):
            continue
        mm = _mm(env["cuda_version"])
        if mm is None or mm[1] is None:
            continue
        assert conda is not None  # the loop runs over conda's own value
        pkg = next((p["name"] for p in env.get("packages", []) if p.get("version") == env["cuda_version"]),
                   "cudatoolkit")
        out.append(Need("conda", "conda %s %s (%s)" % (pkg, env["cuda_version"], env.get("prefix")), mm, conda,
                        "conda"))
    return out


# ------------------------------------------------------------------ the GPUs


def gpu_ccs(facts: Facts) -> List[Tuple[str, str, Fact]]:
    """Distinct (compute capability, GPU name, fact) of the GPUs NVML answered for."""
    seen: Dict[str, Tuple[str, str, Fact]] = {}
    for f in facts.with_prefix("gpu."):
        if not f.key.endswith(".compute_capability") or not f.known or _v(f.value) is None:
            continue
        idx = f.key.split(".")[1]
        name = facts.value("gpu.%s.name" % idx) or "GPU %s" % idx
        seen.setdefault(str(f.value), (str(f.value), str(name), f))
    return [seen[k] for k in sorted(seen, key=Version)]


def has_nvidia_gpu(facts: Facts) -> bool:
    count = facts.value("gpu.count")
    if isinstance(count, int) and not isinstance(count, bool) and count > 0:
        return True
    return bool(facts.value("driver.nvidia_pci_gpus")) or bool(facts.value("gpu.pci_devices"))


# ------------------------------------------------------------------ suggestions


def _python(facts: Facts) -> Optional[str]:
    return facts.value("python.version")


def suggest_build(framework: str, facts: Facts, drv: Optional[Driver], ccs: Sequence[str],
                  prefer: Optional[str] = None, sass: bool = False) -> Optional[Tuple[Candidate, Verdict]]:
    """(candidate, verdict) of the build :func:`envdoctor.advise.choose_build` picks (advise's answer, and what
    the install line's recipe installs) for this driver, every GPU and this Python: of the release ``prefer``
    (the installed one) when a build of it fits, else the newest that fits; None when none does."""
    from ..advise import candidates, choose_build
    from ..target import Target

    driver = drv.version if drv is not None and drv.known and isinstance(drv.version, str) else None
    if driver is not None and _v(driver) is None:
        driver = None
    if driver is None and drv is not None and drv.known and drv.cuda is not None:
        driver = hw.min_driver_for_cuda(_mm_str(drv.cuda))  # only its CUDA is known: the least driver that has it
    good = tuple(sorted({cc for cc in ccs if isinstance(cc, str) and _v(cc) is not None}, key=Version))
    python = _python(facts)
    target = Target(driver=driver, cc=good[0] if good else None, ccs=good,
                    python=python if isinstance(python, str) and _v(python) is not None else None,
                    platform="wsl2" if facts.value("os.wsl") == "WSL2" else (
                        "linux-aarch64" if facts.value("os.arch") in ("aarch64", "arm64") else "linux-x86_64"))
    preferred = _release_of(framework, prefer) if isinstance(prefer, str) and prefer else None
    key = "jax" if framework == "jax" else "version"
    release_of = next((c.release for c in candidates(framework) if c.row[key] == preferred[key]), None) \
        if preferred is not None else None
    for release in ([release_of] if release_of else []) + [None]:
        chosen = choose_build(framework, target, release=release, sass=sass)
        if chosen is not None:
            return chosen
    return None


def _release_of(framework: str, version: str) -> Optional[Dict[str, Any]]:
    """The matrix row of an installed version."""
    return {"torch": fw.torch_release, "tensorflow": fw.tensorflow_release, "jax": fw.jax_release}[framework](
        version)


def suggest_torch(facts: Facts, drv: Optional[Driver], ccs: Sequence[str],
                  prefer: Optional[str] = None) -> Optional[Tuple[str, Dict[str, Any]]]:
    """(torch minor, variant) to install: :func:`suggest_build`'s torch build, with compiled code for every
    GPU (these fixes replace a build that lacks it; PTX does not count); the installed minor first."""
    chosen = suggest_build("torch", facts, drv, ccs, prefer=prefer, sass=True)
    return None if chosen is None else (chosen[0].release, chosen[0].build)


def _pip_command(chosen: Tuple[Candidate, Verdict], flags: Sequence[str] = ()) -> str:
    """``pip install ...`` of a chosen build as advise writes it (its requirement, the pins this machine needs,
    where pip finds it), single-quoted."""
    import shlex

    cand, verdict = chosen
    args = shlex.split(cand.command)[2:] + list(verdict.pins)
    return " ".join(["pip", "install"] + list(flags) + [shlex.quote(a) for a in args])


def _torch_fix(text: str, suggestion: Optional[Tuple[str, Dict[str, Any]]], facts: Facts,
               ccs: Sequence[str] = ()) -> Fix:
    if suggestion is None and ccs and not any(
            _sass_for(var.get("arch_list") or [], cc) for cc in ccs for row in matrix.load("torch")
            for var in row.get("variants") or []):
        sms = ", ".join("sm_" + cc.replace(".", "") for cc in ccs)
        return Fix(text=text + " No PyTorch wheel envdoctor knows carries %s: build PyTorch from source with "
                               "TORCH_CUDA_ARCH_LIST=\"%s\" (and a CUDA that still targets it), or keep that GPU out "
                               "of PyTorch's sight and use the others (CUDA_VISIBLE_DEVICES)." % (
                                   sms, ";".join(ccs)))
    if suggestion is None:
        return Fix(text=text + " No published PyTorch CUDA wheel in envdoctor's matrix fits this driver and GPU; "
                   "update the driver first.")
    minor, var = suggestion
    return Fix(text="%s Suggested: torch %s built for CUDA %s (%s), which this driver runs." % (
        text, minor, var["cuda"], var["tag"]),
        commands=["pip install --force-reinstall 'torch==%s.*' %s" % (minor, _torch_pip(minor, var))],
        install=install_line(facts, "pytorch", minor, "pip"))


def _torch_pip(minor: str, var: Dict[str, Any]) -> str:
    """pip's options for this build of torch ``minor``, as PyTorch gives them for that release."""
    return " ".join(fw.torch_pip_options(fw.torch_release(minor) or {}, var))


def _sass_for(archs: Sequence[str], cc: str) -> bool:
    """A cubin for X.y runs on X.z with z >= y, never across majors (CUDA C++ Programming Guide)."""
    want = _v(cc)
    if want is None:
        return False
    for a in archs:
        av = _v(a)
        if av is not None and av.release[0] == want.release[0] and av <= want:
            return True
    return False


def _ptx_for(ptx: Sequence[str], cc: str) -> bool:
    """PTX runs on any compute capability at or above its own (JIT by the driver)."""
    want = _v(cc)
    return want is not None and any((_v(p) or Version("999")) <= want for p in ptx)


# ------------------------------------------------------------------ the check


def _question(name: str, fn: Callable[[Facts], List[Finding]], requires: Sequence[str], *codes: str,
              reads: Sequence[str] = (), layers: Sequence[str] = ()) -> None:
    """Register ``fn`` as its own check (one question: a crash in it hides no other verdict). Every question
    may suggest an install line or a build: it reads what those depend on too."""
    check("compat." + name, codes=docs_for(DOCS, *codes), requires=requires,
          reads=tuple(reads) + INSTALL_LINE_READS, layers=layers)(lambda ctx: fn(ctx.facts))


def _driver_vs_cuda(facts: Facts) -> List[Finding]:
    out: List[Finding] = []
    fneeds = framework_needs(facts)
    installed = facts.get("driver.installed")
    if installed is not None and installed.known and installed.value is False:
        pci = facts.get("driver.nvidia_pci_gpus")
        if fneeds and pci is not None and pci.known and pci.value:
            need = max(fneeds, key=lambda n: (n.cuda[0], n.cuda[1] or 0))
            row = _rule_row(need.cuda)
            exact = row["min_driver_linux"] if row else None
            names = ", ".join(n.label for n in fneeds)
            out.append(Finding(
                code="driver.missing_for_framework", severity="error", components=["driver", need.component],
                title="No NVIDIA driver is installed, but %s needs CUDA %s (driver >= %s) and an NVIDIA GPU is on "
                      "the PCI bus (%s)" % (names, _mm_str(need.cuda), exact or "?", ", ".join(pci.value)),
                detail="The framework build expects the NVIDIA driver's libcuda.so.1; without it the GPU is unused "
                       "('Found no NVIDIA driver on your system'). Install a driver of branch %s or newer." % (
                           _branch(exact) or "a current"),
                evidence=_ev(installed, pci, *[n.fact for n in fneeds]),
                source=_source("CUDA %s needs Linux driver >= %s" % (_mm_str(need.cuda), exact), row),
                fix=Fix(text="Install the NVIDIA driver, then reboot (or load the module).",
                        commands=["sudo ubuntu-drivers install" if facts.value("os.id") == "ubuntu"
                                  else "sudo %s install nvidia-driver" % rpm_tool(facts)
                                  if facts.value("os.family") == "rhel"
                                  else "see https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/"],
                        install=install_line(facts, "driver", _branch(exact), floor=True)),
            ))
        return out
    drv = Driver(facts)
    if not drv.known:
        return out  # NVML and nvidia-smi gave no answer: cannot judge
    ccs = [cc for cc, _, _ in gpu_ccs(facts)]
    for need in fneeds + toolkit_needs(facts):
        verdict = drv.verdict(need.cuda)
        if verdict == "ok":
            # JAX states its own driver floor per CUDA wheel (jax.json min_driver)
            if need.min_driver and drv.version and not drv.wsl and _v(drv.version) is not None \
                    and _v(drv.version) < Version(need.min_driver):  # type: ignore[operator]
                out.append(_too_old(facts, drv, need, need.min_driver, need.min_driver_row, ["variants"], ccs))
            continue
        users = _toolkit_users(facts) if need.kind != "framework" else []
        if verdict == "minor_compat" and (need.kind == "framework" and need.component == "cupy" or "cupy" in users):
            # CuPy compiles its kernels with NVRTC into PTX of its own CUDA minor, which the driver must JIT:
            # minor-version compatibility does not cover it (cudaErrorUnsupportedPtxVersion), so the driver
            # of that exact minor is needed
            row = hw.cuda_release(_mm_str(need.cuda))
            if row is not None:
                out.append(_too_old(facts, drv, need, row["min_driver_linux"], row, ["min_driver_linux"], ccs))
                continue
        if verdict == "minor_compat" and need.kind == "toolkit" and "nvcc" in need.label \
                and not _framework_extensions(facts):
            uncovered = [cc for cc in ccs if not _default_sass_runs(need.cuda[0], cc)]
            row = hw.cuda_release(_mm_str(need.cuda))
            if uncovered and row is not None:
                out.append(_ptx_default(facts, drv, need, row, uncovered))
                if not users:
                    continue  # (a framework compiling with this toolkit at run time is told apart, below)
        if verdict == "minor_compat":
            out.append(_minor_compat(drv, need, ccs, facts, runtime_users=users))
            continue
        row = _floor_row(need.cuda[0])
        floor = hw.min_driver_for_cuda(_mm_str(need.cuda) if need.cuda[1] is not None
                                       else (row["version"] if row else ""), minor_compat=True)
        if floor is None or row is None:
            continue  # the matrix does not know this CUDA: no rule to apply
        out.append(_too_old(facts, drv, need, floor, row, ["min_driver_linux", "minor_compat_min_driver"], ccs))
    return out


def _too_old(facts: Facts, drv: Driver, need: Need, floor: str, row: Optional[Dict[str, Any]],
             fields: Sequence[str], ccs: Sequence[str]) -> Finding:
    exact_row = _rule_row(need.cuda)
    exact = exact_row["min_driver_linux"] if exact_row else floor
    branch = _branch(exact) or _branch(floor)
    code = "driver.too_old_for_framework" if need.kind == "framework" else "driver.too_old_for_toolkit"
    # CUDA minor-version compatibility begins with CUDA 11: before it, each minor needs its own driver
    has_compat = need.cuda[0] >= 11
    if has_compat:
        text = ("Update the NVIDIA driver to branch %s or newer (any driver >= %s runs every CUDA %d.x minor "
                "through minor-version compatibility; >= %s runs CUDA %s fully)." % (branch, floor, need.cuda[0],
                                                                                      exact, _mm_str(need.cuda)))
    else:
        text = "Update the NVIDIA driver to branch %s or newer (>= %s runs CUDA %s)." % (branch, exact,
                                                                                         _mm_str(need.cuda))
    commands = ["sudo ubuntu-drivers install nvidia:%s" % branch] if facts.value("os.id") == "ubuntu" else []
    if drv.cuda is not None and drv.cuda[0] == need.cuda[0]:
        why = ("CUDA %d.x has no minor-version compatibility (it begins with CUDA 11), so each minor needs a driver "
               "that supports it" % need.cuda[0] if not has_compat else
               "the driver is below CUDA %d.x's minor-version compatibility floor (%s)" % (need.cuda[0], floor))
    else:
        why = "a newer major, and minor-version compatibility never crosses majors"
    detail = ("The driver's 'CUDA Version' (%s) is the newest CUDA runtime it can run; %s was built for CUDA %s: "
              "%s. Expect 'CUDA driver version is insufficient for CUDA runtime version'." % (
                  _mm_str(drv.cuda) if drv.cuda else "?", need.label, _mm_str(need.cuda), why))
    if need.kind == "framework" and need.component == "torch":
        alt = suggest_torch(facts, drv, ccs, prefer=need.fact.value.get("version"))
        if alt is not None:
            text += (" Or keep this driver and install torch %s for CUDA %s: `pip install --force-reinstall "
                     "'torch==%s.*' %s`." % (alt[0], alt[1]["cuda"], alt[0], _torch_pip(alt[0], alt[1])))
    return Finding(
        code=code, severity=_severity(row, fields), components=["driver", need.component],
        title="%s, but %s needs CUDA %s (driver >= %s)" % (drv.describe(), need.label, _mm_str(need.cuda), floor),
        detail=detail, evidence=_ev(drv.version_fact, drv.cuda_fact, need.fact),
        source=_source("CUDA %d.x needs Linux driver >= %s (minor-version compatibility floor); CUDA %s's own "
                       "driver is %s" % (need.cuda[0], floor, _mm_str(need.cuda), exact), row),
        fix=Fix(text=text, commands=commands, install=install_line(facts, "driver", branch, floor=True)),
    )


#: The SASS target nvcc builds when no -arch/-gencode is given, per CUDA major (nvcc adds the PTX of the same
#: virtual architecture): read from ``nvcc --dryrun -c`` of NVIDIA's nvcc 11.8.89 and 12.4.131 (Debian's
#: nvidia-cuda-toolkit packages: -arch=sm_52, compute_52) and 13.0.88 (PyPI nvidia-cuda-nvcc: sm_75, compute_75).
NVCC_DEFAULT_SASS = {11: "5.2", 12: "5.2", 13: "7.5"}
NVCC_DOC = "https://docs.nvidia.com/cuda/cuda-compiler-driver-nvcc/index.html#gpu-architecture-arch"


def _framework_extensions(facts: Facts) -> bool:
    """Whether a CUDA build of PyTorch is installed: what nvcc builds next to it is mostly its extensions, which
    torch.utils.cpp_extension compiles with -gencode for the visible GPUs' own SASS (its _get_cuda_arch_flags),
    not nvcc's default target."""
    torch = facts.mapping("framework.torch")
    return bool(torch.get("cuda"))


def _default_sass_runs(major: int, cc: str) -> bool:
    """Whether nvcc's default SASS (of CUDA ``major``) runs on a GPU of ``cc`` (same major, not older); unknown
    majors count as covered (nothing is claimed)."""
    default = NVCC_DEFAULT_SASS.get(major)
    want, have = _v(cc), _v(default) if default else None
    if want is None or have is None:
        return True
    return want.release[0] == have.release[0] and want >= have


def _ptx_default(facts: Facts, drv: Driver, need: Need, row: Dict[str, Any], uncovered: Sequence[str]) -> Finding:
    """nvcc's default build reaches these GPUs only through PTX, newer than this driver can JIT: a certain
    failure (CUDA_ERROR_UNSUPPORTED_PTX_VERSION) for every program built without -arch."""
    exact = row["min_driver_linux"]
    default = NVCC_DEFAULT_SASS[need.cuda[0]]
    sm = default.replace(".", "")
    gpus = ", ".join(sorted(set(uncovered), key=lambda c: _v(c) or Version("0")))
    return Finding(
        code="driver.too_old_for_toolkit", severity="error", components=["driver", need.component],
        title="%s, but %s builds by default PTX this driver cannot JIT for compute capability %s (driver >= %s "
              "needed)" % (drv.describe(), need.label, gpus, exact),
        detail="Without -arch, nvcc %s builds SASS for sm_%s and PTX for compute_%s only; a GPU of compute "
               "capability %s runs such a program only by JIT-compiling that PTX, and PTX of CUDA %s is newer "
               "than this driver (CUDA %s) knows: every such program fails with CUDA_ERROR_UNSUPPORTED_PTX_VERSION "
               "('the provided PTX was compiled with an unsupported toolchain'). Minor-version compatibility "
               "does not cover PTX." % (_mm_str(need.cuda), sm, sm, gpus, _mm_str(need.cuda),
                                        _mm_str(drv.cuda) if drv.cuda else "?"),
        evidence=_ev(drv.version_fact, drv.cuda_fact, need.fact),
        source={"rule": "nvcc's default target is sm_%s + compute_%s (CUDA %d.x); PTX needs a driver of its CUDA "
                        "release to JIT; CUDA %s's driver is %s" % (sm, sm, need.cuda[0], _mm_str(need.cuda), exact),
                "url": NVCC_DOC, "checked": "2026-11-29"},
        fix=Fix(text="Update the NVIDIA driver to %s or newer (CUDA %s's own driver), or build with SASS for the "
                     "GPU (nvcc -arch=native, or -gencode arch=compute_XY,code=sm_XY for its compute "
                     "capability)." % (exact, _mm_str(need.cuda)),
                install=install_line(facts, "driver", _branch(exact), floor=True)),
    )


def _toolkit_users(facts: Facts) -> List[str]:
    """Frameworks that compile their GPU code at run time with the machine's own CUDA toolkit: CuPy built from
    source (against the local toolkit), jaxlib's "local CUDA" wheels (+cudaNN without a minor, using the ptxas
    and libraries of the installed toolkit)."""
    out = []
    cupy = facts.mapping("framework.cupy")
    if cupy.get("build") == "source":
        out.append("cupy")
    jax = facts.mapping("framework.jax")
    cuda = _mm(jax.get("cuda"))
    if jax.get("build") == "cuda" and cuda is not None and cuda[1] is None:
        out.append("jax")
    return out


def _minor_compat(drv: Driver, need: Need, ccs: Sequence[str], facts: Facts,
                  runtime_users: Sequence[str] = ()) -> Finding:
    row = hw.cuda_release(_mm_str(need.cuda))
    floor = hw.min_driver_for_cuda(_mm_str(need.cuda), minor_compat=True)
    exact = row["min_driver_linux"] if row else "?"
    jit = False
    if need.component == "torch":
        var = fw.torch_variant(need.fact.value.get("version")) or fw.torch_variant_for_cuda(
            need.fact.value.get("version"), need.fact.value.get("cuda"))
        if var:
            jit = any(not _sass_for(var.get("arch_list") or [], cc) for cc in ccs)
    # A toolkit is only a possibility of trouble (code built PTX-only, e.g. nvcc's default target, fails to JIT;
    # code built with SASS for the GPU runs): info. A framework that reaches the GPU only through PTX: warning.
    # JAX compiles its kernels at run time (XLA, with the ptxas/nvJitLink of its CUDA): under minor-version
    # compatibility what needs the driver's JIT fails, so it is a warning like a PTX-only build
    runtime = (need.kind == "framework" and need.component in RUNTIME_COMPILED) or bool(runtime_users)
    severity = "warning" if (need.kind == "framework" and jit) or runtime else "info"
    return Finding(
        code="driver.minor_version_compat", severity=severity, components=["driver", need.component],
        title="%s; %s needs CUDA %s (driver >= %s), so it runs through CUDA minor-version compatibility "
              "(floor %s)" % (drv.describe(), need.label, _mm_str(need.cuda), exact, floor),
        detail="Within CUDA %d.x a driver at or above %s runs newer minors, except what needs the driver to "
               "JIT-compile PTX newer than it knows: such code fails with CUDA_ERROR_UNSUPPORTED_PTX_VERSION "
               "('the provided PTX was compiled with an unsupported toolchain').%s" % (
                   need.cuda[0], floor,
                   " Here that matters: %s." % (
                       "%s compiles its kernels at run time with it" % ", ".join(runtime_users) if runtime_users
                       else "it compiles its kernels at run time" if runtime else
                                                 "this build reaches the GPU only through PTX")
                   if severity == "warning"
                   else " Code nvcc builds with SASS for the GPU (-arch=native, or -gencode for its sm_XY) runs "
                   "normally; code built for PTX only (nvcc's default target) does not." if need.kind != "framework"
                   else " This build ships SASS for the GPU, so it runs normally."),
        evidence=_ev(drv.version_fact, drv.cuda_fact, need.fact),
        source=_source("CUDA %d.x minor-version compatibility floor %s; CUDA %s's own driver %s" % (
            need.cuda[0], floor, _mm_str(need.cuda), exact), row),
        fix=Fix(text="Nothing is required. To lift the PTX limit, update the driver to %s or newer." % exact,
                install=install_line(facts, "driver", _branch(exact), floor=True)),
    )


#: Frameworks whose precompiled kernels decide whether the GPU runs at all; JAX (XLA) and CuPy (NVRTC)
#: compile most kernels at run time for the GPU present, so only their precompiled ones are at stake.
ARCH_FRAMEWORKS = ("torch", "tensorflow", "jax", "cupy", "paddle")
RUNTIME_COMPILED = ("jax", "cupy")


def _arch_vs_builds(facts: Facts) -> List[Finding]:
    out: List[Finding] = []
    gpus = gpu_ccs(facts)
    if not gpus:
        return out
    drv = Driver(facts)
    for name in ARCH_FRAMEWORKS:
        fact = facts.get("framework." + name)
        if fact is None or not fact.known or not isinstance(fact.value, dict) or fact.value.get("build") != "cuda":
            continue
        label = "%s %s" % (name, fact.value.get("version"))
        code = facts.get("framework.%s.gpu_code" % name)
        if code is not None and code.known and isinstance(code.value, dict) and code.value.get("sass") is not None:
            out.extend(_binary_arch_findings(facts, drv, name, label, fact, code, gpus))
            continue
        listed = _listed_archs(name, fact)
        if listed is not None:
            archs, ptx, source, row = listed
            out.extend(_arch_findings(facts, drv, name, label, archs, ptx, gpus, fact, source, row))
            continue
        if name not in RUNTIME_COMPILED:
            out.extend(_arch_from_cuda(name, label, fact, code, gpus))
    return out


def _listed_archs(name: str, fact: Fact) -> Optional[Tuple[List[str], List[str], Dict[str, Any],
                                                          Optional[Dict[str, Any]]]]:
    """The architectures a build carries according to the matrix (torch wheels) or its own build_info
    (TensorFlow): (SASS "X.Y" list, PTX list, source, matrix row), or None when neither says."""
    value = fact.value
    if name == "torch":
        version = value.get("version")
        var = fw.torch_variant(version) or fw.torch_variant_for_cuda(version, value.get("cuda"))
        row = fw.torch_release(version)
        if var is None or row is None or not var.get("arch_list"):
            return None
        archs, ptx = list(var.get("arch_list") or []), [var["ptx"]] if var.get("ptx") else []
        return archs, ptx, _source("torch %s %s wheels carry SASS for %s%s" % (
            row["version"], var["tag"], ", ".join(archs), " and PTX %s" % ptx[0] if ptx else ""), row), row
    if name == "tensorflow":
        caps = value.get("compute_capabilities")
        if not (isinstance(caps, list) and caps):
            return None
        sass = [c for c in (_cc_text(c) for c in caps if str(c).startswith("sm_")) if c]
        ptx = [c for c in (_cc_text(c) for c in caps if str(c).startswith("compute_")) if c]
        return sass, ptx, _source("build_info cuda_compute_capabilities %s; SASS runs within a major at >= its "
                                  "minor, PTX at >= its capability" % caps, url=PROG_GUIDE), None
    return None


def _arch_cc(arch: str) -> Tuple[Optional[Version], str]:
    """"sm_90a" -> (Version("9.0"), "a"); "compute_120" -> (Version("12.0"), "")."""
    body = arch.split("_", 1)[-1]
    suffix = body[-1] if body[-1:] in ("a", "f") else ""
    digits = body[:-1] if suffix else body
    if not digits.isdigit() or len(digits) < 2:
        return None, suffix
    return _v("%s.%s" % (digits[:-1], digits[-1])), suffix


def _binary_runs_on(sass: Sequence[str], ptx: Sequence[str], cc: str) -> Tuple[bool, bool]:
    """(SASS for ``cc``, PTX that JITs to ``cc``) among a fat binary's entries.  A cubin for X.y runs on X.z,
    z >= y; an arch-specific one ("a") only on X.y itself; a family one ("f") on X.z, z >= y.  PTX runs on any
    capability at or above its own, arch-specific PTX only on its own (CUDA C++ Programming Guide)."""
    want = _v(cc)
    if want is None:
        return False, False
    has_sass = has_ptx = False
    for a in sass:
        v, suffix = _arch_cc(a)
        if v is not None and v.release[0] == want.release[0] and (v == want if suffix == "a" else v <= want):
            has_sass = True
    for p in ptx:
        v, suffix = _arch_cc(p)
        if v is not None and (v == want if suffix == "a" else v <= want):
            has_ptx = True
    return has_sass, has_ptx


def _arch_fix(facts: Facts, drv: Driver, name: str, cc: str, sass: Sequence[str] = ()) -> Fix:
    sm = "sm_" + cc.replace(".", "")
    text = "Install a %s build compiled for %s." % (name, sm)
    if name == "torch":
        return _torch_fix(text, suggest_torch(facts, drv, [cc]), facts, [cc])
    lows = [v for v in (_arch_cc(a)[0] for a in sass) if v is not None]
    want = _v(cc)
    older = bool(lows and want is not None and want < min(lows))
    if name == "paddle":
        return Fix(text=text + " PaddlePaddle's wheels for each CUDA version carry their own list of architectures "
                               "(the library names it at start-up: \"Paddle installation with arch: ...\"): pick the "
                               "wheel whose list has %s on the official install page (%s), or build from source with "
                               "-DCUDA_ARCH_NAME=Manual -DCUDA_ARCH_BIN=%s." % (
                                   sm, "builds for an older CUDA carry older GPUs" if older else
                                   "newer releases add newer GPUs", cc.replace(".", "")))
    if name == "tensorflow":
        if older:
            return Fix(text=text + " Older TensorFlow releases (and source builds) carry older architectures.")
        return _tensorflow_newer(facts, drv, cc, text + " Newer TensorFlow releases add newer architectures.")
    return Fix(text=text + (" Releases built for an older CUDA carry older architectures." if older
                            else " Newer releases add newer architectures."))


def _tensorflow_newer(facts: Facts, drv: Driver, cc: str, text: str) -> Fix:
    """The TensorFlow release advise picks for this machine (its driver, GPU, platform, Python), offered when it
    is newer than the installed one; never an unpinned upgrade to a release the driver cannot run."""
    installed = facts.mapping("framework.tensorflow")
    have = _v(installed.get("public") or installed.get("version"))
    sug = suggest_build("tensorflow", facts, drv if drv.known else None, [cc])
    if sug is None or (have is not None and len(have.release) >= 2 and
                       Version(sug[0].release) <= Version("%d.%d" % have.release[:2])):
        return Fix(text=text + " No newer TensorFlow release in envdoctor's matrix runs on this driver, GPU and "
                               "Python.")
    return Fix(text=text + " The newest this machine runs is TensorFlow %s." % sug[0].release,
               commands=[_pip_command(sug)], install=install_line(facts, "tensorflow", sug[0].release, "pip"))


def _ptx_across_generations(fact: Fact, cc: str) -> Optional[Dict[str, Any]]:
    """The CUDA table row of the framework's own CUDA when that release knows no GPU of ``cc``'s major
    generation (its newest architecture, cc_max, has a lower major): PTX JIT is then the only path, and the
    framework's CUDA libraries of that release (cuBLAS, cuDNN) carry nothing for the generation either.
    None when the framework's CUDA or the GPU's generation is within reach, or unknown."""
    value = fact.value if isinstance(fact.value, dict) else {}
    row = hw.cuda_release(str(value.get("cuda") or "")) if value.get("cuda") else None
    want, top = _v(cc), _v(row["cc_max"]) if row else None
    if row is None or want is None or top is None or want.release[0] <= top.release[0]:
        return None
    return row


def _jit_severity_detail(fact: Fact, cc: str, sm: str, label: str) -> Tuple[str, str]:
    """Severity and the extra sentence of a PTX-JIT-only finding: a warning, or an error when the build's CUDA
    predates the GPU's whole generation (TensorFlow 2.3's CUDA 10.1 build on Ampere fails at start-up with
    'device kernel image is invalid')."""
    row = _ptx_across_generations(fact, cc)
    if row is None:
        return "warning", ""
    return "error", (" %s is built with CUDA %s, which targets compute capability %s at most: %s's generation "
                     "came later, so the CUDA libraries of that release it runs with (cuBLAS, cuDNN) have no code "
                     "for it either, and such builds fail at GPU initialization ('device kernel image is "
                     "invalid') or at the first library call." % (label, row["version"], row["cc_max"], sm))


def _binary_arch_findings(facts: Facts, drv: Driver, name: str, label: str, fact: Fact, code: Fact,
                          gpus: Sequence[Tuple[str, str, Fact]]) -> List[Finding]:
    """Judge the GPUs against the architectures the framework's own binaries carry."""
    out: List[Finding] = []
    sass, ptx = list(code.value.get("sass") or []), list(code.value.get("ptx") or [])
    libs = [posixpath.basename(str(lib.get("path", ""))) for lib in code.value.get("libraries") or []
            if isinstance(lib, dict)]
    where = ", ".join(libs) or "its libraries"
    built = ", ".join(sass) + (" + PTX " + ", ".join(ptx) if ptx else "") if (sass or ptx) else "no GPU code"
    complete = code.value.get("complete", True) is not False
    source = {"rule": "the CUDA fat binary of %s carries SASS for %s and PTX for %s (read from the file); a cubin "
                      "runs on its own major at an equal or higher minor, PTX at or above its capability" % (
                          where, ", ".join(sass) or "nothing", ", ".join(ptx) or "nothing"),
              "url": PROG_GUIDE, "checked": RULES_CHECKED}
    runtime = name in RUNTIME_COMPILED
    for cc, gpu, cc_fact in gpus:
        has_sass, has_ptx = _binary_runs_on(sass, ptx, cc)
        if has_sass:
            continue
        sm = "sm_" + cc.replace(".", "")
        if has_ptx:
            severity, gap = _jit_severity_detail(fact, cc, sm, label)
            out.append(Finding(
                code="gpu.arch_ptx_jit_only", severity=severity, components=["gpu", name],
                title="%s (%s, compute capability %s) is reached by %s only through PTX JIT (%s carries %s)" % (
                    gpu, sm, cc, label, where, built),
                detail="No SASS for %s in the binary: the driver JIT-compiles the embedded PTX at first use. The "
                       "first start takes minutes and fills the JIT cache (~/.nv/ComputeCache; raise "
                       "CUDA_CACHE_MAXSIZE so it is kept), kernels may be slower, and under CUDA minor-version "
                       "compatibility the JIT fails.%s" % (sm, gap),
                evidence=_ev(cc_fact, code, fact), source=source, fix=_arch_fix(facts, drv, name, cc, sass)))
            continue
        if runtime:
            severity, consequence = "warning", (
                "%s compiles most kernels at run time for the GPU present, but its precompiled ones (sorting, "
                "random numbers, linear-algebra helpers) fail with 'no kernel image is available for execution "
                "on the device'." % ("XLA" if name == "jax" else "CuPy"))
        else:
            severity, consequence = ("error" if complete else "warning"), (
                "Every kernel launch fails with 'no kernel image is available for execution on the device'.")
        out.append(Finding(
            code="gpu.arch_not_in_build", severity=severity, components=["gpu", name],
            title="%s (%s, compute capability %s) is not supported by %s (%s carries %s)" % (
                gpu, sm, cc, label, where, built),
            detail="Neither SASS for %s (a cubin runs only on its own major at an equal or higher minor) nor PTX "
                   "at or below %s is in the binary. %s%s" % (
                       sm, cc, consequence, "" if complete else " (Part of the binary could not be read.)"),
            evidence=_ev(cc_fact, code, fact), source=source, fix=_arch_fix(facts, drv, name, cc, sass)))
    return out


def _torch_cuda_wheels_no_ptx(cuda: str) -> List[str]:
    """The torch releases whose wheels for exactly CUDA ``cuda`` the matrix lists, when none of them embeds PTX
    (empty when none is listed or one does): PyTorch builds every release's wheels for a CUDA the same way."""
    releases, with_ptx = [], False
    for row in matrix.load("torch"):
        for var in row.get("variants") or []:
            if _mm(var.get("cuda")) == _mm(cuda):
                releases.append(row["version"])
                with_ptx = with_ptx or bool(var.get("ptx"))
    return [] if with_ptx else releases


def _arch_fix_for(name: str, cc: str) -> Fix:
    return Fix(text="Install a %s build made with a CUDA that targets sm_%s." % (name, cc.replace(".", "")))


PADDLE_CUDA_CMAKE = "https://github.com/PaddlePaddle/Paddle/blob/develop/cmake/cuda.cmake"


def _arch_from_cuda(name: str, label: str, fact: Fact, code: Optional[Fact],
                    gpus: Sequence[Tuple[str, str, Fact]]) -> List[Finding]:
    """No binary could be read and no table lists the build: what its CUDA version could target at all
    (cuda.json cc_min/cc_max: the architectures that release's nvcc emits), else say it is unknown."""
    out: List[Finding] = []
    cuda = _framework_cuda(name, fact.value)
    row = hw.cuda_release(_mm_str(cuda)) if cuda is not None and cuda[1] is not None else None
    why = code.reason if code is not None and code.reason else "no GPU code was read from its libraries"
    for cc, gpu, cc_fact in gpus:
        sm = "sm_" + cc.replace(".", "")
        want = _v(cc)
        if row is None or want is None:
            out.append(Finding(
                code="gpu.arch_support_unknown", severity="info", components=["gpu", name],
                title="Whether %s has kernels for %s (%s) is unknown" % (label, gpu, sm),
                detail="Its libraries' GPU code could not be read (%s), no table lists this build, and the CUDA "
                       "version it was built with is %s." % (why, "unknown" if cuda is None else
                                                              "not in the matrix (%s)" % _mm_str(cuda)),
                evidence=_ev(cc_fact, fact, code), source=_source("the build's GPU code or CUDA version"),
                fix=Fix(text="Check on the machine: python -c \"import %s\" and run one GPU operation." % name)))
            continue
        lo, hi = _v(row["cc_min"]), _v(row["cc_max"])
        if lo is not None and want < lo:
            out.append(Finding(
                code="gpu.arch_not_in_build", severity="error", components=["gpu", name],
                title="%s (%s, compute capability %s) is not supported by %s: built with CUDA %s, which "
                      "targets compute capability %s and newer only" % (gpu, sm, cc, label, row["version"],
                                                                       row["cc_min"]),
                detail="CUDA %s's nvcc cannot emit code for %s, so no build made with it carries kernels for this "
                       "GPU (its libraries' GPU code could not be read: %s)." % (row["version"], sm, why),
                evidence=_ev(cc_fact, fact, code), source=_source("cuda.json cc_min of CUDA %s" % row["version"],
                                                                  row),
                fix=Fix(text="Install a %s build made with an older CUDA that still targets %s." % (name, sm))))
        elif hi is not None and want.release[0] > hi.release[0] and name == "torch" and _torch_cuda_wheels_no_ptx(
                row["version"]):
            releases = _torch_cuda_wheels_no_ptx(row["version"])
            out.append(Finding(
                code="gpu.arch_not_in_build", severity="error", components=["gpu", name],
                title="%s (%s, compute capability %s) is not supported by %s: CUDA %s compiles for compute capability "
                      "%s at most, and PyTorch's CUDA %s wheels carry no PTX" % (
                          gpu, sm, cc, label, row["version"], row["cc_max"], row["version"]),
                detail="No build made with CUDA %s has SASS for %s, and the PyTorch wheels for CUDA %s that the "
                       "matrix lists (torch %s) embed no PTX to JIT from: every kernel launch fails with 'no kernel "
                       "image is available for execution on the device'. (Its own libraries' GPU code could not be "
                       "read: %s.)" % (row["version"], sm, row["version"], ", ".join(releases), why),
                evidence=_ev(cc_fact, fact, code),
                source=_source("cuda.json cc_max of CUDA %s; torch.json variants for CUDA %s (no ptx)" % (
                    row["version"], row["version"]), row),
                fix=_arch_fix_for(name, cc)))
        elif hi is not None and want.release[0] > hi.release[0] and name == "paddle":
            out.append(Finding(
                code="gpu.arch_not_in_build", severity="error", components=["gpu", name],
                title="%s (%s, compute capability %s) is not supported by %s: built with CUDA %s, which compiles "
                      "for compute capability %s at most, and PaddlePaddle's release builds carry no PTX" % (
                          gpu, sm, cc, label, row["version"], row["cc_max"]),
                detail="No build made with CUDA %s has SASS for %s, and PaddlePaddle's release builds "
                       "(CUDA_ARCH_NAME=All) embed SASS only, no PTX to JIT from: every kernel launch fails with "
                       "'no kernel image is available for execution on the device'. (Its own libraries' GPU code "
                       "could not be read: %s.)" % (row["version"], sm, why),
                evidence=_ev(cc_fact, fact, code),
                source=_source("cuda.json cc_max of CUDA %s; PaddlePaddle's cmake/cuda.cmake (%s) emits PTX only "
                               "for CUDA_ARCH_NAME=Manual with CUDA_ARCH_PTX" % (row["version"], PADDLE_CUDA_CMAKE),
                               row),
                fix=_arch_fix_for(name, cc)))
        elif hi is not None and want.release[0] > hi.release[0]:
            out.append(Finding(
                code="gpu.arch_support_unknown", severity="warning", components=["gpu", name],
                title="%s (%s) is newer than anything CUDA %s can compile for (up to compute capability %s): %s "
                      "runs on it only if it embedded PTX" % (gpu, sm, row["version"], row["cc_max"], label),
                detail="A build made with CUDA %s carries no SASS for %s; it runs only through PTX JIT, and only "
                       "if it embedded PTX, which could not be read (%s)." % (row["version"], sm, why),
                evidence=_ev(cc_fact, fact, code), source=_source("cuda.json cc_max of CUDA %s" % row["version"],
                                                                  row),
                fix=Fix(text="Install a %s build made with a CUDA that targets %s." % (name, sm))))
    return out


def _cc_text(cap: Any) -> Optional[str]:
    v = hw._cc(str(cap))
    return "%d.%d" % (v.release[0], v.release[1] if len(v.release) > 1 else 0) if v is not None else None


def _arch_findings(facts: Facts, drv: Driver, component: str, label: str, archs: Sequence[str],
                   ptx: Sequence[str], gpus: Sequence[Tuple[str, str, Fact]], fw_fact: Fact,
                   source: Dict[str, Any], row: Optional[Dict[str, Any]]) -> List[Finding]:
    out: List[Finding] = []
    built = ", ".join("sm_%s" % a.replace(".", "") for a in archs) + (
        "" if not ptx else " + PTX " + ", ".join("compute_%s" % p.replace(".", "") for p in ptx))
    for cc, name, cc_fact in gpus:
        if _sass_for(archs, cc):
            continue
        sm = "sm_" + cc.replace(".", "")
        fix_text = "Install a %s build compiled for %s." % (component, sm)
        if component == "torch":
            fix = _torch_fix(fix_text, suggest_torch(facts, drv, [cc]), facts, [cc])
        else:
            fix = _tensorflow_newer(facts, drv, cc, fix_text + " Newer TensorFlow releases add newer architectures.")
        if _ptx_for(ptx, cc):
            severity, gap = _jit_severity_detail(fw_fact, cc, sm, label)
            out.append(Finding(
                code="gpu.arch_ptx_jit_only", severity=severity, components=["gpu", component],
                title="%s (%s, compute capability %s) is reached by %s (%s) only through PTX JIT" % (
                    name, sm, cc, label, built),
                detail="No SASS for %s: the driver JIT-compiles the embedded PTX at first use. The first start "
                       "takes minutes and fills the JIT cache (~/.nv/ComputeCache; raise CUDA_CACHE_MAXSIZE so it "
                       "is kept), kernels may be slower, and under CUDA minor-version compatibility the JIT "
                       "fails.%s" % (sm, gap),
                evidence=_ev(cc_fact, fw_fact), source=source, fix=fix))
        else:
            out.append(Finding(
                code="gpu.arch_not_in_build", severity=_severity(row, ["variants"]) if row is not None else "error",
                components=["gpu", component],
                title="%s (%s, compute capability %s) is not supported by %s (built for %s)" % (
                    name, sm, cc, label, built),
                detail="Neither SASS for %s (a cubin runs only on the same major at an equal or higher minor) nor "
                       "PTX at or below %s is in this build: every kernel launch fails with 'no kernel image is "
                       "available for execution on the device'." % (sm, cc),
                evidence=_ev(cc_fact, fw_fact), source=source, fix=fix))
    return out


def _active_toolkit_row(facts: Facts) -> Optional[Tuple[str, str, Fact, Dict[str, Any]]]:
    """The active toolkit (version, how it was chosen, its fact) and its matrix row, or None."""
    active = active_toolkit(facts)
    if active is None:
        return None
    row = hw.cuda_release(active[0])
    return None if row is None else (active[0], active[1], active[2], row)


def _can_compile(facts: Facts, tk_fact: Fact) -> bool:
    """Whether the active toolkit has a compiler: a runtime-only one (a CUDA base/runtime container image,
    cuda-cudart packages) compiles nothing, so what its nvcc could target does not matter."""
    if tk_fact.key == "cuda.nvcc":
        return True
    value = tk_fact.value if isinstance(tk_fact.value, dict) else {}
    where = {str(value.get(k)) for k in ("resolved", "path") if value.get(k)}
    toolkits = facts.value("cuda.toolkits")
    for tk in toolkits if isinstance(toolkits, list) else []:
        if isinstance(tk, dict) and (tk.get("path") in where or tk.get("resolved") in where):
            return tk.get("nvcc") is not False
    return True  # not seen: assume it can (the verdict then errs on the side of saying)


def _cuda_ga(version: str) -> str:
    """The GA version ("12.4.0") of a CUDA release named by the table ("12.4")."""
    row = hw.cuda_release(version)
    assert row is not None  # version comes from the same table
    return row["ga"]


def _toolkit_vs_gpu(facts: Facts) -> List[Finding]:
    out: List[Finding] = []
    active = _active_toolkit_row(facts)
    if active is None:
        return out
    version, how, tk_fact, row = active
    if not _can_compile(facts, tk_fact):
        return out
    for cc, name, cc_fact in gpu_ccs(facts):
        want = Version(cc)
        sm = "sm_" + cc.replace(".", "")
        if want < Version(row["cc_min"]):
            newest = [v for v in hw.cuda_for_cc(cc)]
            last = newest[-1] if newest else None
            out.append(Finding(
                code="cuda.toolkit_cannot_target_gpu", severity=_severity(row, ["cc_min"]),
                components=["cuda", "gpu"],
                title="CUDA %s (%s) cannot compile for %s (%s, compute capability %s): it targets %s and newer" % (
                    version, how, name, sm, cc, row["cc_min"]),
                detail="Support for this architecture was removed from nvcc; code built with CUDA %s has no SASS "
                       "or PTX this GPU can run. The last CUDA that targets it is %s." % (version, last or "?"),
                evidence=_ev(tk_fact, cc_fact),
                source=_source("CUDA %s nvcc targets compute capability %s..%s" % (
                    row["version"], row["cc_min"], row["cc_max"]), row),
                fix=Fix(text="Use a toolkit that still targets %s (CUDA %s) for this GPU." % (sm, last or "older"),
                        install=install_line(facts, "cuda", _cuda_ga(last), prefix="~/cuda-%s" % last)
                        if last else None)))
        elif want > Version(row["cc_max"]):
            newer = hw.cuda_for_cc(cc)
            first = newer[0] if newer else None
            out.append(Finding(
                code="cuda.gpu_newer_than_toolkit", severity="warning", components=["cuda", "gpu"],
                title="%s (%s, compute capability %s) is newer than CUDA %s (%s) can target (up to %s)" % (
                    name, sm, cc, version, how, row["cc_max"]),
                detail="nvcc %s rejects -arch=%s ('Unsupported gpu architecture'); code it builds runs on this GPU "
                       "only through PTX JIT of an older architecture. The first CUDA that targets it is %s." % (
                           version, sm, first or "not in envdoctor's matrix"),
                evidence=_ev(tk_fact, cc_fact),
                source=_source("CUDA %s nvcc targets compute capability %s..%s" % (
                    row["version"], row["cc_min"], row["cc_max"]), row),
                fix=Fix(text="Install CUDA %s or newer and point CUDA_HOME / PATH at it." % (first or "a newer"),
                        install=install_line(facts, "cuda", _cuda_ga(first), prefix="~/cuda-%s" % first)
                        if first else None)))
    return out


def _cpu_builds(facts: Facts) -> List[Finding]:
    out: List[Finding] = []
    if not has_nvidia_gpu(facts):
        return out
    drv = Driver(facts)
    ccs = [cc for cc, _, _ in gpu_ccs(facts)]
    gpu_ev = [facts.get("gpu.count"), facts.get("driver.cuda_version")]
    for name, component in FRAMEWORKS:
        fact = facts.get("framework." + name)
        if fact is None or not fact.known or not isinstance(fact.value, dict):
            continue
        v = fact.value
        cpu = (not v.get("gpu")) if name == "onnxruntime" else v.get("build") == "cpu"
        if not cpu or name in ("cupy",):
            continue
        label = "%s %s" % (v.get("package") or name, v.get("version"))
        src: Dict[str, Any] = _source("a CUDA build exists for this GPU", url=MINOR_COMPAT)
        if name == "torch":
            sug = suggest_torch(facts, drv if drv.known else None, ccs, prefer=v.get("version"))
            fix = _torch_fix("Replace the CPU-only wheel with a CUDA build.", sug, facts)
            if sug is not None:
                src = _source("torch %s %s (CUDA %s) runs on this driver" % (sug[0], sug[1]["tag"], sug[1]["cuda"]),
                              fw.torch_release(sug[0]))
        elif name == "tensorflow":
            have = v.get("public") or v.get("version")
            picked = suggest_build("tensorflow", facts, drv if drv.known else None, ccs, prefer=have)
            if picked is None:
                fix = Fix(text="Install a CUDA build of TensorFlow: none in envdoctor's matrix fits this driver, GPU, "
                               "platform and Python; update the driver first.")
            else:
                build = picked[0]
                how = ("'and-cuda' pulls CUDA %s and cuDNN %s from PyPI" % (build.row["cuda"], build.row["cudnn"])
                       if build.row.get("pip_extra") else
                       "it uses the system CUDA %s and cuDNN %s" % (build.row["cuda"], build.row["cudnn"]))
                fix = Fix(text="Install the CUDA build of TensorFlow %s (%s)." % (build.release, how),
                          commands=["pip uninstall -y %s" % " ".join(sorted(v.get("packages") or [v.get("package")])),
                                    _pip_command(picked)],
                          install=install_line(facts, "tensorflow", build.release, "pip"))
                src = _source("tensorflow %s GPU wheels are built with CUDA %s" % (build.release, build.row["cuda"]),
                              build.row)
        elif name == "jax":
            have = v.get("jaxlib") or v.get("version")
            picked = suggest_build("jax", facts, drv if drv.known else None, ccs, prefer=have)
            if picked is None:
                fix = Fix(text="jaxlib alone is CPU-only, and no jax CUDA build in envdoctor's matrix fits this "
                               "driver, GPU and Python; update the driver first.")
            else:
                build = picked[0]
                extra = next(var["pip_extra"] for var in build.row["variants"] if var["tag"] == build.variant)
                have_row = fw.jax_release(have) if isinstance(have, str) else None
                same = have_row is not None and have_row["jax"] == build.row["jax"]
                fix = Fix(text="jaxlib alone is CPU-only; install the CUDA %s plugin (%s, jax %s)." % (
                    build.variant[4:], extra, build.row["jax"]), commands=[_pip_command(picked)],
                    install=install_line(facts, "jax", have if same else None, "pip"))
                src = _source("jax CUDA wheels: %s" % extra, build.row)
        elif name == "onnxruntime":
            fix = Fix(text="The 'onnxruntime' package has no CUDA execution provider; install onnxruntime-gpu "
                           "instead (uninstall the CPU package first: both write the same files).",
                      commands=["pip uninstall -y onnxruntime", "pip install onnxruntime-gpu==%s" % v.get("public")])
            rel = fw.onnxruntime_release(v.get("version"))
            if rel is not None:
                src = {"rule": "onnxruntime-gpu %s is built for CUDA %s" % (rel["version"], rel["cuda"]),
                       "url": rel["source"].get("url", ""), "checked": rel["source"].get("checked", "")}
        elif name == "paddle":
            fix = Fix(text="Install paddlepaddle-gpu instead of the CPU package.",
                      commands=["pip uninstall -y paddlepaddle", "pip install paddlepaddle-gpu"])
        else:
            fix = Fix(text="Install a CUDA build of %s." % name)
        who = drv.describe() if drv.known else "an NVIDIA GPU is present"
        out.append(Finding(
            code="framework.cpu_only_build", severity="warning", components=[component, "gpu"],
            title="%s is a CPU-only build, but this machine has an NVIDIA GPU (%s)" % (label, who),
            detail="This build never uses the GPU. The suggested CUDA build is one this driver runs.",
            evidence=_ev(fact, *gpu_ev), source=src, fix=fix))
    return out


def _toolkits_disagree(facts: Facts) -> List[Finding]:
    seen: List[Tuple[str, str, Fact]] = []
    nvcc = facts.get("cuda.nvcc")
    if nvcc is not None and nvcc.known and isinstance(nvcc.value, dict) and nvcc.value.get("version"):
        seen.append(("nvcc on PATH (%s)" % nvcc.value.get("path"), str(nvcc.value["version"]), nvcc))
    home = facts.get("cuda.home")
    if home is not None and home.known and isinstance(home.value, dict) and home.value.get("version"):
        seen.append(("%s=%s" % (home.value.get("var"), home.value.get("path")), str(home.value["version"]), home))
    link = facts.get("cuda.default_symlink")
    # With CUDA_HOME and the nvcc on PATH agreeing, /usr/local/cuda is never reached by the tools that honour
    # them (it is their last fallback): a second toolkit there is a deliberate, consistent choice.
    chosen_by_both = len(seen) == 2 and _mm(seen[0][1]) == _mm(seen[1][1])
    if link is not None and link.known and isinstance(link.value, dict) and link.value.get("version") \
            and not chosen_by_both:
        seen.append(("/usr/local/cuda -> %s" % link.value.get("resolved"), str(link.value["version"]), link))
    releases = {_mm(v) for _, v, _ in seen}
    if len(releases) < 2:
        return []
    chosen = seen[0]
    return [Finding(
        code="cuda.toolkits_disagree", severity="warning", components=["cuda"],
        title="CUDA toolkits disagree: %s" % "; ".join("%s is %s" % (w, v) for w, v, _ in seen),
        detail="Build tools pick different ones: CMake and torch.utils.cpp_extension use CUDA_HOME first, then the "
               "nvcc on PATH, then /usr/local/cuda; Makefiles often hard-code /usr/local/cuda. An extension can "
               "compile with one CUDA and link against another.",
        evidence=_ev(*[f for _, _, f in seen]),
        source=_source("one toolkit should be reachable by PATH, CUDA_HOME and /usr/local/cuda", url=CUDA_ENV),
        fix=Fix(text="Point all three at the toolkit you build with (%s, CUDA %s)." % (chosen[0], chosen[1]),
                commands=["export CUDA_HOME=/usr/local/cuda-%s" % _mm_str(_mm(chosen[1]) or (0, 0)),
                          "export PATH=$CUDA_HOME/bin:$PATH",
                          "sudo ln -sfn /usr/local/cuda-%s /usr/local/cuda" % _mm_str(_mm(chosen[1]) or (0, 0))]))]


def _extension_toolkit(facts: Facts) -> Optional[Tuple[str, str, Fact]]:
    """The toolkit torch.utils.cpp_extension builds with (its CUDA_HOME, when that is a known toolkit),
    else the active one: (version, how it is chosen, fact)."""
    home = facts.get("cuda.extension_home")
    if home is not None and home.known and isinstance(home.value, dict) and home.value.get("version"):
        how = "CUDA_HOME %s, from %s" % (home.value.get("path"), home.value.get("how"))
        return str(home.value["version"]), how, home
    return active_toolkit(facts)


def _extension_home(facts: Facts) -> List[Finding]:
    home = facts.get("cuda.extension_home")
    torch = facts.mapping("framework.torch")
    if home is None or not home.known or not isinstance(home.value, dict) or torch.get("build") != "cuda":
        return []
    h = home.value
    missing = [what for what, ok_ in (("include/cuda_runtime.h", h.get("headers")), ("bin/nvcc", h.get("nvcc")))
               if ok_ is False]
    if not missing:
        return []
    want = _mm(torch.get("cuda"))
    cmds, install, found = _cuda_home_for(facts, want, same_major=True)
    return [Finding(
        code="cuda.extension_home_not_a_toolkit", severity="warning", components=["cuda", "torch"],
        title="Building torch %s CUDA extensions would use CUDA_HOME=%s (from %s), which has no %s" % (
            torch.get("version"), h.get("path"), h.get("how"), " and no ".join(missing)),
        detail="torch.utils.cpp_extension (and the setup.py of flash-attn, apex, DeepSpeed, xformers) takes "
               "CUDA_HOME, else CUDA_PATH, else the directory above the nvcc on PATH, else /usr/local/cuda. "
               "Here that is not a toolkit, so compiling fails with 'cuda_runtime.h: No such file or directory' "
               "or cannot find nvcc. Running torch itself is unaffected.",
        evidence=_ev(home, facts.get("framework.torch"), facts.get("cuda.nvcc")),
        source=_source("torch.utils.cpp_extension._find_cuda_home: CUDA_HOME, CUDA_PATH, "
                       "dirname(dirname(which nvcc)), /usr/local/cuda (torch 2.13.0)", url=CPP_EXTENSION),
        fix=Fix(text=("Point CUDA_HOME at a toolkit with CUDA %s, the CUDA torch was built with, before building."
                      % (_mm_str(want) if want else torch.get("cuda"))) + (
                          "" if found or install else " No such toolkit was found."),
                commands=cmds, install=install))]


def _cuda_home_for(facts: Facts, want: Optional[Tuple[int, Optional[int]]],
                   same_major: bool = False) -> Tuple[List[str], Optional[str], bool]:
    """How to point CUDA_HOME at a toolkit with CUDA ``want``: (commands, the envdoctor install line or None,
    whether such a toolkit is on the machine). A toolkit found (exactly that release, else with
    ``same_major`` the same major) is named by its path; otherwise the one the install line puts in
    ~/cuda-X.Y, so the two lines of a fix never disagree."""
    toolkits = [t for t in facts.items("cuda.toolkits") if isinstance(t, dict) and t.get("nvcc") and t.get("path")
                and t.get("kind") != "conda"]
    fitting = [t for t in toolkits if want is not None and _mm(t.get("version")) == want]
    if not fitting and same_major and want is not None:
        fitting = [t for t in toolkits if (_mm(t.get("version")) or (None,))[0] == want[0]]
    if fitting:
        return ["export CUDA_HOME=%s" % fitting[0]["path"]], None, True
    if want is None or want[1] is None:
        return [], None, False
    ga = (hw.cuda_release(_mm_str(want)) or {}).get("ga", _mm_str(want))
    line = install_line(facts, "cuda", ga, prefix="~/cuda-%s" % _mm_str(want))
    if line is None:  # never name a directory nothing will create
        return [], None, False
    return ["export CUDA_HOME=~/cuda-%s" % _mm_str(want)], line, False


def _toolkit_set_up_for_builds(facts: Facts) -> bool:
    """Whether a CUDA toolkit is set up for compiling: an nvcc on PATH, or CUDA_HOME/CUDA_PATH set."""
    for key in ("cuda.nvcc", "cuda.home"):
        fact = facts.get(key)
        if fact is not None and fact.known and isinstance(fact.value, dict) and fact.value.get("path"):
            return True
    return False


def _toolkit_vs_framework(facts: Facts) -> List[Finding]:
    active = _extension_toolkit(facts)
    torch = facts.get("framework.torch")
    if active is None or torch is None or not torch.known or not isinstance(torch.value, dict):
        return []
    if torch.value.get("build") != "cuda":
        return []
    tk, fwc = _mm(active[0]), _mm(torch.value.get("cuda"))
    if tk is None or fwc is None or fwc[1] is None or tk == fwc:
        return []
    major = tk[0] != fwc[0]
    cmds, install, _ = _cuda_home_for(facts, fwc)
    # another major breaks extension builds; said as a warning where they would run (a GPU is here) and
    # where this toolkit is set up for building (its nvcc on PATH, or CUDA_HOME/CUDA_PATH); a toolkit that
    # is only installed (/usr/local/cuda, nvcc not on PATH) is what many healthy machines have beside a
    # wheel of another CUDA: said, as info
    warn = major and has_nvidia_gpu(facts) and _toolkit_set_up_for_builds(facts)
    return [Finding(
        code="cuda.toolkit_differs_from_framework", severity="warning" if warn else "info",
        components=["cuda", "torch"],
        title="The active CUDA toolkit is %s (%s), but torch %s was built with CUDA %s" % (
            active[0], active[1], torch.value.get("version"), _mm_str(fwc)),
        detail=("Only building CUDA extensions uses the toolkit. torch.utils.cpp_extension %s." % (
            "refuses a different CUDA major ('The detected CUDA version (%s) mismatches the version that was used "
            "to compile PyTorch (%s)')" % (active[0], _mm_str(fwc)) if major else
            "warns about a different minor and builds anyway")),
        evidence=_ev(active[2], torch),
        source=_source("cpp_extension compares the toolkit's CUDA with torch.version.cuda (major must match)",
                       url=CPP_EXTENSION),
        fix=Fix(text="Only if you build extensions: use CUDA %s for them." % _mm_str(fwc),
                commands=cmds, install=install))]


def _gcc_too_new(version: Version, gcc_max: str) -> bool:
    """Whether a GCC ``version`` is past nvcc's limit: host_config.h tests the major (``__GNUC__ > 12``), and for
    the GCC 4 era also the minor (``__GNUC__ == 4 && __GNUC_MINOR__ > 9``), which ``gcc_max`` then carries."""
    limit = Version(gcc_max).release
    have = version.release + (0,)
    return have[:len(limit)] > limit if len(limit) > 1 else have[0] > limit[0]


def _gcc_version_of(fact: Optional[Fact]) -> Optional[Version]:
    if fact is None or not fact.known or not isinstance(fact.value, dict):
        return None
    return _v(fact.value.get("version"))


def _host_compiler_and_os(facts: Facts) -> List[Finding]:
    out: List[Finding] = []
    active = _active_toolkit_row(facts)
    if active is None:
        return out
    version, how, tk_fact, row = active
    # the compiler nvcc runs by itself (-ccbin/NVCC_CCBIN/CUDAHOSTCXX, its nvcc.profile's gcc, gcc on PATH), then
    # the one torch.utils.cpp_extension hands it as -ccbin $CC when CC is set
    candidates = [_nvcc_host_compiler(facts), _extension_cc(facts)]
    gcc, gv = None, None
    for cand in candidates:
        cv = _gcc_version_of(cand)
        if cv is not None and _gcc_too_new(cv, row["gcc_max"]):
            gcc, gv = cand, cv
            break
    if gcc is not None and gv is not None and _can_compile(facts, tk_fact):
        gmax_text = row["gcc_max"]
        gmax = int(Version(gmax_text).release[0])
        others = [g for g in facts.items("compiler.gcc_versions") if isinstance(g, dict)]
        fitting: List[Tuple[Version, Dict[str, Any]]] = []  # (version, entry) of the GCCs nvcc accepts
        for g in others:
            ov = _v(g.get("version"))
            if ov is not None and not _gcc_too_new(ov, gmax_text):
                fitting.append((ov, g))
        via_cc = gcc.key == "compiler.extension_cc"
        var = "CC" if via_cc else "NVCC_CCBIN"
        cmds = []
        if fitting:
            best = max(fitting, key=lambda vg: vg[0])[1]
            path = str(best["path"])
            cmds.append("export %s=%s" % (var, path if via_cc else path.replace("gcc", "g++")))
        else:
            cmds.append("sudo apt-get install gcc-%d g++-%d" % (gmax, gmax) if facts.value("os.id") == "ubuntu"
                        else "sudo yum install devtoolset-%d" % gmax if rpm_tool(facts) == "yum"
                        else "sudo dnf install gcc-toolset-%d" % gmax)
            cmds.append("export %s=/usr/bin/%s-%d" % (var, "gcc" if via_cc else "g++", gmax))
        if via_cc:
            which = " (%s, CC: torch.utils.cpp_extension passes it to nvcc as -ccbin)" % gcc.value.get("path")
        elif gcc.key == "compiler.gcc":
            which = ""
        else:
            which = " (%s, the one nvcc runs)" % gcc.value.get("path")
        out.append(Finding(
            code="compiler.gcc_too_new_for_cuda", severity=_severity(row, ["gcc_max"]), components=["compiler", "cuda"],
            title="GCC %s%s is newer than CUDA %s's nvcc accepts (GCC <= %s)" % (
                gcc.value["version"], which, version, gmax_text),
            detail="nvcc stops with '#error -- unsupported GNU version! gcc versions later than %s are not "
                   "supported!'. Point nvcc at an older GCC (%s) or use a newer CUDA. "
                   "(-allow-unsupported-compiler exists but is unsafe.)" % (
                       gmax_text, "CC, which extension builds give nvcc" if via_cc else "NVCC_CCBIN, -ccbin"),
            evidence=_ev(gcc, tk_fact),
            source=_source("CUDA %s supports host GCC up to %s" % (row["version"], row["gcc_max"]), row),
            fix=Fix(text="Use GCC %s or older for nvcc." % gmax_text, commands=cmds)))
    os_id, os_ver = facts.value("os.id"), facts.value("os.version")
    if os_id and os_ver and not _distribution_package(tk_fact):
        dist = row.get("distributions") or {}
        key, ver = nvidia_distro(str(os_id), str(os_ver))
        if key in dist and ver not in dist[key]:
            out.append(Finding(
                code="os.unsupported_by_cuda", severity="warning", components=["os", "cuda"],
                title="%s %s is not a supported distribution of CUDA %s (%s %s)" % (
                    os_id, os_ver, version, key, ", ".join(dist[key])),
                detail="NVIDIA did not build or test CUDA %s for this release; it may work (the runfile or "
                       "redistributable tarballs often do) but packages for it may not exist." % row["version"],
                evidence=_ev(facts.get("os.id"), facts.get("os.version"), tk_fact),
                source=_source("CUDA %s supports %s %s" % (row["version"], key, ", ".join(dist[key])), row),
                fix=Fix(text="Use a CUDA release that supports %s %s, or the distribution release CUDA %s "
                             "supports." % (key, ver, row["version"]),
                        install=_cuda_for_os(facts, key, ver))))
    return out


def _nvcc_host_compiler(facts: Facts) -> Optional[Fact]:
    """The host compiler nvcc runs: the one -ccbin names (NVCC_CCBIN, CUDAHOSTCXX, NVCC_PREPEND/APPEND_FLAGS;
    None when its version is unknown, a clang: nothing to judge), else the gcc its nvcc.profile's PATH finds first
    (a gcc beside nvcc: Arch's /opt/cuda/bin/gcc, Debian's wrapper), else gcc on PATH."""
    override = facts.get("compiler.nvcc_host")
    if override is not None and override.known and isinstance(override.value, dict):
        return override if override.value.get("version") else None
    own = facts.get("compiler.nvcc_gcc")
    if own is not None and own.known and isinstance(own.value, dict) and not own.value.get("same_as_path") \
            and own.value.get("version"):
        return own
    if own is not None and not own.known:
        return None  # nvcc runs a gcc of its own that could not be asked: not /usr/bin/gcc's to answer for
    return facts.get("compiler.gcc")


def _extension_cc(facts: Facts) -> Optional[Fact]:
    """The compiler CC names, which torch.utils.cpp_extension gives nvcc as ``-ccbin $CC`` (None when CC is unset,
    names the compiler already judged, or its version is unknown: a clang, a missing program)."""
    cc = facts.get("compiler.extension_cc")
    if cc is None or not cc.known or not isinstance(cc.value, dict) or not cc.value.get("version"):
        return None
    return cc


def _distribution_package(tk_fact: Fact) -> bool:
    """The active toolkit is the distribution's own package (Debian/Ubuntu nvidia-cuda-toolkit, Fedora/Arch
    cuda: nvcc in /usr/bin, no toolkit directory of NVIDIA's layout): the distribution built and supports it
    for its release, so NVIDIA's list of distributions for its own packages says nothing about it."""
    value = tk_fact.value if isinstance(tk_fact.value, dict) else {}
    return (tk_fact.key == "cuda.nvcc" and not value.get("toolkit")
            and str(value.get("resolved") or value.get("path") or "").startswith("/usr/bin/"))


def _cuda_for_os(facts: Facts, key: str, ver: str) -> Optional[str]:
    for r in reversed(hw.cuda_releases()):  # the newest release for this OS that the installed driver runs
        if ver in (r.get("distributions") or {}).get(key, []):
            line = install_line(facts, "cuda", r["ga"], prefix="~/cuda-%s" % r["version"])
            if line:
                return line
    return None


_question("driver-vs-cuda", _driver_vs_cuda, ("driver.version",), "driver.too_old_for_framework",
          "driver.too_old_for_toolkit", "driver.minor_version_compat", "driver.missing_for_framework",
          "driver.cuda_version_is_a_ceiling", reads=("cuda.*", "driver.nvidia_pci_gpus", "framework.*"),
          layers=("driver",))
_question("arch-vs-builds", _arch_vs_builds, ("gpu.N.compute_capability", "framework.*"),
          "gpu.arch_not_in_build", "gpu.arch_ptx_jit_only",
          "gpu.arch_support_unknown", reads=("framework.*.gpu_code",), layers=("gpu",))
_question("toolkit-vs-gpu", _toolkit_vs_gpu, ("cuda.toolkits", "gpu.N.compute_capability"),
          "cuda.toolkit_cannot_target_gpu", "cuda.gpu_newer_than_toolkit", reads=("cuda.*",), layers=("cuda",))
_question("cpu-builds", _cpu_builds, ("framework.*", "gpu.count"), "framework.cpu_only_build",
          reads=("driver.nvidia_pci_gpus",), layers=("frameworks",))
_question("toolkits-disagree", _toolkits_disagree, ("cuda.toolkits", "cuda.nvcc"), "cuda.toolkits_disagree",
          reads=("cuda.*",), layers=("cuda",))
_question("toolkit-vs-framework", _toolkit_vs_framework, ("cuda.nvcc", "framework.*"),
          "cuda.toolkit_differs_from_framework", reads=("cuda.*", "driver.nvidia_pci_gpus"), layers=("cuda",))
_question("extension-home", _extension_home, ("cuda.extension_home",), "cuda.extension_home_not_a_toolkit",
          reads=("cuda.*", "framework.*"), layers=("cuda",))
_question("host-compiler-and-os", _host_compiler_and_os, ("cuda.nvcc",), "compiler.gcc_too_new_for_cuda",
          "os.unsupported_by_cuda", reads=("compiler.*", "cuda.*"), layers=("compilers", "os"))

#: Every compat question at once (tests, and callers that want this area only).
compat = group("compat")
