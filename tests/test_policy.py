"""`envdoctor check --policy` and `envdoctor policy init`: the node gate a cluster admin runs.

Nodes are the captured machines (tests/machines, tests/live): replayed through the snapshot host,
their reports judged.  The one node that meets the issue's example policy is the captured 8x H100
CentOS Stream 9 server's report with the versions the example asks for put in (driver 550.54.15 and
CUDA 12.4 as nvidia-smi printed them in NVIDIA/nccl#1264, torch 2.4.0+cu124, the fabric manager
running, and the per-GPU link and ECC answers its capture lacks taken from the H100 SXM5 board in
tests/fakenvml/h100.json: ECC on, PCIe Gen5 x16): the rest of the report is the machine's own.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from typing import Any, Dict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envdoctor.host.privacy import Scrubber
from envdoctor.policy import PolicyError, init_policy, parse_policy, report_facts

from .conftest import HERE, load_machine, machine_names

ROOT = os.path.dirname(HERE)
LIVE_H100 = os.path.join(HERE, "live", "h100-ubuntu2404-container", "snapshot.json.gz")

#: The policy in issue 16, as written there.
EXAMPLE = """\
schema_version = 1
[require]
"driver.version" = ">=550"
"cuda.toolkit.version" = "==12.4.*"
"framework.torch.version" = ">=2.4"
"framework.torch.cuda" = "12.4"
"gpu.count" = 8
"gpu.*.compute_capability" = ">=8.0"
"gpu.*.ecc_mode_current" = true
"gpu.*.pcie_gen_max" = ">=4"
"gpu.*.pcie_width_current" = 16
"driver.fabric_manager.state" = "running"
[findings]
fail_on = "error"
ignore = ["container-toolkit.missing"]
"""


def envdoctor(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "envdoctor"] + list(args), capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout, env=dict(os.environ, NO_COLOR="1"))


def machine_report(name: str) -> Dict[str, Any]:
    from envdoctor.report import diagnose

    return diagnose(load_machine(name), scrubber=Scrubber(include_host=True)).to_dict()


def set_fact(report: Dict[str, Any], key: str, value: Any, source: str = "", status: str = "ok") -> None:
    for probe in report["probes"]:
        for fact in probe["facts"]:
            if fact["key"] == key:
                fact.update(value=value, status=status)
                return
    report["probes"][0]["facts"].append({"key": key, "value": value, "status": status, "source": source})


def meeting_node() -> Dict[str, Any]:
    """The 8x H100 server with the example's versions (see the module docstring)."""
    report = machine_report("centosstream9-8xh100")
    set_fact(report, "driver.version", "550.54.15")
    set_fact(report, "driver.cuda_version", "12.4")
    set_fact(report, "cuda.nvcc", {"path": "/usr/local/cuda/bin/nvcc", "release": "12.4", "version": "12.4.131"})
    torch = dict(report_facts(report)["framework.torch"]["value"], version="2.4.0+cu124", cuda="12.4")
    set_fact(report, "framework.torch", torch)
    set_fact(report, "driver.nvswitch.present", True)
    set_fact(report, "driver.fabric_manager.state", "active", "command:systemctl is-active nvidia-fabricmanager")
    for i in range(8):
        set_fact(report, "gpu.%d.ecc_mode_current" % i, True, "nvml:device.%d.ecc_mode" % i)
        set_fact(report, "gpu.%d.pcie_gen_max" % i, 5, "nvml:device.%d.pcie_gen_max" % i)
        set_fact(report, "gpu.%d.pcie_width_current" % i, 16, "nvml:device.%d.pcie_width_current" % i)
    report["findings"] = [f for f in report["findings"] if f["severity"] != "error"]
    return report


def by_name(verdict) -> Dict[str, Any]:
    return {r.name: r for r in verdict.results}


# ------------------------------------------------------------------------------------------ the example


def test_the_example_policy_passes_on_a_node_that_meets_it():
    verdict = parse_policy(EXAMPLE).evaluate(meeting_node())
    assert [r.status for r in verdict.results] == ["pass"] * 10, [(r.name, r.found) for r in verdict.results]
    assert verdict.passed and verdict.exit_code == 0


def test_the_example_policy_on_the_real_h100_names_what_fails():
    from envdoctor.host.snapshot import SnapshotHost, load_snapshot
    from envdoctor.report import diagnose

    report = diagnose(SnapshotHost(load_snapshot(LIVE_H100), "h100")).to_dict()
    verdict = parse_policy(EXAMPLE).evaluate(report)
    results = by_name(verdict)
    # what the real machine has: driver 580.159.04, nvcc 13.0, torch 2.11.0 built for CUDA 13.0, one H100
    assert {n for n, r in results.items() if r.status == "fail"} == {
        "cuda.toolkit.version", "framework.torch.cuda", "gpu.count", "driver.fabric_manager.state"}
    assert results["driver.version"].to_dict() == {"name": "driver.version", "want": ">=550", "found": "580.159.04",
                                                   "status": "pass", "source": "nvml:system.driver_version"}
    assert results["gpu.count"].to_dict()["found"] == 1
    assert results["cuda.toolkit.version"].found == "13.0.88"
    assert verdict.exit_code == 1


def test_check_json_carries_the_policy_section_and_validates(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    policy = tmp_path / "p.toml"
    policy.write_text(EXAMPLE)
    report = tmp_path / "node07.json"
    report.write_text(json.dumps(meeting_node()))
    r = envdoctor("check", "--policy", str(policy), "--report", str(report), "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    with open(os.path.join(ROOT, "envdoctor", "schemas", "report.schema.json")) as fh:
        jsonschema.validate(doc, json.load(fh))
    assert doc["policy"]["passed"] is True and doc["policy"]["summary"] == {"pass": 10, "fail": 0, "unknown": 0}
    gpus = [q for q in doc["policy"]["requirements"] if q["name"] == "gpu.*.pcie_width_current"][0]
    assert gpus["found"] == 16 and [g["index"] for g in gpus["gpus"]] == list(range(8))


def test_check_text_on_a_snapshot_shows_want_found_and_exit_1(tmp_path):
    policy = tmp_path / "p.toml"
    policy.write_text(EXAMPLE)
    r = envdoctor("check", "--policy", str(policy), "--snapshot", LIVE_H100)
    assert r.returncode == 1, r.stderr
    assert "NOT READY" in r.stdout
    assert "cuda.toolkit.version" in r.stdout and "want ==12.4.*, found 13.0.88" in r.stdout
    assert "want 8, found 1" in r.stdout


def test_one_gpu_off_the_policy_is_named():
    report = meeting_node()
    set_fact(report, "gpu.3.pcie_width_current", 8)
    verdict = parse_policy(EXAMPLE).evaluate(report)
    width = by_name(verdict)["gpu.*.pcie_width_current"]
    assert width.status == "fail" and width.failing_gpus() == [3]
    assert width.found == "3:8 (others 16)"
    from envdoctor.render.engines import prometheus

    text = prometheus(report, verdict, 0.1)
    assert 'envdoctor_gpu_healthy{gpu="3",name="NVIDIA H100"} 0' in text
    assert 'envdoctor_gpu_healthy{gpu="2",name="NVIDIA H100"} 1' in text


def test_unknown_fails_unless_the_policy_says_pass():
    report = meeting_node()
    set_fact(report, "gpu.5.ecc_mode_current", None, status="timed_out")
    strict = parse_policy(EXAMPLE).evaluate(report)
    assert by_name(strict)["gpu.*.ecc_mode_current"].status == "unknown" and strict.exit_code == 1
    lenient = parse_policy(EXAMPLE.replace("[require]", 'on_unknown = "pass"\n[require]')).evaluate(report)
    assert lenient.exit_code == 0


def test_a_finding_at_fail_on_fails_the_node_unless_ignored():
    from envdoctor.host.snapshot import SnapshotHost, load_snapshot
    from envdoctor.report import diagnose

    report = diagnose(SnapshotHost(load_snapshot(LIVE_H100), "h100")).to_dict()  # onnxruntime CPU build: warning
    base = 'schema_version = 1\n[require]\n"driver.version" = ">=550"\n[findings]\n'
    assert parse_policy(base + 'fail_on = "error"\n').evaluate(report).exit_code == 0
    warn = parse_policy(base + 'fail_on = "warning"\n').evaluate(report)
    assert warn.exit_code == 1 and warn.problems() == ["framework.cpu_only_build"]
    assert parse_policy(base + 'fail_on = "warning"\nignore = ["framework.cpu_only_build"]\n').evaluate(
        report).exit_code == 0


def test_a_missing_framework_fails_rather_than_unknown():
    report = machine_report("debian12-nogpu")
    verdict = parse_policy('schema_version = 1\n[require]\n"framework.torch.version" = ">=2.4"\n'
                           '"gpu.*.ecc_mode_current" = true\n').evaluate(report)
    results = by_name(verdict)
    assert results["framework.torch.version"].status == "fail"
    assert results["framework.torch.version"].found == "not installed"
    assert results["gpu.*.ecc_mode_current"].status in ("fail", "unknown")


def test_numbers_take_literals_comparisons_and_ranges():
    report = meeting_node()
    for want, ok in (('8', True), ('">=8"', True), ('">8"', False), ('{min = 4, max = 8}', True),
                     ('{max = 7}', False), ('">=4,<8"', False)):
        verdict = parse_policy('schema_version = 1\n[require]\n"gpu.count" = %s\n' % want).evaluate(report)
        assert verdict.passed is ok, want


def test_output_file_is_written_atomically(tmp_path):
    policy = tmp_path / "p.toml"
    policy.write_text(EXAMPLE)
    out = tmp_path / "out" / "envdoctor.prom"
    out.parent.mkdir()
    out.write_text("old\n")
    r = envdoctor("check", "--policy", str(policy), "--snapshot", LIVE_H100, "--format", "prometheus", "-o", str(out))
    assert r.returncode == 1 and r.stdout == ""
    assert out.read_text().startswith("# HELP envdoctor_node_ready")
    assert os.listdir(out.parent) == ["envdoctor.prom"]  # no temporary file left behind
    r = envdoctor("check", "--policy", str(policy), "--snapshot", LIVE_H100, "-o", str(tmp_path / "none" / "x"))
    assert r.returncode == 2 and "cannot write" in r.stderr and "Traceback" not in r.stderr


def test_dash_as_output_means_standard_output_for_every_command(tmp_path):
    """`-o -` is standard output, as `snapshot -o -` always was: `policy init` and `check` wrote a file named `-`."""
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps(meeting_node()))
    work = tmp_path / "cwd"
    work.mkdir()

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "envdoctor"] + list(args), capture_output=True, text=True,
                              cwd=str(work), timeout=60, env=dict(os.environ, NO_COLOR="1",
                                                                  PYTHONPATH=ROOT + os.pathsep + os.environ.get(
                                                                      "PYTHONPATH", "")))

    init = run("policy", "init", "--from", str(golden), "-o", "-")
    assert init.returncode == 0, init.stderr
    assert '"driver.version" = "==550.54.15"' in init.stdout
    (tmp_path / "policy.toml").write_text(init.stdout)
    check = run("check", "--policy", str(tmp_path / "policy.toml"), "--report", str(golden), "--format", "nhc",
                "-o", "-")
    assert check.returncode == 0, check.stderr
    prom = run("check", "--policy", str(tmp_path / "policy.toml"), "--report", str(golden), "--format",
               "prometheus", "-o", "-")
    assert prom.returncode == 0 and prom.stdout.startswith("# HELP envdoctor_node_ready"), prom.stderr
    snap = run("snapshot", "-o", "-", "--timeout", "5")
    assert snap.returncode == 0 and json.loads(snap.stdout)["schema_version"] >= 1, snap.stderr
    assert os.listdir(str(work)) == []  # no file named "-" (nor anything else) in the working directory


# ------------------------------------------------------------------------------------------ hostile policies

HOSTILE = [
    ('schema_version = 1\n[require]\n"driver.versoin" = ">=550"\n', "driver.versoin", "unknown key"),
    ('schema_version = 1\n[require]\n"driver.version" = ">=55O"\n', "driver.version", "not a PEP 440"),
    ('schema_version = 1\n[require]\n"driver.version" = 550\n', "driver.version", "must be a version"),
    ('schema_version = 1\n[require]\n"gpu.count" = "eight"\n', "gpu.count", "not a comparison"),
    ('schema_version = 1\n[require]\n"gpu.count" = true\n', "gpu.count", "a boolean"),
    ('schema_version = 1\n[require]\n"gpu.*.ecc_mode_current" = "yes"\n', "gpu.*.ecc_mode_current", "true or false"),
    ('schema_version = 1\n[require]\n"gpu.count" = {min = 8, max = 4}\n', "gpu.count", "above max"),
    ('schema_version = 1\n[require]\n"gpu.count" = {least = 8}\n', "gpu.count", "unknown field least"),
    ('schema_version = 1\n[require]\n"gpu.*.nonsense" = 1\n', "gpu.*.nonsense", "unknown key"),
    ('schema_version = 1\n[require]\n"driver.fabric_manager.state" = "up"\n', "driver.fabric_manager.state",
     "not a service state"),
    ('schema_version = 1\n[requre]\n"gpu.count" = 8\n', "requre", "did you mean require"),
    ('[require]\n"gpu.count" = 8\n', "schema_version", "missing"),
    ('schema_version = 2\n', "schema_version", "not a version this envdoctor reads"),
    ('schema_version = 1\non_unknown = "maybe"\n', "on_unknown", "must be"),
    ('schema_version = 1\n[findings]\nfail_on = "fatal"\n', "findings.fail_on", "must be one of"),
    ('schema_version = 1\n[findings]\nignore = ["No such code"]\n', "findings.ignore[0]", "not a finding code"),
    ('schema_version = 1\n[findings]\nignore = "container-toolkit.missing"\n', "findings.ignore", "array"),
    ('schema_version = 1\nrequire = 5\n', "require", "must be a table"),
    ('schema_version = 1\n[require\n', "not valid TOML", ""),
    ('schema_version = 1\n' + "a = [" * 5000 + "]" * 5000 + "\n", "policy", ""),
]


@pytest.mark.parametrize("text,key,problem", HOSTILE)
def test_hostile_policies_are_exit_2_naming_key_and_problem(tmp_path, text, key, problem):
    with pytest.raises(PolicyError) as err:
        parse_policy(text)
    assert key in str(err.value) and problem in str(err.value)


def test_hostile_policy_files_on_the_command_line(tmp_path):
    huge = tmp_path / "huge.toml"
    huge.write_text("schema_version = 1\n# " + "x" * (10 * 1024 * 1024) + "\n")
    binary = tmp_path / "bin.toml"
    binary.write_bytes(b"schema_version = 1\n\xff\xfe\n")
    bad_key = tmp_path / "bad.toml"
    bad_key.write_text('schema_version = 1\n[require]\n"gpu.*.pcie_width" = 16\n')
    for path, says in ((huge, "10.5 MB"), (binary, "not UTF-8"), (tmp_path, "not a regular file"),
                       (tmp_path / "missing.toml", "No such file"),
                       (bad_key, 'require."gpu.*.pcie_width": unknown key (did you mean gpu.*.pcie_width_max?)')):
        r = envdoctor("check", "--policy", str(path), "--snapshot", LIVE_H100)
        assert r.returncode == 2, (path, r.stdout, r.stderr)
        assert says in r.stderr and "Traceback" not in r.stderr


def test_an_unknown_but_well_formed_code_is_a_warning(tmp_path):
    policy = tmp_path / "p.toml"
    policy.write_text('schema_version = 1\n[findings]\nignore = ["container-toolkit.mising"]\n')
    r = envdoctor("check", "--policy", str(policy), "--snapshot", LIVE_H100)
    assert r.returncode == 0, r.stderr
    assert "container-toolkit.mising is not a finding code this envdoctor knows (did you mean " \
           "container-toolkit.missing?)" in r.stderr


def test_report_and_snapshot_inputs_are_told_apart(tmp_path):
    policy = tmp_path / "p.toml"
    policy.write_text(EXAMPLE)
    r = envdoctor("check", "--policy", str(policy), "--report", LIVE_H100)
    assert r.returncode == 2 and "use --snapshot" in r.stderr
    r = envdoctor("check", "--policy", str(policy), "--report", str(policy))
    assert r.returncode == 2 and "Traceback" not in r.stderr


# ------------------------------------------------------------------------------------------ policy init


@pytest.mark.parametrize("name", machine_names())
def test_a_policy_made_from_a_machine_passes_on_it(name):
    report = machine_report(name)
    text = init_policy(report, name)
    verdict = parse_policy(text).evaluate(report)
    assert verdict.passed, (name, verdict.problems(), text)


def test_policy_init_pins_the_golden_node_and_catches_a_different_one(tmp_path):
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps(meeting_node()))
    out = tmp_path / "policy.toml"
    r = envdoctor("policy", "init", "--from", str(golden), "-o", str(out))
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert '"driver.version" = "==550.54.15"' in text and '"gpu.count" = 8' in text
    assert '"framework.torch.cuda" = "==12.4"' in text and '"driver.fabric_manager.state" = "running"' in text
    assert envdoctor("check", "--policy", str(out), "--report", str(golden)).returncode == 0
    other = meeting_node()
    set_fact(other, "driver.version", "550.90.07")
    (tmp_path / "other.json").write_text(json.dumps(other))
    r = envdoctor("check", "--policy", str(out), "--report", str(tmp_path / "other.json"), "--format", "nhc")
    assert r.returncode == 1 and r.stdout == "driver.version: 550.90.07, want ==550.54.15\n"


_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)
_version = st.one_of(st.from_regex(r"\A[0-9]{1,3}(\.[0-9]{1,3}){0,3}(\+[a-z0-9]{1,6})?\Z"), _text)
_scalar = st.one_of(st.none(), st.booleans(), st.integers(-2 ** 70, 2 ** 70), st.floats(allow_nan=True), _text)


@st.composite
def reports(draw) -> Dict[str, Any]:
    """A report whose every fact the policy keys read may be present, absent, unknown or odd."""
    facts = []

    def fact(key: str, value: Any) -> None:
        status = draw(st.sampled_from(["ok", "ok", "ok", "unknown", "timed_out", "absent"]))
        if status != "absent":
            facts.append({"key": key, "value": value if status == "ok" else None, "status": status,
                          "source": "file:/x"})

    for key in ("driver.version", "driver.kernel_module.flavor", "os.id", "os.version", "os.arch", "python.version"):
        fact(key, draw(_version))
    fact("driver.fabric_manager.state", draw(st.sampled_from(["active", "inactive", "failed", "weird"])))
    fact("driver.nvswitch.present", draw(st.booleans()))
    count = draw(st.integers(0, 9))
    fact("gpu.count", count)
    for i in range(count):
        fact("gpu.%d.name" % i, draw(st.sampled_from(["NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"])))
        fact("gpu.%d.compute_capability" % i, draw(st.sampled_from(["8.0", "9.0", "x"])))
        for k in ("memory_total_bytes", "pcie_gen_max", "pcie_width_max"):
            fact("gpu.%d.%s" % (i, k), draw(_scalar))
        for k in ("ecc_mode_current", "mig_mode_current", "persistence_mode"):
            fact("gpu.%d.%s" % (i, k), draw(st.one_of(st.booleans(), _scalar)))
    fact("cuda.nvcc", draw(st.one_of(st.none(), st.fixed_dictionaries({"version": _version}))))
    fact("cuda.default_symlink", draw(st.one_of(st.none(), st.fixed_dictionaries({"version": _version}))))
    fact("libraries.loader_choice", {"libcudnn.so.9": {"path": "/usr/lib/libcudnn.so.9", "version": draw(_version)}})
    for fw in ("torch", "jax"):
        if draw(st.booleans()):
            fact("framework." + fw, {"version": draw(_version), "cuda": draw(st.one_of(st.none(), _version))})
    severity = st.sampled_from(["error", "warning", "info"])
    findings = [{"code": draw(st.sampled_from(["driver.too_old_for_cuda", "container-toolkit.missing",
                                                "gpu.pcie_link_degraded", "bogus.code"])),
                 "severity": draw(severity), "title": "t"} for _ in range(draw(st.integers(0, 3)))]
    return {"probes": [{"name": "all", "facts": facts}], "findings": findings}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reports())
def test_property_a_policy_made_from_a_report_passes_on_it(report):
    text = init_policy(report, "golden")
    policy = parse_policy(text)  # always a valid policy
    verdict = policy.evaluate(report)
    assert verdict.passed, (verdict.problems(), text)


def test_policies_are_valid_against_the_shipped_schema():
    jsonschema = pytest.importorskip("jsonschema")
    from envdoctor.policy import toml_module as _toml

    with open(os.path.join(ROOT, "envdoctor", "schemas", "policy.schema.json")) as fh:
        schema = json.load(fh)
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(_toml().loads(EXAMPLE), schema)
    jsonschema.validate(_toml().loads(init_policy(meeting_node(), "golden")), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(_toml().loads('schema_version = 1\nrequre = {}\n'), schema)


def test_policy_keys_lists_every_kind():
    r = envdoctor("policy", "keys")
    assert r.returncode == 0
    assert "gpu.*.pcie_width_current" in r.stdout and "framework.NAME.cuda" in r.stdout
    assert "cuda.toolkit.version" in r.stdout


def test_the_example_keys_are_documented_kinds():
    from envdoctor.policy import key_kind

    report = copy.deepcopy(meeting_node())
    assert report_facts(report)["gpu.count"]["value"] == 8
    kinds = {k: key_kind(k) for k in ("driver.version", "gpu.*.pcie_width_current", "framework.torch.cuda",
                                      "driver.fabric_manager.state", "gpu.0.ecc_mode_current")}
    assert kinds == {"driver.version": "version", "gpu.*.pcie_width_current": "number",
                     "framework.torch.cuda": "version", "driver.fabric_manager.state": "text",
                     "gpu.0.ecc_mode_current": "bool"}



def test_a_policy_can_require_gpu_memory_health():
    policy = parse_policy('schema_version = 1\n[require]\n"gpu.*.remapped_rows_pending" = false\n'
                          '"gpu.*.remapped_rows_failure" = false\n"gpu.*.retired_pages_dbe" = "<10"\n')
    report = meeting_node()
    for i in range(8):
        set_fact(report, "gpu.%d.remapped_rows_pending" % i, i == 5, "nvml:device.%d.remapped_rows" % i)
        set_fact(report, "gpu.%d.remapped_rows_failure" % i, False, "nvml:device.%d.remapped_rows" % i)
        # an H100 retires no pages (it remaps rows): NVML says not supported
        set_fact(report, "gpu.%d.retired_pages_dbe" % i, None, "nvml:device.%d.retired_pages_dbe" % i,
                 status="not_supported")
    results = by_name(policy.evaluate(report))
    assert results["gpu.*.remapped_rows_pending"].status == "fail"
    assert "5:true" in results["gpu.*.remapped_rows_pending"].found.lower()
    assert results["gpu.*.remapped_rows_failure"].status == "pass"
    assert results["gpu.*.retired_pages_dbe"].status == "unknown"
    keys = envdoctor("policy", "keys").stdout
    assert "gpu.*.remapped_rows_pending" in keys and "gpu.*.mig_devices" in keys


def test_a_policy_without_ignored_codes_is_read_without_importing_the_checks(tmp_path):
    """``check --policy`` on this machine starts docker (about 20 MiB) before the checks are imported, so that the
    two do not add up: reading a policy that ignores no finding must not import them (one that ignores some
    does, to say which codes are unknown)."""
    plain = tmp_path / "plain.toml"
    plain.write_text('schema_version = 1\n[require]\n"driver.version" = ">=550"\n')
    ignoring = tmp_path / "ignoring.toml"
    ignoring.write_text('schema_version = 1\n[findings]\nignore = ["no.such_code"]\n')
    code = ("import sys; from envdoctor.policy import load_policy; p = load_policy(sys.argv[1]); "
            "print('envdoctor.checks' in sys.modules, len(p.warnings))")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    runs = [subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, cwd=root,
                           timeout=60) for path in (plain, ignoring)]
    assert [r.stdout.split() for r in runs] == [["False", "0"], ["True", "1"]], [r.stderr for r in runs]
