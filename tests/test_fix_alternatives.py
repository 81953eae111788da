"""A fix knows its steps (run in order) from its alternatives (any one of them does it).

On a driver/library mismatch the report listed `sudo reboot` and `sudo rmmod ... && sudo modprobe nvidia` one
under the other and then said "Next step: the commands under the first ERROR above, in order": a reader did
both. The machines here are corpus cases rebuilt from public threads (tests/corpus/*/README or case.json).
"""

from __future__ import annotations

import glob
import json
import os
import re

import jsonschema
from click.testing import CliRunner

from envdoctor.cli import cli
from envdoctor.findings import AnyOf, Fix

from .conftest import snapshot_report

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MISMATCH = os.path.join(HERE, "corpus", "container-image-libnvidia-ml-525-on-host-470", "snapshot.json")
CVD = os.path.join(HERE, "corpus", "cvd-export-1-in-script-single-rtx2070super", "snapshot.json")
XID79 = os.path.join(HERE, "corpus", "laptop-gpu-fallen-off-bus-xid79", "snapshot.json")


def _diagnose(snap, *args):
    return CliRunner().invoke(cli, ["diagnose", "--snapshot", snap] + list(args))


def _finding(snap, code):
    doc = json.loads(_diagnose(snap, "--format", "json").output)
    return next(f for f in doc["findings"] if f["code"] == code), doc


def test_the_driver_library_mismatch_fix_is_reboot_or_reload_not_both():
    f, doc = _finding(MISMATCH, "driver.library_mismatch")
    assert f["fix"]["steps"] == [{"any_of": [["sudo reboot"], [
        "sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia"]]}]
    assert f["fix"]["commands"] == ["sudo reboot", "sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && "
                                    "sudo modprobe nvidia"]  # the flat list older readers know, unchanged
    with open(os.path.join(ROOT, "envdoctor", "schemas", "report.schema.json")) as fh:
        jsonschema.validate(doc, json.load(fh))
    text = _diagnose(MISMATCH).output
    assert re.search(r"fix: either sudo reboot\n +or sudo rmmod", text), text
    next_step = next(ln for ln in text.splitlines() if ln.startswith("Next step:"))
    assert "in order" not in next_step and "one of" in next_step
    md = _diagnose(MISMATCH, "--format", "markdown").output
    assert "    - one of:\n      - `sudo reboot`\n      - `sudo rmmod" in md


def test_cuda_visible_devices_unset_or_name_a_gpu_then_find_where_it_is_set():
    f, _ = _finding(CVD, "gpu.cuda_visible_devices_hides_all")
    assert f["fix"]["steps"][0] == {"any_of": [["unset CUDA_VISIBLE_DEVICES"], ["export CUDA_VISIBLE_DEVICES=0"]]}
    assert f["fix"]["steps"][1]["run"].startswith("grep -rn CUDA_VISIBLE_DEVICES")
    text = _diagnose(CVD).output
    assert re.search(r"fix: either unset CUDA_VISIBLE_DEVICES\n +or export CUDA_VISIBLE_DEVICES=0\n +grep", text)
    next_step = next(ln for ln in text.splitlines() if ln.startswith("Next step:"))
    assert "in order" not in next_step and "either/or" in next_step


def test_a_lost_gpu_is_reset_or_rebooted_between_two_steps():
    f, _ = _finding(XID79, "gpu.lost")
    kinds = [list(s) for s in f["fix"]["steps"]]
    assert kinds == [["run"], ["any_of"], ["run"]], f["fix"]["steps"]
    assert [o[0].split()[:2] for o in f["fix"]["steps"][1]["any_of"]] == [["sudo", "nvidia-smi"], ["sudo", "reboot"]]


def _every_fix():
    """Every finding's fix on every machine the suite replays (tests/machines, tests/corpus, tests/live)."""
    paths = sorted(glob.glob(os.path.join(HERE, "machines", "*", "snapshot.json"))
                   + glob.glob(os.path.join(HERE, "corpus", "*", "snapshot.json"))
                   + glob.glob(os.path.join(HERE, "live", "*", "snapshot.json.gz")))
    for path in paths:
        for f in snapshot_report(path).findings:
            yield path, f


def test_no_fix_lists_two_ways_to_the_same_end_as_steps():
    """The pairs a reader must never run both of, in any check: reboot and a GPU reset or a module reload;
    unsetting a variable and setting it; docker and podman."""
    rival = [(r"^sudo reboot$", r"(--gpu-reset|nvidia-smi -r |rmmod)"),
             (r"^unset (\w+)$", r"^export {0}="), (r"^docker run", r"^podman run")]
    bad = []
    seen = 0
    for path, f in _every_fix():
        plain = [s for s in f.fix.steps if isinstance(s, str)]
        seen += 1
        for a, b in rival:
            for s in plain:
                m = re.search(a, s)
                if m and any(re.search(b.format(*m.groups()), t) for t in plain if t is not s):
                    bad.append((os.path.basename(os.path.dirname(path)), f.code, plain))
    assert seen > 100 and not bad, bad[:5]


def test_anyof_is_explicit_and_pip_aiming_reaches_inside_it():
    fix = Fix("x", ["pip list", AnyOf("pip install a", ["pip uninstall -y b", "pip install c"])])
    fix.map_commands(lambda c: c.replace("pip ", "pip --python /v/bin/python ", 1))
    assert fix.to_dict()["steps"] == [
        {"run": "pip --python /v/bin/python list"},
        {"any_of": [["pip --python /v/bin/python install a"],
                    ["pip --python /v/bin/python uninstall -y b", "pip --python /v/bin/python install c"]]}]
    assert len(fix.commands) == 4 and fix.has_alternatives
