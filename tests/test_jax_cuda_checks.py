"""framework.jax_cuda_library_too_old: jax's own start-up comparison of the CUDA libraries it loads with its build
(jax/_src/xla_bridge.py _check_cuda_versions from jax 0.4.17; jax_plugins/cuda/__init__.py from 0.6.1), per
release from matrix jax_cuda_checks.

The machine is corpus case jax0424-pip-ptxas-123-driver535-cuda122 (jax-ml/jax#19821: jax 0.4.24 with
jax[cuda12_pip], the nvidia-*-cu12 12.3 wheels, driver 535). The variants add what the issue 23 class is about: a
system CUDA 12.x whose lib64 is on LD_LIBRARY_PATH ahead of the wheels (the toolkit's own file names,
libcudart.so.12.1.105 and libcublas.so.12.1.3.1 for CUDA 12.1, libcudart.so.12.0.146 for 12.0), or an older
nvidia-cuda-runtime-cu12 wheel (12.1.105, a release on PyPI)."""

from __future__ import annotations

import json
from typing import Any, Dict, List

import pytest

from envdoctor.matrix import jax_cuda, load
from tests.conftest import corpus_snapshot, snapshot_findings

CASE = "jax0424-pip-ptxas-123-driver535-cuda122"
CODE = "framework.jax_cuda_library_too_old"
SITE = "/home/user/anaconda3/lib/python3.12/site-packages"
#: the file names of CUDA 12.0 and 12.1's lib64 (the toolkit installers' libcudart.so.12 -> libcudart.so.12.X.Y)
SYSTEM = {"12.1": {"libcudart.so.12": "libcudart.so.12.1.105", "libcublas.so.12": "libcublas.so.12.1.3.1"},
          "12.0": {"libcudart.so.12": "libcudart.so.12.0.146", "libcublas.so.12": "libcublas.so.12.0.2.224"}}


def _machine(jax: str = "0.4.24", system: str = "", runtime_wheel: str = "") -> Dict[str, Any]:
    doc = corpus_snapshot(CASE)
    if runtime_wheel:
        text = json.dumps(doc).replace("nvidia_cuda_runtime_cu12-12.3.101", "nvidia_cuda_runtime_cu12-" + runtime_wheel)
        doc = json.loads(text)
        meta = "%s/nvidia_cuda_runtime_cu12-%s.dist-info/METADATA" % (SITE, runtime_wheel)
        doc["files"][meta]["text"] = doc["files"][meta]["text"].replace("12.3.101", runtime_wheel)
    if jax != "0.4.24":
        doc = json.loads(json.dumps(doc).replace("0.4.24", jax))
    if system:
        lib64 = "/usr/local/cuda-%s/lib64" % system
        names = SYSTEM[system]
        doc["dirs"]["/usr/local"] = {"entries": ["cuda-" + system]}
        doc["dirs"]["/usr/local/cuda-" + system] = {"entries": ["lib64"]}
        doc["dirs"][lib64] = {"entries": sorted(list(names) + list(names.values()))}
        for link, real in names.items():
            doc["links"]["%s/%s" % (lib64, link)] = {"target": real}
            doc["files"]["%s/%s" % (lib64, real)] = {"text": ""}
        doc["environ"]["LD_LIBRARY_PATH"] = lib64
    return doc


def _found(doc: Dict[str, Any]) -> List[Any]:
    return [f for f in snapshot_findings(doc) if f.code == CODE]


def test_the_pip_wheels_of_the_build_are_quiet() -> None:
    assert _found(_machine()) == []


def test_system_cuda121_first_on_ld_library_path_is_refused_by_jax_0424_built_with_122() -> None:
    found = _found(_machine(system="12.1"))
    by_soname = {f.title.split(" loads ")[1].split(" ")[0]: f for f in found}
    assert sorted(by_soname) == ["libcublas.so.12", "libcudart.so.12"]
    f = by_soname["libcudart.so.12"]
    assert f.severity == "error"
    assert "12.1.105" in f.title and "CUDA 12.2" in f.title and "/usr/local/cuda-12.1/lib64" in f.title
    assert "Outdated CUDA installation found" in f.detail and "CPU" in f.detail
    assert f.fix.commands[0].startswith("export LD_LIBRARY_PATH=") and "grep -vx /usr/local/cuda-12.1/lib64" in \
        f.fix.commands[0]
    assert "jax-v0.4.21/jax/_src/xla_bridge.py" in str(f.source["url"])
    assert "12.1.3.1" in by_soname["libcublas.so.12"].title


def test_an_older_runtime_wheel_is_named_with_its_upgrade() -> None:
    found = _found(_machine(runtime_wheel="12.1.105"))
    assert len(found) == 1 and "12.1.105" in found[0].title
    assert found[0].fix.commands == ["pip install -U 'nvidia-cuda-runtime-cu12>=12.2'"]


@pytest.mark.parametrize("jax,system,fires", [
    ("0.4.30", "12.1", False),   # from 0.4.26 jax only requires CUDA >= 12.1 (min_supported_version=12010)
    ("0.4.30", "12.0", True),    # ... and refuses 12.0
    ("0.4.16", "12.1", False),   # before 0.4.17 jaxlib has no cuda_versions: nothing is compared
    ("0.5.3", "12.0", True),     # 0.5.3 still calls _check_cuda_versions from make_gpu_client
    ("0.6.0", "12.0", False),    # 0.6.0 defines _check_cuda_versions and calls it nowhere
])
def test_per_release_rules(jax: str, system: str, fires: bool) -> None:
    found = _found(_machine(jax=jax, system=system))
    assert bool(found) is fires
    if fires:
        assert all("jax's minimum 12.1" in f.title for f in found)


def test_every_row_quotes_jax_source_at_a_release_tag() -> None:
    rows = load("jax_cuda_checks")
    assert jax_cuda.checks_for("0.4.16") is None and jax_cuda.checks_for("0.4.17") is rows[0]
    for row in rows:
        assert "/blob/jax-v0." in row["source"]["url"] and row["quote"]
    assert jax_cuda.validate([{"jax": ">=1", "refuses": "yes", "quote": "", "libraries": [
        {"name": "CUDA", "library": "cudart", "against": "minimum", "minimum": "twelve"}]}]) == [
        "row 0: refuses must be true or false", "row 0: quote must hold JAX's own source text",
        "row 0 library 0: minimum 'twelve' is not a version"]
    assert jax_cuda.validate([{"jax": ">=1", "refuses": False, "quote": "q", "runs": False, "libraries": [
        {"name": "CUDA", "library": "cudart", "against": "never"}], "skipped_by": {"variable": "x"}}]) == [
        "row 0: skipped_by needs the variable's name and JAX's own source text",
        "row 0: a release that runs no check compares no library"]


def test_cudnn_is_left_to_the_cudnn_version_check() -> None:
    """Corpus case jax0434-cuda12-local-system-cudnn900-needs-911: jax 0.4.34 with the system's cuDNN 9.0.0. jax's
    own min_supported_version=9100 is cuDNN 8's encoding, which cuDNN 9's 90000 passes; XLA refuses the older minor
    itself, and that check names it."""
    codes = [f.code for f in snapshot_findings(corpus_snapshot("jax0434-cuda12-local-system-cudnn900-needs-911"))
             if f.severity == "error"]
    assert "cudnn.too_old_for_framework" in codes and CODE not in codes


def test_jax_skip_cuda_constraints_check_makes_it_a_warning_where_jax_honours_it() -> None:
    """From 0.4.26 jax skips the comparison when JAX_SKIP_CUDA_CONSTRAINTS_CHECK is set (xla_bridge.py 0.4.26-0.5.3,
    jax_plugins/cuda 0.6.1 on): jax starts, on the library its check refuses, so the finding stays, as a warning
    that says why; before 0.4.26 jax reads no such variable and still refuses."""
    doc = _machine(jax="0.4.30", system="12.0")
    doc["environ"]["JAX_SKIP_CUDA_CONSTRAINTS_CHECK"] = "1"
    found = _found(doc)
    assert found and all(f.severity == "warning" for f in found)
    assert all("JAX_SKIP_CUDA_CONSTRAINTS_CHECK is set, so jax starts with it unchecked" in f.title for f in found)
    assert "not at start-up" in found[0].detail
    old = _machine(system="12.1")
    old["environ"]["JAX_SKIP_CUDA_CONSTRAINTS_CHECK"] = "1"
    assert {f.severity for f in _found(old)} == {"error"}
