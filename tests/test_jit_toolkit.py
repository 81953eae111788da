"""Packages that compile their CUDA code at run time with the machine's nvcc (matrix/data/jit_toolkits.json:
Jittor): the toolkit they would use against the oldest CUDA they support (compat.jit-toolkit,
framework.jit_toolkit_below_minimum)
and the host compiler they pass nvcc as -ccbin against nvcc's GCC limit (compat.host-compiler-and-os,
compiler.gcc_too_new_for_cuda).

Machines (the corpus' rebuilds of Jittor's own threads; the variants change only the environment or add a directory):
- CUDA80: Jittor/jittor#251, Jittor 1.2.3.73 with the system CUDA 8.0 (nvcc 8.0.61 at /usr/local/cuda/bin/nvcc); the
  maintainers: 'we support cuda version >= 10.0, you can upgrade it by command: python3 -m jittor_utils.install_cuda'.
- GXX93: Jittor/jittor#182, CUDA 10.1 with gcc 7.5.0 but g++ 9.3.0 (Ubuntu 20.04, update-alternatives for gcc only);
  nvcc stops with 'gcc versions later than 8 are not supported!' because Jittor passes -ccbin=g++.
- GCC1020: Jittor/jittor#153, CUDA 10.0 with gcc and g++ 10.2.0; the maintainers: install g++-7 and
  `export cc_path=g++-7`.
How Jittor picks nvcc and its host compiler is its own source (python/jittor/compiler.py, python/jittor_utils/
__init__.py: ~/.cache/jittor/jtcuda first, then $nvcc_path or nvcc on PATH; -ccbin=$cc_path, else g++ on PATH)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from envdoctor.checks import CheckContext, run_checks
from envdoctor.host.snapshot import SnapshotHost

from .conftest import corpus_snapshot, probe_facts

CUDA80 = ("b87c-ubuntu1604-gtx1080ti-driver45010204-anaconda-py37-jittor12373-with-cuda80-nvcc-below-jittor-cuda10-"
          "minimum")
GXX93 = ("b87c-ubuntu2004-rtx2070super-driver45010204-conda-py37-jittor-cuda101-nvcc-with-gxx93-unsupported-gnu-"
         "version-needs-gcc7")
GCC1020 = ("b87c-ubuntu2010-rtx2070super-driver45010204-anaconda-py37-jittor1211-cuda100-nvcc-with-gcc1020-too-new-"
           "needs-cc-path-gxx7")
BELOW = "framework.jit_toolkit_below_minimum"
GCC = "compiler.gcc_too_new_for_cuda"


#: Ubuntu 20.04's g++-7 and g++-9 (7.5.0-6ubuntu2, 9.3.0-17ubuntu1~20.04) answer `--version` with their own name
BANNERS = {"/usr/bin/g++-7": "g++-7 (Ubuntu 7.5.0-6ubuntu2) 7.5.0\n",
           "/usr/bin/g++-9": "g++-9 (Ubuntu 9.3.0-17ubuntu1~20.04) 9.3.0\n"}


def _findings(case: str, code: str, env: Optional[Dict[str, str]] = None, own_toolkit: bool = False,
              drop_jittor: bool = False) -> List[Any]:
    doc: Dict[str, Any] = corpus_snapshot(case)
    doc["environ"].update(env or {})
    for path, banner in BANNERS.items():
        doc["commands"].append({"argv": [path, "--version"], "duration": 0.0, "error": None, "message": "",
                                "returncode": 0, "stderr": "", "stdout": banner, "timed_out": False})
    if own_toolkit:  # what `python3 -m jittor_utils.install_cuda` leaves: a toolkit of Jittor's own, which it prefers
        home = doc["environ"]["HOME"]
        doc["dirs"][home]["entries"].append(".cache")
        doc["dirs"][home + "/.cache"] = {"entries": ["jittor"]}
        doc["dirs"][home + "/.cache/jittor"] = {"entries": ["jtcuda"]}
        doc["dirs"][home + "/.cache/jittor/jtcuda"] = {"entries": []}
    if drop_jittor:
        for d in list(doc["dirs"]):
            if d.endswith("site-packages"):
                doc["dirs"][d]["entries"] = [e for e in doc["dirs"][d]["entries"] if not e.startswith("jittor")]
    return [f for f in run_checks(CheckContext(probe_facts(SnapshotHost(doc)), [])) if f.code == code]


def test_jittor_with_cuda_80_is_an_error_naming_the_toolkit_the_floor_and_jittors_own_installer() -> None:
    (f,) = _findings(CUDA80, BELOW)
    assert f.severity == "error"
    assert "Jittor 1.2.3.73" in f.title and "8.0.61" in f.title and "10.0" in f.title
    assert "/usr/local/cuda/bin/nvcc" in f.detail
    assert f.fix.commands == ["python3 -m jittor_utils.install_cuda"]
    assert "github.com/Jittor/jittor" in f.source["url"]


def test_quiet_with_jittors_own_toolkit_or_a_toolkit_it_supports_or_without_jittor() -> None:
    assert _findings(CUDA80, BELOW, own_toolkit=True) == []  # Jittor takes ~/.cache/jittor/jtcuda first
    assert _findings(GXX93, BELOW) == []  # CUDA 10.1
    assert _findings(GCC1020, BELOW) == []  # CUDA 10.0: the floor itself
    assert _findings(CUDA80, BELOW, drop_jittor=True) == []


def test_an_nvcc_named_by_nvcc_path_that_no_toolkit_read_holds_is_not_judged() -> None:
    assert _findings(CUDA80, BELOW, env={"nvcc_path": "/opt/elsewhere/bin/nvcc"}) == []


def test_gxx_newer_than_gcc_is_judged_as_the_compiler_jittor_passes_to_nvcc() -> None:
    (f,) = _findings(GXX93, GCC)
    assert f.severity == "error"
    assert "9.3.0" in f.title and "/usr/bin/g++" in f.title and "Jittor" in f.title
    assert "cc_path" in f.detail
    # the g++ beside the default gcc 7.5.0 is 9.3.0: the fix names g++-7, never /usr/bin/g++
    assert f.fix.commands == ["export cc_path=/usr/bin/g++-7"]


def test_quiet_once_cc_path_names_a_gxx_nvcc_accepts_and_said_when_it_names_a_newer_one() -> None:
    assert _findings(GXX93, GCC, env={"cc_path": "/usr/bin/g++-7"}) == []  # the thread's fix
    (f,) = _findings(GXX93, GCC, env={"cc_path": "/usr/bin/g++-9"})
    assert "/usr/bin/g++-9" in f.title and f.fix.commands == ["export cc_path=/usr/bin/g++-7"]
    # a compiler that cannot be asked (no answer recorded) is not judged: gcc 7.5.0 fits
    assert _findings(GXX93, GCC, env={"cc_path": "/usr/local/bin/g++-custom"}) == []


def test_quiet_when_jittor_uses_its_own_toolkit_or_is_not_installed() -> None:
    assert _findings(GXX93, GCC, own_toolkit=True) == []
    assert _findings(GXX93, GCC, drop_jittor=True) == []  # plain nvcc runs gcc 7.5.0, which CUDA 10.1 accepts


def test_gcc_and_gxx_both_too_new_name_nvcc_ccbin_and_jittors_cc_path() -> None:
    (f,) = _findings(GCC1020, GCC)
    assert "10.2.0" in f.title
    assert "Jittor also passes /usr/bin/g++" in f.detail
    assert f.fix.commands == ["sudo apt-get install gcc-7 g++-7", "export NVCC_CCBIN=/usr/bin/g++-7",
                              "export cc_path=/usr/bin/g++-7"]
