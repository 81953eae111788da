"""advise over every GPU product x supported driver x Python 3.8-3.14 x OS recipe target recommends only what
installs and runs.

Each recommendation is checked two ways:

* against the rules, recomputed here from the matrix tables (not through advise's own judge): the
  release's (or wheel variant's) Python range admits the interpreter; the build has code for the GPU
  (torch: its arch list; the others: the first compute capability the CUDA release it was built with
  targets, and the framework's own floor); the driver knows the GPU's architecture and meets the build's
  CUDA major; the cuDNN pip resolves for it (the newest the command admits) still supports the GPU;
* planned through the install recipe, as ``envdoctor install COMPONENT --version V --dry-run`` does, in
  process, for every OS target the recipes support: the plan must be made (no refusal).

GPUs are the products of gpus.json; drivers are the GA drivers of every CUDA release from 11.4 on (the
R470 branch and later).  The machine facts come from the probes over a fake NVML answer (no GPU can run
in CI; tests/conftest.make_host is the same seam the live probes use).
"""

from __future__ import annotations

import functools
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envdoctor import matrix
from envdoctor.advise import Target, advise
from envdoctor.facts import Fact, Facts
from envdoctor.matrix import frameworks as fw
from envdoctor.matrix import hardware as hw
from envdoctor.probes import run_probes
from envdoctor.recipes import SUPPORTED_TARGETS, RecipeError, Request, load_recipe, parse_target
from tests.conftest import make_host

PYTHONS = ["3.%d" % m for m in range(8, 15)]
PY = "/opt/venv/bin/python"
OS_RELEASE = 'ID=ubuntu\nVERSION_ID="22.04"\nNAME="Ubuntu"\n'


def drivers() -> List[str]:
    return sorted({r["min_driver_linux"] for r in hw.cuda_releases() if Version(r["version"]) >= Version("11.4")},
                  key=Version)


def gpu_ccs() -> List[str]:
    return sorted({g["cc"] for g in matrix.load("gpus")}, key=Version)


def machine(driver: str, cc: str, python: str) -> Facts:
    """The facts the probes report for a machine with this driver, one GPU of this compute capability and
    this Python."""
    return Facts(list(gpu_machine(driver, cc)) + [Fact("python.version", python + ".0")])


@functools.lru_cache(maxsize=None)
def gpu_machine(driver: str, cc: str) -> Tuple[Fact, ...]:
    major, minor = (int(p) for p in cc.split("."))
    data = {"init": {"value": True}, "system.driver_version": {"value": driver}, "device_count": {"value": 1},
            "device.0.handle": {"value": True}, "device.0.name": {"value": "NVIDIA GPU"},
            "device.0.compute_capability": {"value": [major, minor]}}
    host = make_host(files={"/etc/os-release": OS_RELEASE, "/sys/module/nvidia/version": driver + "\n"},
                     nvml={"data": data})
    return tuple(f for r in run_probes(host, only=["os", "driver", "gpu"], parallel=False) for f in r.facts)


# --------------------------------------------------------------------------- the rules, recomputed


def newest_cudnn_admitted(spec_text: str) -> Optional[str]:
    """The newest cuDNN pip would install under a specifier: a row version of cudnn.json, or a release
    newer than every row of its major (pip takes the newest on the index), judged by that major's last row."""
    spec = SpecifierSet(spec_text)
    rows = [r["version"] for r in matrix.load("cudnn")]
    beyond = sorted({"%d.999" % Version(v).major for v in rows} | {"%d.%d.999" % Version(v).release[:2] for v in rows})
    admitted = [v for v in rows + beyond if spec.contains(v, prereleases=True)]
    exact = [s.version for s in spec if s.operator == "=="]
    if exact:
        return exact[0]
    return max(admitted, key=Version) if admitted else None


def cudnn_runs(spec_text: str, cc: str) -> bool:
    version = newest_cudnn_admitted(spec_text)
    if version is None:
        return False
    row = hw.cudnn_support_row(version)
    return row is None or Version(cc) >= Version(row["cc_min"])


def pins_in(command: str) -> Dict[str, str]:
    """Extra requirements the command adds, e.g. '"nvidia-cudnn-cu12<9.11"' -> {"nvidia-cudnn-cu12": "<9.11"}."""
    out = {}
    for token in command.split('"'):
        if token.startswith("nvidia-cudnn-cu"):
            name = token.split("<")[0].split(">")[0].split("=")[0]
            out[name] = token[len(name):]
    return out


def broken_rules(name: str, rec: Dict[str, Any], driver: str, cc: str, python: str) -> List[str]:
    problems = []
    need = hw.min_driver_for_cc(cc)
    if need and Version(driver) < Version(need[0]):
        problems.append(f"driver {driver} predates cc {cc} (needs {need[0]})")
    pins = pins_in(rec["command"])
    if name == "torch":
        row = fw.torch_release(rec["release"])
        var = fw.torch_variant(rec["release"], rec["variant"])
        py, cuda = row["python"], var["cuda"]
        if not fw.torch_supports_arch(var, cc):
            problems.append(f"torch {rec['release']} {rec['variant']} has no code for {cc}")
        if var.get("cudnn") and Version(cuda) >= Version("11.7") and not cudnn_runs("==" + var["cudnn"], cc):
            problems.append(f"its cuDNN {var['cudnn']} does not support {cc}")
    elif name == "tensorflow":
        row = fw.tensorflow_release(rec["release"])
        py, cuda = row["python"], row["cuda"]
        if row.get("cudnn_pip"):
            spec = row["cudnn_pip"] + "".join("," + p for p in pins.values())
            if not cudnn_runs(spec, cc):
                problems.append(f"the cuDNN pip installs ({spec}) does not support {cc}")
    elif name == "jax":
        row = fw.jax_release(min((s.version for s in SpecifierSet(rec["release"]) if s.operator == ">="),
                                 key=Version))
        var = next(v for v in row["variants"] if v["tag"] == rec["variant"])
        py, cuda = var.get("python") or row["python"], var["cuda_built"]
        if Version(cc) < Version(row["min_sm"]):
            problems.append(f"jax needs sm {row['min_sm']}")
        if "_local" not in var["pip_extra"]:
            spec = var["cudnn"] + "".join("," + p for p in pins.values())
            if not cudnn_runs(spec, cc):
                problems.append(f"the cuDNN pip installs ({spec}) does not support {cc}")
    elif name == "onnxruntime":
        row = next(r for r in matrix.load("onnxruntime") if r["version"] == rec["release"])
        py, cuda = row.get("python"), rec["cuda"]
        if row.get("installable") is False or not py:
            problems.append(f"onnxruntime-gpu {rec['release']} has no wheels on PyPI")
    elif name == "cupy":
        row = fw.cupy_release(rec["release"])
        py, cuda = row["python"], rec["cuda"]
        if Version(cc) < Version(row["min_cc"]):
            problems.append(f"cupy needs cc {row['min_cc']}")
    else:  # paddle: its rows carry their own Python ranges and CUDA builds
        row = fw.paddle_release(rec["release"])
        py, cuda = row.get("python"), rec["cuda"]
    if py and not SpecifierSet(py).contains(python):
        problems.append(f"{name} {rec['release']} needs Python {py}, not {python}")
    if name != "torch":
        crow = hw.cuda_release(cuda)
        if crow is not None and Version(cc) < Version(crow["cc_min"]):
            problems.append(f"built with CUDA {cuda}, which targets {crow['cc_min']}+, not {cc}")
    floor = hw.min_driver_for_cuda(cuda, minor_compat=True)
    if floor and Version(driver) < Version(floor):
        problems.append(f"CUDA {cuda} needs driver {floor}, not {driver}")
    return problems


# --------------------------------------------------------------------------- planning through the recipes


RECIPE = {"torch": "pytorch", "tensorflow": "tensorflow", "jax": "jax"}


def request_for(name: str, rec: Dict[str, Any]) -> Request:
    if name == "torch":
        cuda = fw.torch_variant(rec["release"], rec["variant"])["cuda"]
        return Request("pytorch", rec["release"], "pip", python=PY, options={"cuda": cuda})
    if name == "jax":
        low = min((s.version for s in SpecifierSet(rec["release"]) if s.operator == ">="), key=Version)
        return Request("jax", low, "pip", python=PY, options={"cuda": rec["variant"][4:]})
    return Request("tensorflow", rec["release"], "pip", python=PY)


@functools.lru_cache(maxsize=None)
def plan_refusal(name: str, release: str, variant: str, driver: str, cc: str, python: str, os_label: str
                 ) -> Optional[str]:
    rec = {"release": release, "variant": variant}
    try:
        load_recipe(RECIPE[name]).plan(request_for(name, rec), parse_target(os_label), machine(driver, cc, python))
    except RecipeError as exc:
        return str(exc)
    return None


# --------------------------------------------------------------------------- the sweep


def recommendations(cc: str) -> Iterator[Tuple[str, str, Any]]:
    """advise's answer for every driver and Python with one GPU of compute capability ``cc``: (driver, Python,
    framework answer) for each framework it gives an install command for."""
    for driver in drivers():
        for python in PYTHONS:
            answer = advise(Target(driver=driver, cc=cc, python=python, os_id="ubuntu", version="22.04"))
            for f in answer.frameworks:
                if f.command:
                    yield driver, python, f


def sweep(cc: str) -> Tuple[int, List[str]]:
    checked, failures = 0, []
    for driver, python, f in recommendations(cc):
        rec = f.to_dict()
        checked += 1
        where = f"cc {cc}, driver {driver}, Python {python}: {f.framework} {f.release} {f.variant}"
        failures += [f"{where}: {p}" for p in broken_rules(f.framework, rec, driver, cc, python)]
        if f.framework in RECIPE:
            for os_label in SUPPORTED_TARGETS:
                # only TensorFlow's recipe reads the interpreter's version from the facts
                why = plan_refusal(f.framework, f.release or "", f.variant or "", driver, cc,
                                   python if f.framework == "tensorflow" else "3.12", os_label)
                if why:
                    failures.append(f"{where} on {os_label}: install --dry-run refuses: {why}")
    return checked, failures


# one case per compute capability, so that the sweep is spread over the test workers
@pytest.mark.slow
@pytest.mark.parametrize("cc", gpu_ccs())
def test_every_recommendation_installs_and_runs(cc):
    checked, failures = sweep(cc)
    kinds = sorted({f.split(": ", 2)[-1][:90] for f in failures})
    assert not failures, f"{len(failures)} of {checked} recommendations break a rule:\n" + "\n".join(kinds[:40])


@pytest.mark.slow
def test_the_sweep_checks_over_a_thousand_recommendations():
    assert sum(1 for cc in gpu_ccs() for _ in recommendations(cc)) > 1000


def test_the_sweep_covers_every_product_and_python():
    assert len(gpu_ccs()) >= 10 and "12.0" in gpu_ccs() and "6.1" in gpu_ccs()
    assert "560.28.03" in drivers() and "470.42.01" in drivers()


# --------------------------------------------------------------------------- cases the issue named


def test_python_38_gets_no_uninstallable_jax_or_onnxruntime():
    a = advise(Target(driver="580.65.06", cc="9.0", python="3.8"))
    jax, ort = a.framework("jax"), a.framework("onnxruntime")
    assert jax.command is None or SpecifierSet(
        fw.jax_release(min((s.version for s in SpecifierSet(jax.release) if s.operator == ">="),
                           key=Version))["python"]).contains("3.8")
    assert jax.command is not None and "<0.4.14" in jax.release   # the last jax with Python 3.8 wheels
    assert ort.release == "1.19"                                   # onnxruntime-gpu 1.19 is the last with cp38
    assert any("needs Python" in r for p in ort.passed_over if p["release"] == "1.20" for r in p["reasons"])


def test_cuda_13_builds_are_not_recommended_for_pascal():
    a = advise(Target(driver="580.65.06", cc="6.1", python="3.12"))
    for name in ("jax", "cupy"):
        f = a.framework(name)
        assert f.variant and "13" not in f.variant, (name, f.variant)
        assert any("CUDA 13.x, which targets compute capability 7.5" in r
                   for p in f.passed_over for r in p["reasons"]), name


def test_a_560_driver_cannot_drive_a_blackwell_geforce_card():
    a = advise(Target(driver="560.35.03", cc="12.0", python="3.12"))
    assert all(f.command is None for f in a.frameworks)
    reasons = [r for p in a.framework("torch").passed_over for r in p["reasons"]]
    assert any("predates Blackwell (compute capability 12.0)" in r and "570.26" in r for r in reasons)


def test_tensorflow_on_pascal_pins_a_cudnn_that_still_runs():
    a = advise(Target(driver="580.65.06", cc="6.1", python="3.12"))
    tf = a.framework("tensorflow")
    assert tf.release == "2.21"
    assert tf.command == 'pip install "tensorflow[and-cuda]==2.21.*" "nvidia-cudnn-cu12<9.11"'
    assert any("cuDNN 9.11 and later support compute capability 7.5" in n for n in tf.notes)
