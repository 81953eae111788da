"""Compatibility between the driver, the CUDA toolkits, the GPU architecture and the framework builds: what the
questions (one module each) share.

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

Every question may suggest an install line or a build: it reads what those depend on too
(``INSTALL_LINE_READS``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from packaging.version import Version

from ... import frameworks as framework_table
from ... import matrix, versions
from ...facts import Fact, Facts
from ...findings import Fix
from ...matrix import builds
from ...matrix import frameworks as fw
from ...matrix import hardware as hw
from .. import CodeDoc, Message, group
from ..suggest import install_line

if TYPE_CHECKING:  # advise imports the checks' neighbours; the suggestions import it when they run
    from ...advise import Candidate, Verdict


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
            "JAX CUDA plugin, onnxruntime-gpu, CuPy cudaXXx, Paddle, MXNet), python.static_cuda and "
            "programs.gpu_code (GPU code whose PTX ISA is newer than the driver's CUDA, with no cubin for the GPU; "
            "its ISA not read, the CUDA runtime bundled beside it stands for the toolkit that built it: a warning); "
            "cuda.bundled_cudart (an application bundle's own libcudart.so.X.Y.Z); apps.* (floors software states "
            "for itself, driver_floors.json: RAPIDS, Ollama, FFmpeg's nv-codec-headers, NVISII, Warp's builds and "
            "its graph capture's module loading)",
            "The framework imports but finds no usable GPU (torch.cuda.is_available() is False, 'CUDA driver "
            "version is insufficient for CUDA runtime version'). Within one CUDA major a driver at or above the "
            "major's floor still runs newer minors (minor-version compatibility); across majors it cannot. "
            "Minor-version compatibility does not cover PTX: code that reaches the GPU only through PTX newer than "
            "the driver's CUDA fails at its first kernel launch.",
            "cuda.json (min_driver_linux, minor_compat_min_driver, ptx_isa): " + MINOR_COMPAT,
        messages=(Message("CUDA driver version is insufficient for CUDA runtime version",
                "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html"),
                  Message("the provided PTX was compiled with an unsupported toolchain",
                "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html"),
                  Message("The NVIDIA driver on your system is too old (found version *)",
                "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/cuda/detail/CUDAHooks.cpp"),)),
    CodeDoc("driver.too_old_for_toolkit", "error",
            "The NVIDIA driver is too old for the active CUDA toolkit (nvcc, /usr/local/cuda) or the conda "
            "environment's cudatoolkit / cuda-version; or nvcc's default build (PTX only for this GPU) is newer "
            "than the driver can JIT.",
            "driver.version, driver.cuda_version, cuda.nvcc, cuda.default_symlink, cuda.home, cuda.toolkits, "
            "cuda.conda, programs.gpu_code (a library that compiles its kernels with NVRTC: PTX of NVRTC's own "
            "release, which minor-version compatibility does not cover)", "Programs built with that toolkit fail at "
            "their first CUDA call with cudaErrorInsufficientDriver; a program's NVRTC kernels fail to load with "
            "CUDA_ERROR_UNSUPPORTED_PTX_VERSION.", "cuda.json (min_driver_linux, minor_compat_min_driver)",
        messages=(Message("CUDA driver version is insufficient for CUDA runtime version",
                "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html"),)),
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
            "cuda.json (min_driver_linux)",
        messages=(Message("Found no NVIDIA driver on your system",
                "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/cuda/detail/CUDAHooks.cpp"),)),
    CodeDoc("gpu.arch_not_in_build", "error",
            "The installed framework build has no kernels for this GPU's compute capability: neither SASS for it "
            "nor PTX it could JIT ('no kernel image is available for execution on the device').",
            "gpu.N.compute_capability, framework.<name>.gpu_code (the SASS and PTX the framework's own "
            "libraries carry, read from their CUDA fat binaries), else framework.torch (matrix arch_list/ptx), "
            "framework.tensorflow (build_info cuda_compute_capabilities), else the CUDA the build was made with; "
            "python.gpu_packages (bitsandbytes, flash-attn) against package_arch.json's floor of their releases; "
            "programs.gpu_code (conda packages' libraries, programs on PATH with their libraries and fat binary "
            "files, Python extension modules: the SASS and PTX their fat binaries carry); apps.rapids and "
            "libraries.tensorrt against the GPU generations a release dropped or predates (driver_floors.json)",
            "Every kernel launch fails. A cubin for X.y runs on X.z (z >= y) only; PTX runs on any capability at or "
            "above its own. TensorRT refuses a GPU its release does not know ('Unsupported SM') even where the "
            "SASS of an older capability would run.",
            "torch.json (variants[].arch_list, ptx); package_arch.json; driver_floors.json; " + PROG_GUIDE,
        messages=(Message("no kernel image is available for execution on the device",
                "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html"),
                  Message("* with CUDA capability sm_* is not compatible with the current PyTorch installation",
                "https://github.com/pytorch/pytorch/blob/main/torch/cuda/__init__.py"),
                  Message("Unsupported SM", "https://github.com/NVIDIA/TensorRT/issues/2332"),)),
    CodeDoc("framework.gpu_below_package_minimum", "warning",
            "A package in the environment supports GPUs of a compute capability above this GPU's only, while the "
            "framework under it runs on the GPU: Triton 2.x (torch.compile's kernel compiler) supports compute "
            "capability 7.0 and newer.",
            "gpu.N.compute_capability, python.gpu_packages against package_arch.json's floor of its releases "
            "(rows with 'fails': what stops working)",
            "The framework's own kernels run; what the package does fails on this GPU (torch.compile and Triton "
            "kernels: 'Found ... which is too old to be supported by the triton GPU compiler').",
            "package_arch.json",
        messages=(Message("which is too old to be supported by the triton GPU compiler",
                "https://github.com/pytorch/pytorch/blob/v2.2.1/torch/_inductor/scheduler.py"),)),
    CodeDoc("gpu.arch_ptx_jit_only", "warning",
            "The framework build (or a package's or program's GPU code) reaches this GPU only through PTX JIT "
            "compilation (no SASS for its compute capability).",
            "gpu.N.compute_capability, framework.torch, framework.tensorflow (build_info; for "
            "1.1-1.4, whose build_info names neither CUDA nor architectures, the release's build configuration); "
            "programs.gpu_code (Python packages' extension modules, conda packages' libraries, programs: the SASS "
            "and PTX their fat binaries carry; not said where the driver cannot JIT that PTX at all)",
            "The first start compiles every kernel (minutes) and fills the JIT cache (~/.nv/ComputeCache, "
            "CUDA_CACHE_MAXSIZE); performance may be lower, and under minor-version compatibility the JIT fails. "
            "An error when the build's own CUDA targets no GPU of this generation (cuda.json cc_max has a lower "
            "major): its CUDA libraries have no code for it either.",
            "torch.json (variants[].arch_list, ptx); cuda.json (cc_max); framework_builds.json (tested_cuda, "
            "ptx_each_arch); " + PROG_GUIDE),
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
            "cuda.nvcc / cuda.default_symlink / cuda.home, gpu.N.compute_capability; programs.gpu_code (the NVRTC "
            "release a library compiles its kernels with)",
            "nvcc rejects -arch=sm_XX ('Unsupported gpu architecture'); extensions built with it do not run; a "
            "program whose NVRTC cannot target the GPU builds no kernel for it.",
            "cuda.json (cc_min)"),
    CodeDoc("cuda.gpu_newer_than_toolkit", "warning",
            "The GPU is newer than the active CUDA toolkit knows: nvcc cannot emit SASS for its compute "
            "capability.", "cuda.nvcc / cuda.default_symlink / cuda.home, gpu.N.compute_capability; "
            "programs.gpu_code (the NVRTC release a library compiles its kernels with)",
            "Building extensions for this GPU (TORCH_CUDA_ARCH_LIST, -arch=native) fails; code built for older "
            "architectures runs only through PTX JIT; a program whose NVRTC predates the GPU gets 'invalid value "
            "for --gpu-architecture' or runs older PTX through the JIT.", "cuda.json (cc_max)"),
    CodeDoc("framework.cpu_only_build", "warning",
            "A CPU-only build of a framework is installed on a machine with an NVIDIA GPU.",
            "framework.* (build), gpu.count, driver.cuda_version",
            "The GPU sits idle: torch.cuda.is_available() is False, TensorFlow lists no GPU device. The fix names "
            "a CUDA build that this driver runs, picked from the matrix. Information only where the CPU package "
            "is installed because other packages require it by name and its CUDA build is another project "
            "(onnxruntime, required by faster-whisper): they chose it.", "torch.json, tensorflow.json, jax.json"),
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
            "torch.utils.cpp_extension passes to nvcc as -ccbin), python.jit_toolkits (the host compiler a package "
            "compiling CUDA at run time passes to nvcc as -ccbin: Jittor's cc_path, else g++ on PATH), "
            "compiler.gcc_versions, the active toolkit",
            "nvcc stops with '#error -- unsupported GNU version! gcc versions later than N are not supported!' "
            "(crt/host_config.h), unless -allow-unsupported-compiler is given: the build fails. An error where the "
            "release's limit was verified, a warning otherwise.",
            "cuda.json (gcc_max, from each release's host_config.h); " + CPP_EXTENSION,
        messages=(Message("unsupported GNU version! gcc versions later than * are not supported!",
                "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html#host-compiler-support-policy"),)),
    CodeDoc("framework.jit_toolkit_below_minimum", "error",
            "A package that compiles its CUDA code at run time with the machine's nvcc (Jittor) would use a CUDA "
            "toolkit older than the oldest release it supports.",
            "python.jit_toolkits (the package, the nvcc its own search finds, the toolkit of its own it prefers), "
            "cuda.nvcc, cuda.toolkits (that nvcc's release)",
            "Its kernels are compiled when it first runs on the GPU: with a toolkit older than it supports, that "
            "compilation (its own test, python -m jittor.test.test_example) fails. An error where the package's "
            "floor was verified from its own documentation, a warning otherwise.",
            "jit_toolkits.json (cuda_min, from Jittor's README and python/jittor/compiler.py)"),
    CodeDoc("compiler.glibc_too_new_for_cuda", "error",
            "The system glibc's headers use a construct the active CUDA toolkit's nvcc cannot parse (glibc 2.34+ "
            "with GCC 11+ before CUDA 11.6).",
            "os.glibc, the active toolkit, the compiler nvcc runs (compiler.nvcc_host, compiler.nvcc_gcc, "
            "compiler.gcc)",
            "Every nvcc compilation that includes a standard header fails (glibc 2.34's stdio.h: 'attribute "
            "\"__malloc__\" does not take arguments'): CUDA extensions and CUDA code cannot be built. An error where "
            "the release that fixed it was confirmed from NVIDIA's notes, a warning otherwise.",
            "cuda_glibc.json (glibc_min, host_gcc_min, cuda_fixed_in)",
        messages=(Message('attribute "__malloc__" does not take arguments',
                "https://forums.developer.nvidia.com/t/cuda-11-5-samples-throw-multiple-error-attribute-malloc-does-not-take-arguments/192750"),)),
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


class Driver:
    """What the driver runs: the newest CUDA it supports, and its version."""

    def __init__(self, facts: Facts) -> None:
        self.version_fact = facts.get("driver.version")
        self.cuda_fact = facts.get("driver.cuda_version")
        self.version: Optional[str] = facts.value("driver.version")
        self.wsl = bool(facts.value("os.wsl"))
        # the CUDA it reports, else (a Linux driver) the one Table 3 gives its version: the install recipes' reading
        self._driver = hw.driver_of(facts)
        cuda = hw.driver_cuda(*self._driver)
        self.cuda: Optional[Tuple[int, Optional[int]]] = cuda

    @property
    def known(self) -> bool:
        return self.cuda is not None

    def describe(self) -> str:
        who = "Driver %s" % self.version if self.version else "The driver"
        return "%s supports CUDA up to %s" % (who, _mm_str(self.cuda)) if self.cuda else who

    def verdict(self, need: Tuple[int, Optional[int]], update: Optional[str] = None) -> str:
        """"ok", "minor_compat" or "too_old" for a CUDA need (major, minor|None), or for its update release
        (``"11.4.4"``, whose driver of Table 3 may be newer than the GA's): the rule install's pre-flight applies
        too (:func:`envdoctor.matrix.hardware.driver_runs`)."""
        assert self.cuda is not None
        return hw.driver_runs(update or _mm_str(need), *self._driver) or "too_old"


class Need:
    """One consumer of a CUDA runtime: a framework build, a toolkit, a conda environment."""

    def __init__(self, component: str, label: str, cuda: Tuple[int, Optional[int]], fact: Fact,
                 kind: str, reinstall: Optional[Fix] = None, min_driver: Optional[str] = None,
                 min_driver_row: Optional[Dict[str, Any]] = None) -> None:
        self.component, self.label, self.cuda, self.fact, self.kind = component, label, cuda, fact, kind
        self.reinstall = reinstall
        self.min_driver, self.min_driver_row = min_driver, min_driver_row
        #: the field of ``min_driver_row`` that states ``min_driver`` (its verification sets the severity)
        self.min_driver_field = "variants"
        #: for GPU code carrying its own CUDA runtime (python.static_cuda): the cubin architectures it ships and the
        #: PTX ISA version of its PTX; None for other consumers
        self.sass: Optional[List[str]] = None
        self.ptx: Optional[List[str]] = None
        self.ptx_isa: Optional[str] = None
        self.package: Optional[str] = None  # its distribution
        #: a toolkit's update release ("11.4.4", from its version.json or version.txt), when known: Table 3 gives
        #: some updates a newer driver than their GA
        self.update: Optional[str] = None

    @property
    def cuda_text(self) -> str:
        """"11.4.4" for a known update release, else "11.4"."""
        return self.update or _mm_str(self.cuda)


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
    if row is not None and row.get("cuda"):
        return str(row["cuda"])
    tested = builds.tensorflow_tested_cuda(value.get("public") or value.get("version"))
    if tested is not None:  # 1.1-1.4: build_info names no CUDA; tensorflow.org's tested build configurations do
        return tested[0]
    # a release no table lists (0.x): the CUDA runtime its Python extension links (probes.frameworks)
    return str(value["cuda_linked"]) if value.get("cuda_linked") else None


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
            elif var and row and (row.get("min_driver_by_cuda") or {}).get(str(cuda[0])):
                # JAX's install guide states the driver per CUDA major for a release range ("the driver must be
                # version >= 525.60.13 for CUDA 12 and >= 450.80.02 for CUDA 11 on Linux")
                need.min_driver, need.min_driver_row = row["min_driver_by_cuda"][str(cuda[0])], row
                need.min_driver_field = "min_driver_by_cuda"
            if var and var.get("cuda_built") and cuda[1] is None:
                # a CUDA major's wheels (jaxlib +cuda11, jax-cuda12-plugin): name the CUDA they were built with
                need.label += " (its CUDA %d wheels, built with CUDA %s)" % (cuda[0], var["cuda_built"])
        out.append(need)
    return out


def static_needs(facts: Facts) -> List[Need]:
    """Python packages whose GPU code links its CUDA runtime statically (``python.static_cuda``): each needs the
    CUDA that introduced the highest PTX ISA version its fat binary holds (nvcc writes its own release's)."""
    fact = facts.get("python.static_cuda")
    if fact is None or not fact.known or not isinstance(fact.value, dict):
        return []
    best: Dict[str, Dict[str, Any]] = {}
    for lib in fact.value.get("libraries") or []:
        isa = _v(lib.get("ptx_isa")) if isinstance(lib, dict) else None
        if isa is None:
            continue
        key = str(lib.get("package"))
        if key not in best or isa > _v(best[key]["ptx_isa"]):  # type: ignore[operator]
            best[key] = lib
    out: List[Need] = []
    for name, lib in sorted(best.items()):
        cuda = _mm(hw.cuda_for_ptx_isa(str(lib["ptx_isa"])))
        if cuda is None or cuda[1] is None:
            continue
        label = "%s %s (%s, its own CUDA runtime; PTX ISA %s)" % (name, lib.get("version"), lib.get("path"),
                                                                   lib["ptx_isa"])
        need = Need("python", label, cuda, fact, "framework")
        need.sass = [str(a) for a in lib.get("sass") or []]
        need.ptx = [str(a) for a in lib.get("ptx") or []]
        need.package = name
        need.ptx_isa = str(lib["ptx_isa"])
        out.append(need)
    return out


#: The CUDA library whose soname major is the CUDA major it belongs to (cuBLAS: libcublas.so.11 is CUDA 11's,
#: libcublas.so.12 CUDA 12's), for telling a package's own build apart from the catalog's
_CUDA_MAJOR_SONAME = "libcublas.so."


def package_needs(facts: Facts) -> List[Need]:
    """Packages that bundle CUDA-linked libraries of their own (``linkage.packages``: an auditwheel-repaired PyPI
    wheel, ``<name>.libs/``) whose wheels' CUDA the matrix knows (``framework_builds.json``: CTranslate2's wheel
    build): each needs a driver that runs that CUDA. A wheel whose libraries load another cuBLAS major than the
    catalog's CUDA is not the catalog's build, and is left alone."""
    fact = facts.get("linkage.packages")
    if fact is None or not fact.known or not isinstance(fact.value, list):
        return []
    out: List[Need] = []
    for pkg in fact.value:
        if not isinstance(pkg, dict) or str(pkg.get("package") or "").lower().replace("_", "-") != "ctranslate2":
            continue
        built = builds.ctranslate2_build(pkg.get("version"))
        cuda = _mm(built[0]) if built else None
        if built is None or cuda is None:
            continue
        majors = {str(link.get("soname"))[len(_CUDA_MAJOR_SONAME):].split(".")[0]
                  for link in pkg.get("links") or [] if isinstance(link, dict)
                  and str(link.get("soname") or "").startswith(_CUDA_MAJOR_SONAME)}
        if majors and majors != {str(cuda[0])}:
            continue
        label = "%s %s (its PyPI wheel, built with CUDA %s)" % (pkg.get("package"), pkg.get("version"), built[0])
        need = Need("python", label, cuda, fact, "framework")
        need.package = str(pkg.get("package"))
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


def toolkit_update(facts: Facts, fact: Fact) -> Optional[str]:
    """The update release of the active toolkit (``"11.4.4"``): the version its directory's version.json (CUDA
    11.1 and later: the release, e.g. 11.4.4 for 11.4 Update 4) or version.txt names (older: e.g. 9.2.148, Table 3's
    spelling of 9.2 Update 1). nvcc's own ``V11.4.152`` is the compiler's version, not the release's: for nvcc on
    PATH, the release is read from the toolkit it belongs to. None when no such file names it."""
    value = fact.value if fact.known and isinstance(fact.value, dict) else {}
    if fact.key == "cuda.nvcc":
        root, release = value.get("toolkit"), value.get("release")
        toolkits = facts.value("cuda.toolkits")
        for tk in toolkits if isinstance(toolkits, list) and root else []:
            if isinstance(tk, dict) and tk.get("path") == root and tk.get("release") == release \
                    and str(tk.get("source") or "").startswith("file:"):
                value = {"version": tk.get("version"), "source": tk.get("source")}
                break
        else:
            return None
    version, source = str(value.get("version") or ""), str(value.get("source") or "")
    if fact.key != "cuda.nvcc":
        resolved = value.get("resolved") or value.get("path")
        toolkits = facts.value("cuda.toolkits")
        for tk in toolkits if isinstance(toolkits, list) else []:
            if isinstance(tk, dict) and tk.get("path") == resolved and tk.get("version") == version:
                source = str(tk.get("source") or "")
    if not source.endswith(("/version.json", "/version.txt")) or len(version.split(".")) != 3:
        return None
    return version


def toolkit_needs(facts: Facts) -> List[Need]:
    out: List[Need] = []
    active = active_toolkit(facts)
    if active is not None:
        version, how, fact = active
        mm = _mm(version)
        if mm is not None and mm[1] is not None:
            need = Need("cuda", "CUDA toolkit %s (%s)" % (version, how), mm, fact, "toolkit")
            update = toolkit_update(facts, fact)
            if update is not None and _mm(update) == mm:
                need.update = update
            out.append(need)
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


def bundle_needs(facts: Facts) -> List[Need]:
    """Application bundles carrying their own CUDA runtime (``cuda.bundled_cudart``: ``libcudart.so.10.2.89`` in
    the bundle's lib): the runtime a bundle carries is the toolkit's it was built with, and it needs a driver that
    runs that CUDA, like a framework build."""
    fact = facts.get("cuda.bundled_cudart")
    if fact is None or not fact.known or not isinstance(fact.value, list):
        return []
    out: List[Need] = []
    for b in fact.value:
        mm = _mm(b.get("release")) if isinstance(b, dict) else None
        if mm is None or mm[1] is None:
            continue
        label = "the application in %s (it bundles the CUDA %s runtime: %s)" % (b.get("root"), _mm_str(mm),
                                                                              b.get("path"))
        out.append(Need("cuda", label, mm, fact, "framework"))
    return out


def gpu_ccs(facts: Facts) -> List[Tuple[str, str, Fact]]:
    """Distinct (compute capability, GPU name, fact) of the GPUs NVML answered for (worked out once per set of
    facts: six checks ask, and on a large board it is a walk over every GPU's facts)."""
    return list(facts.derived("checks.compat.gpu_ccs", _gpu_ccs))


def _gpu_ccs(facts: Facts) -> List[Tuple[str, str, Fact]]:
    seen: Dict[str, Tuple[str, str, Fact]] = {}
    for f in facts.named("gpu.", "compute_capability"):
        if not f.known or _v(f.value) is None:
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


def _python(facts: Facts) -> Optional[str]:
    return facts.value("python.version")


def suggest_build(framework: str, facts: Facts, drv: Optional[Driver], ccs: Sequence[str],
                  prefer: Optional[str] = None, sass: bool = False) -> Optional[Tuple[Candidate, Verdict]]:
    """(candidate, verdict) of the build :func:`envdoctor.advise.choose_build` picks (advise's answer, and what
    the install line's recipe installs) for this driver, every GPU and this Python: of the release ``prefer``
    (the installed one) when a build of it fits, else the newest that fits; None when none does."""
    from ...advise import candidates, choose_build
    from ...target import Target

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


RUNTIME_COMPILED = framework_table.having("runtime_compiled")


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


#: Every compat question at once (tests, and callers that want this area only).
compat = group("compat")
