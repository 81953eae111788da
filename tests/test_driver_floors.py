"""Driver floors that applications state for themselves (matrix area ``driver_floors``; probe ``apps``; check
``compat.driver-floors``).

The layouts are the real ones: a conda environment of RAPIDS 21.12 (conda-meta records named
``<name>-<version>-<build>.json``, builds ``cuda_11_py38_...`` / ``cuda11_...`` as rapidsai's channel names them,
RSN 11's example); Ollama as its install script lays it out (``/usr/local/bin/ollama``, runners in
``/usr/lib/ollama/cuda_v12``), ``ollama --version`` printing "ollama version is X". NVML is a stand-in (no GPU
here): the GPU's compute capability is given as a fact.
"""

from __future__ import annotations

import pytest

from envdoctor import matrix
from envdoctor.checks import CheckContext
from envdoctor.checks.compat.driver_floors import driver_floors
from envdoctor.facts import Facts, ok
from envdoctor.matrix import floors
from envdoctor.probes.apps import find_ollama, find_rapids

from .conftest import make_host

ENV = "/home/user/miniconda3/envs/rapids-21.12"


def rapids_host(release="21.12.02", build="cuda_11_py38_g06540b9b37_0"):
    meta = ENV + "/conda-meta/"
    return make_host(files={meta + "cudf-%s-%s.json" % (release, build): "{}",
                            meta + "cudatoolkit-11.0.221-h6bb024c_0.json": "{}",
                            meta + "python-3.8.12-h12debd9_0_cpython.json": "{}"},
                     environ={"CONDA_PREFIX": ENV, "HOME": "/home/user", "PATH": "/usr/bin:/bin"})


def ollama_host(version="0.30.1"):
    return make_host(files={"/usr/local/bin/ollama": "", "/usr/lib/ollama/cuda_v12/libggml-cuda.so": "",
                            "/usr/lib/ollama/cuda_v13/libggml-cuda.so": ""},
                     commands=[{"argv": ["/usr/local/bin/ollama", "--version"],
                                "stdout": "ollama version is %s\n" % version}],
                     environ={"PATH": "/usr/local/bin:/usr/bin:/bin"})


def judge(host, driver, cc=None):
    facts = [ok("driver.version", driver, "test", "driver"), ok("apps.rapids", find_rapids(host), "test", "r"),
             find_ollama(host)]
    if cc:
        facts += [ok("gpu.0.compute_capability", cc, "test", "cc"), ok("gpu.0.name", "NVIDIA GeForce GTX 1080 Ti",
                                                                            "test", "name")]
    return driver_floors(CheckContext(Facts(facts), []))


def test_every_row_is_well_formed_and_sourced():
    rows = matrix.load("driver_floors")
    assert floors.validate(rows) == []
    assert all(r["source"]["verified"] and r["source"]["quotes"] for r in rows)


def test_rapids_cuda11_below_rsn11_floor_fires():
    found = judge(rapids_host(), "450.51.06")
    assert [f.code for f in found] == ["driver.too_old_for_framework"]
    assert found[0].severity == "error"
    text = found[0].title + found[0].detail
    assert "450.51.06" in text and "450.80.02" in text and "RAPIDS 21.12" in text


@pytest.mark.parametrize("driver,release", [("450.80.02", "21.12.02"), ("460.91.03", "21.12.02"),
                                            ("450.51.06", "21.10.01")])
def test_rapids_quiet_at_or_above_the_floor_or_before_rsn11(driver, release):
    assert judge(rapids_host(release=release), driver) == []


def test_rapids_cuda12_platform_table():
    host = rapids_host(release="26.02.00", build="cuda12_py312_260204_abc_0")
    assert [f.code for f in judge(host, "525.147.05")] == ["driver.too_old_for_framework"]
    assert judge(host, "535.288.01") == []


def test_ollama_is_found_with_its_version_and_runners():
    value = find_ollama(ollama_host()).value
    assert value == {"path": "/usr/local/bin/ollama", "version": "0.30.1", "libdir": "/usr/lib/ollama",
                     "runners": ["cuda_v12", "cuda_v13"]}
    assert find_ollama(make_host(files={"/etc/os-release": ""})).value is None


def test_ollama_pascal_needs_570_from_0_30():
    found = judge(ollama_host("0.30.1"), "550.163.01", cc="6.1")
    assert [(f.code, f.severity) for f in found] == [("driver.too_old_for_framework", "warning")]
    assert "550.163.01" in found[0].title and "570" in found[0].title


@pytest.mark.parametrize("version,driver,cc", [("0.13.0", "550.163.01", "6.1"),  # its docs: 531 and newer
                                               ("0.30.1", "550.163.01", "7.5"),
                                               ("0.30.1", "570.195.03", "6.1")])
def test_ollama_quiet_where_its_docs_are_met(version, driver, cc):
    assert judge(ollama_host(version), driver, cc=cc) == []


def test_ollama_older_than_its_own_floor():
    found = judge(ollama_host("0.13.0"), "525.147.05", cc="8.6")
    assert found and "531" in found[0].title
