"""Every NVML return code, at initialisation, at the GPU count, for a GPU's handle and for one call of
a GPU, through the real nvidia-ml-py binding and envdoctor's NVML worker against the fake
libnvidia-ml.so.1 (tests/fakenvml), judged on two machines: the live H100 capture (an NVIDIA GPU bound
to ``nvidia`` on its PCI bus) and the Debian 12 machine without any GPU.

On the GPU machine every failure at init, count or handle fails the node (exit 1) with a finding
that names the code; a per-call code fails it when it means trouble (NVIDIA's meaning, in
envdoctor/checks/gpus.py), while the answers that only say a question does not apply
(NOT_SUPPORTED, an old driver's FUNCTION_NOT_FOUND...) leave it passing."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys

import pytest

from envdoctor.checks.gpus import describe
from envdoctor.host.privacy import Scrubber
from envdoctor.host.snapshot import SnapshotHost
from envdoctor.report import diagnose

from .fakenvml.build import build, fake_env, load_answers, write_answers
from .sick_variants import LIVE, NVML_ERRORS, init_expect, load

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOGPU = os.path.join(ROOT, "tests", "machines", "debian12-nogpu", "snapshot.json")
POSITIONS = ("init", "count", "handle", "call")


def _answers(position, code):
    doc = dict(load_answers("h100.json"))
    # The live capture's bus address and driver (its torch needs the driver's CUDA 13.0).
    doc["device.0.pci"] = {"bus_id": "00000000:00:06.0", "device_id": "0x233010DE"}
    doc.update({"system.driver_version": "580.159.04", "system.cuda_driver_version": 13000})
    key = {"init": "init.error", "count": "device_count.error", "handle": "device.0.handle.error",
           "call": "device.0.temperature.error"}[position]
    doc[key] = code
    return doc


@pytest.fixture(scope="module")
def nvml_answers(tmp_path_factory):
    """{(position, code name): the NVML worker's answers}, all from one interpreter."""
    try:
        lib = build(str(tmp_path_factory.mktemp("fakenvml")))
    except RuntimeError as exc:
        pytest.skip(f"cannot build the fake NVML library: {exc}")
    folder = tmp_path_factory.mktemp("answers")
    for position in POSITIONS:
        for name, code in NVML_ERRORS.items():
            write_answers(_answers(position, code), str(folder / f"{position}-{name}.txt"))
    env = fake_env(lib, str(folder / "unused"))
    r = subprocess.run([sys.executable, "-m", "tests.fakenvml.batch", str(folder)], capture_output=True, text=True,
                       cwd=ROOT, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    return {tuple(k.split("-", 1)): v for k, v in got.items()}


def _judge(machine, data):
    doc = load(LIVE) if machine == "gpu" else load(NOGPU)
    doc = copy.deepcopy(doc)
    doc["nvml"] = {"data": data, "duration": 0.01}
    return diagnose(SnapshotHost(doc, machine), scrubber=Scrubber(include_host=True))


CASES = [(p, n) for p in POSITIONS for n in NVML_ERRORS]


@pytest.mark.parametrize("machine", ["gpu", "nogpu"])
@pytest.mark.parametrize("position,name", CASES, ids=["%s-%s" % (p, n[len("NVML_ERROR_"):]) for p, n in CASES])
def test_every_nvml_code_everywhere(nvml_answers, machine, position, name):
    data = nvml_answers[(position, name)]
    # The binding and the worker carried the code through unchanged.
    key = {"init": "init", "count": "device_count", "handle": "device.0.handle", "call": "device.0.temperature"}
    assert data[key[position]] == {"error": name, "code": NVML_ERRORS[name]}
    report = _judge(machine, data)
    codes = {f.code: f for f in report.findings}
    errors = {c for c, f in codes.items() if f.severity == "error"}
    row = describe(name)
    if position == "init":
        expect = init_expect(name)
        if machine == "gpu":
            assert report.exit_code == 1 and expect in errors, sorted(codes)
        elif name == "NVML_ERROR_LIBRARY_NOT_FOUND":
            assert report.exit_code == 0 and "gpu.none" in codes  # no driver, no GPU: a CPU machine
        elif name == "NVML_ERROR_LIB_RM_VERSION_MISMATCH":
            assert report.exit_code == 1 and expect in errors  # the installed driver is broken either way
        else:
            # No NVIDIA device anywhere: the failure is reported, but cannot stop a GPU job.
            assert report.exit_code == 0 and codes[expect].severity == "warning", sorted(codes)
        if expect == "driver.nvml_failed":  # the generic finding names the code, its meaning and fix
            f = codes[expect]
            assert name in f.title and row.meaning in f.title and row.fix in f.detail
        return
    # NVML started: its answers about the GPUs are judged the same on both machines.
    if position == "count":
        assert report.exit_code == 1 and "gpu.count_failed" in errors
        assert row.meaning in codes["gpu.count_failed"].title
    elif name == "NVML_ERROR_GPU_IS_LOST":
        assert report.exit_code == 1 and "gpu.lost" in errors
        assert codes["gpu.lost"].title.startswith("GPU 0 (PCI %s" % ("0000:00:06.0" if machine == "gpu" else ""))
    elif position == "handle" or row.trouble:
        assert report.exit_code == 1 and "gpu.nvml_call_failed" in errors, sorted(codes)
        assert name[len("NVML_ERROR_"):] in codes["gpu.nvml_call_failed"].title
        assert row.meaning in codes["gpu.nvml_call_failed"].detail
    else:
        assert "gpu.nvml_call_failed" not in codes and "gpu.lost" not in codes
        if machine == "gpu":
            assert report.exit_code == 0, [(f.code, f.title) for f in report.findings if f.severity == "error"]
