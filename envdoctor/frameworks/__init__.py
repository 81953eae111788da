"""The Python frameworks envdoctor knows, one plug-in module each (``envdoctor/frameworks/torch.py`` ...).

A plug-in is a module of this package whose ``FRAMEWORK`` describes one framework: what it is called, the
Python distributions that install it, its matrix table (``envdoctor/matrix/data/<area>.json``) and what
envdoctor does with it (its capability flags: which checks judge it, whether ``advise`` chooses a build of it,
which install recipe installs it...). Every list of frameworks elsewhere derives from the registered set: the
findings' components and the report's layers, the report schema's components, ``matrix AREA``, ``advise``'s
``--framework`` choices, the policy a golden node pins, the facts ``fleet`` compares, the engine outputs'
versions, the checks that run once per framework, what ``install`` shows after a framework recipe.
``tests/test_framework_plugins.py`` adds a fictional framework and names every place that does not pick it
up; ``tests/test_registries.py`` holds each real one to its probe reader, data file and recipe.

Adding a framework: a module here and its data file (``envdoctor/matrix/data/<area>.json`` with its
validator); the probe reader, ``advise`` candidates and a recipe where the framework needs its own.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from typing import Dict, NamedTuple, Optional, Tuple


class Install(NamedTuple):
    """How ``envdoctor install <recipe>`` installs a framework (its plug-in's ``install``): what
    ``recipes/framework.py`` makes every framework recipe of (its methods, options, versions, the release a
    ``--version`` names, its alternatives) and what differs from one framework to another there."""

    #: how install's messages name it ("torch 2.4 is not in the matrix"; empty: its display name)
    label: str = ""
    methods: Tuple[str, ...] = ("pip", "conda", "docker")
    #: the ``--option`` keys it takes
    options: Tuple[str, ...] = ("cuda", "image_os", "env")
    #: ``--with-driver`` plans the driver its build needs first (offered when a driver finding refuses the plan)
    with_driver: bool = False
    #: the pip index of its builds, one folder per CUDA variant (``<index>/cu126``); None: PyPI
    pip_index: Optional[str] = None
    #: the field of its data file's rows holding the range of releases a row covers (jax's ``jax``: ``>=0.4.26,<0.5``);
    #: None: a row is one release, named by its ``version``, and a ``--version`` names its major.minor
    release_range: Optional[str] = None
    #: how many of its newest releases a refusal of a release not in its table names
    suggest: int = 3
    # -- the facts a plan of it adds (``framework.<name>``, as the frameworks probe reports an installed build) --
    #: its version carries the build's variant as the local part (torch's ``2.7.1+cu126``)
    local_variant: bool = False
    #: the fields of the installed build read from the row of its data file: (field of the fact, field of the row)
    #: (TensorFlow's ``cudnn``, and its ``package``: ``tensorflow-gpu`` for the old releases)
    build_fields: Tuple[Tuple[str, str], ...] = ()
    #: the field naming the companion distribution pinned to the same release (jax's ``jaxlib``)
    companion_version: Optional[str] = None


class Framework(NamedTuple):
    name: str  # fact key ``framework.<name>`` and, for a component, its name in findings
    display: str  # how users know it
    component: bool  # a finding can concern it (a layer of the report of its own)
    matrix_area: Optional[str] = None  # envdoctor/matrix/data/<area>.json: its builds and what they need
    advise: bool = False  # `envdoctor advise` chooses a build of it
    recipe: Optional[str] = None  # `envdoctor install <recipe>`
    companion_of: Optional[str] = None  # reported on that framework's line (torchvision on torch's)
    counts: bool = True  # installed alone, it is "a framework installed" (torchvision never comes alone)
    #: the Python distributions (PyPI project names, normalised) that install it: a regular expression
    distributions: str = ""
    #: those of them that are CPU-only builds whatever the machine (None: the build is decided otherwise)
    cpu_distributions: Optional[str] = None
    #: a package that requires its CPU-only distribution by name chose that build: its CUDA build is another project
    #: that runs the CPU code too (ONNX Runtime: onnxruntime-gpu holds the CPU execution provider), so one pulled in
    #: only as such a dependency shows no wish to run this framework on the GPU (``framework.cpu_only_build`` is then
    #: information, not a warning)
    cpu_dependency_by_choice: bool = False
    #: the PyPI distribution of its CUDA builds: with it (and ``advise``), a framework without candidates and a recipe
    #: of its own is advised and installed from its data file alone (each row a release: ``version``, ``python``,
    #: ``cuda``, the CUDA releases its one wheel runs with; ``envdoctor.advise.plugin_candidates``,
    #: ``recipes/framework.py``)
    pip_package: Optional[str] = None
    #: the import check an install of it runs (Python that imports it and prints what it sees; empty: ``import
    #: <name>`` and its version), and the one run on a machine with an NVIDIA GPU, which fails (its reason on the last
    #: line) when the framework sees none (empty: the plain one)
    smoke: str = ""
    smoke_gpu: str = ""
    #: where it stands among the frameworks (the report's lines, advise's answers, the schema's components)
    order: int = 1000
    #: other names ``envdoctor matrix AREA`` takes for its table (``pytorch``, ``tf``)
    aliases: Tuple[str, ...] = ()
    # -- what envdoctor does with it (capability flags) --------------------------------------------------------
    #: its ELF dependencies are resolved and judged (checks ``framework-linkage.<name>``)
    links: bool = False
    #: the cuDNN it loads is judged against the one it was built with (checks ``cudnn-version.<name>``)
    cudnn_build: bool = False
    #: it loads cuDNN: that cuDNN is judged against the GPUs (check ``cudnn-gpu``)
    uses_cudnn: bool = False
    #: the libraries it opens at run time are judged (checks ``framework-dlopen.<name>``), in this order
    dlopen_order: Optional[int] = None
    #: its builds list the GPU architectures they carry (check ``compat.arch-vs-builds``)
    arch_lists: bool = False
    #: it compiles kernels at run time (NVRTC/XLA): a toolkit it uses is a runtime dependency
    runtime_compiled: bool = False
    #: the glibc its wheels need is judged (check ``frameworks.glibc``)
    glibc: bool = False
    #: the NVIDIA wheels it requires, under this field of its build (check ``nvidia-wheels``)
    nvidia_wheels_field: Optional[str] = None
    #: the version and CUDA it runs are among the versions the engine outputs name (Prometheus, NFD)
    engine_stack: bool = False
    #: ``fleet`` compares its version across nodes
    fleet: bool = False
    #: ``policy init`` pins its version and CUDA, in this order
    policy_order: Optional[int] = None
    # -- what the probes read of it ----------------------------------------------------------------------------
    #: the distributions whose dependents (the packages requiring them) ``python.requirements`` lists
    dependents_of: Tuple[str, ...] = ()
    #: its own libraries, which the compiled modules of packages built on it link by soname (a regular expression
    #: of file names), and the directories (relative to site-packages) holding them: those modules are checked
    #: against it (``linkage.<name>.extensions``)
    extension_libs: Optional[str] = None
    extension_dirs: Tuple[str, ...] = ()
    #: the mangled C++ names of its namespaces (data and vtables included) such a module imports from it: looked
    #: up in its libraries (``linkage.<name>.extension_symbols``)
    extension_symbols: Optional[str] = None
    #: extension packages whose compiled modules are checked wherever they link: (distribution, directory relative
    #: to site-packages, regular expression of the modules there)
    extension_packages: Tuple[Tuple[str, str, str], ...] = ()
    #: its main CUDA library, relative to site-packages (the first of these that exists), from which every CUDA
    #: library it loads in turn is resolved (``linkage.<name>``; with ``links``)
    cuda_libraries: Tuple[str, ...] = ()
    #: its main compiled libraries whose symbol-version needs are read, for any build (``linkage.<name>.abi``):
    #: each group is one library, the first of its candidates that exists (a rename across releases; a candidate
    #: with ``*`` is a shell pattern of file names, as an extension module's name carries its interpreter's tag)
    abi_libraries: Tuple[Tuple[str, ...], ...] = ()
    #: the CUDA libraries (short names: ``cudart``, ``cublas``...) it opens with ``dlopen`` where its libraries do
    #: not name them (``linkage.<name>.dlopen``; with ``dlopen_order``; cuDNN is added by the probe)
    dlopens: Tuple[str, ...] = ()
    #: the libraries holding its precompiled kernels: (directory relative to site-packages, file names or name
    #: prefixes ending in "*"), newest layout first (``framework.<name>.gpu_code``)
    kernel_libraries: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    # -- how ``envdoctor install <recipe>`` installs it (with ``recipe``) -------------------------------------------
    install: Install = Install()


_FOUND: Dict[str, Framework] = {}


def discover() -> Tuple[Framework, ...]:
    """Every plug-in module of this package (each one's ``FRAMEWORK``), in their order."""
    for info in pkgutil.iter_modules(__path__, __name__ + "."):
        module = importlib.import_module(info.name)
        fw = getattr(module, "FRAMEWORK", None)
        if isinstance(fw, Framework):
            _FOUND[fw.name] = fw
    return tuple(sorted(_FOUND.values(), key=lambda f: (f.order, f.name)))


FRAMEWORKS: Tuple[Framework, ...] = ()
BY_NAME: Dict[str, Framework] = {}
#: Frameworks a finding can name as a component, in report order.
COMPONENTS: Tuple[str, ...] = ()
#: Frameworks `envdoctor advise` answers for, in its order.
ADVISED: Tuple[str, ...] = ()
#: The frameworks whose presence means "a framework is installed" (the probe's "none installed" test).
PROBED: Tuple[str, ...] = ()
#: Package shown on another framework's line -> that framework.
COMPANIONS: Dict[str, str] = {}
#: Install recipe -> framework.
RECIPES: Dict[str, str] = {}
#: Matrix tables of the frameworks (``envdoctor/matrix/data/<area>.json``).
MATRIX_AREAS: Tuple[str, ...] = ()


def register() -> None:
    """Find the plug-ins (again: a test that adds one to this package's path calls it before anything else
    reads the lists) and derive the lists above from them."""
    global FRAMEWORKS, BY_NAME, COMPONENTS, ADVISED, PROBED, COMPANIONS, RECIPES, MATRIX_AREAS
    FRAMEWORKS = discover()
    BY_NAME = {f.name: f for f in FRAMEWORKS}
    COMPONENTS = tuple(f.name for f in FRAMEWORKS if f.component)
    ADVISED = tuple(f.name for f in FRAMEWORKS if f.advise)
    PROBED = tuple(f.name for f in FRAMEWORKS if f.counts)
    COMPANIONS = {f.name: f.companion_of for f in FRAMEWORKS if f.companion_of}
    RECIPES = {f.recipe: f.name for f in FRAMEWORKS if f.recipe}
    MATRIX_AREAS = tuple(f.matrix_area for f in FRAMEWORKS if f.matrix_area)


def having(flag: str) -> Tuple[str, ...]:
    """The frameworks (names) whose capability ``flag`` is set, in their order."""
    return tuple(f.name for f in FRAMEWORKS if getattr(f, flag))


def ordered_by(field: str) -> Tuple[str, ...]:
    """The frameworks (names) that have an ``<x>_order`` ``field``, in that order."""
    return tuple(f.name for f in sorted((f for f in FRAMEWORKS if getattr(f, field) is not None),
                                        key=lambda f: getattr(f, field)))


def of_distribution(name: str) -> Optional[Framework]:
    """The framework a Python distribution (a PyPI project name, any spelling) installs, else None."""
    key = re.sub(r"[-_.]+", "-", name).lower()
    for f in FRAMEWORKS:
        if f.distributions and re.fullmatch(f.distributions, key):
            return f
    return None


def cpu_only(name: str) -> bool:
    """Is this distribution a CPU-only build of its framework whatever the machine (``onnxruntime``,
    ``tensorflow-cpu``, ``paddlepaddle``...)?"""
    key = re.sub(r"[-_.]+", "-", name).lower()
    f = of_distribution(key)
    return bool(f and f.cpu_distributions and re.fullmatch(f.cpu_distributions, key))


register()
