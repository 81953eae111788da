"""A hung daemon or a broken nvcc is a finding, not only an "unknown" line in the report.

Found running envdoctor beside the peers with fake programs first on PATH: a `docker` that never
answers and an `nvcc` that prints garbage and exits 1 left the run at "0 errors, 0 warnings", exit 0,
so a fleet's pre-flight check keyed on findings would pass a broken node.
"""

from __future__ import annotations

from envdoctor.checks import CheckContext
from envdoctor.checks.tools import hung_programs, nvcc_runs

from .conftest import make_host, probe_facts


def _findings(check, host):
    return list(check(CheckContext(probe_facts(host), [])))


def test_an_nvcc_that_fails_is_a_warning_naming_it():
    host = make_host(files={"/usr/bin/nvcc": ""}, environ={"PATH": "/usr/bin"},
                     commands=[{"argv": ["/usr/bin/nvcc", "--version"], "returncode": 1,
                                "stdout": "\x02\x03garbage\n"}])
    [f] = _findings(nvcc_runs, host)
    assert f.code == "cuda.nvcc_broken" and f.severity == "warning"
    assert "/usr/bin/nvcc" in f.title and "exit code 1" in f.title
    assert "type -a nvcc" in f.fix.commands


def test_no_nvcc_or_a_working_one_is_quiet():
    assert _findings(nvcc_runs, make_host(environ={"PATH": "/usr/bin"})) == []
    banner = ("nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2024 NVIDIA Corporation\n"
              "Built on Thu_Mar_28_02:18:24_PDT_2024\nCuda compilation tools, release 12.4, V12.4.131\n"
              "Build cuda_12.4.r12.4/compiler.34097967_0\n")
    host = make_host(files={"/usr/bin/nvcc": ""}, environ={"PATH": "/usr/bin"},
                     commands=[{"argv": ["/usr/bin/nvcc", "--version"], "returncode": 0, "stdout": banner}])
    assert _findings(nvcc_runs, host) == []


def test_a_hung_nvcc_is_a_hung_program_with_where_to_look():
    host = make_host(files={"/usr/bin/nvcc": ""}, environ={"PATH": "/usr/bin"},
                     commands=[{"argv": ["/usr/bin/nvcc", "--version"], "timed_out": True, "duration": 15.0}])
    [f] = _findings(hung_programs, host)
    assert f.code == "system.command_hung" and f.components == ["cuda"]
    assert "hung" in f.title and "15.0s" in f.title
    assert any("state D" in f.fix.text or "awk" in c for c in f.fix.commands)
    assert _findings(nvcc_runs, host) == []  # said once, as a hang


def test_a_hung_nvml_is_left_to_the_driver_check():
    host = make_host(nvml={"error": "timed_out", "message": "NVML did not answer within 10.0s"})
    assert _findings(hung_programs, host) == []
