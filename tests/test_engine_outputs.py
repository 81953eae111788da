"""`check --format prometheus|nfd|junit` read back by the engines that consume them.

* prometheus: prometheus_client's parser always; `promtool check metrics` and a real node_exporter on
  127.0.0.1 serving the file through its textfile collector (node_textfile_scrape_error 0) when
  they are installed (Debian: prometheus, prometheus-node-exporter);
* nfd: every label against the Kubernetes label grammar, with generated fact values (hypothesis), and
  contrib/k8s/daemonset.yaml against the Kubernetes schemas, offline (kubernetes-validate --strict,
  which carries the schemas; no cluster can run here);
* junit: parsed back with junitparser.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envdoctor.policy import parse_policy
from envdoctor.render import engines
from envdoctor.view import summarize

from .engines import BROKEN, HEALTHY, POLICY, ROOT, envdoctor_env, write_policy

#: The engines run for real (promtool, node_exporter) where installed.
pytestmark = pytest.mark.engine


def check(tmp_path, snapshot: str, fmt: str, *extra: str) -> subprocess.CompletedProcess:
    policy = write_policy(str(tmp_path))
    return subprocess.run([sys.executable, "-m", "envdoctor", "check", "--policy", policy, "--snapshot", snapshot,
                           "--format", fmt] + list(extra), capture_output=True, text=True, env=envdoctor_env(),
                          timeout=60, cwd=ROOT)


HOSTILE_REPORT = {
    "probes": [{"name": "x", "facts": [
        {"key": "driver.version", "value": '550.54.15"\n} evil{a="', "status": "ok", "source": "s"},
        {"key": "driver.cuda_version", "value": "12.4\\", "status": "ok", "source": "s"},
        {"key": "gpu.count", "value": 2, "status": "ok", "source": "s"},
        {"key": "gpu.0.name", "value": 'H100 "SXM"\\\n', "status": "ok", "source": "s"},
        {"key": "gpu.1.name", "value": "\u00e9\u00e8\u2603", "status": "ok", "source": "s"},
        {"key": "framework.torch", "value": {"version": "2.4.0+cu124", "cuda": "12.4"}, "status": "ok", "source": "s"},
    ]}],
    "findings": [{"code": "gpu.ecc_uncorrectable", "severity": "error", "title": "x\x00y\x1b[31m",
                  "evidence": [{"key": "gpu.1.ecc_errors_volatile_uncorrected"}]}],
    "summary": {"error": 1, "warning": 0, "info": 0},
}


# ------------------------------------------------------------------------------------------ prometheus


def _parse(text: str):
    from prometheus_client.parser import text_string_to_metric_families

    return {f.name: f for f in text_string_to_metric_families(text)}


def test_prometheus_parses_and_says_what_an_admin_alerts_on(tmp_path):
    pytest.importorskip("prometheus_client")
    r = check(tmp_path, BROKEN, "prometheus")
    assert r.returncode == 1, r.stderr
    families = _parse(r.stdout)
    assert families["envdoctor_node_ready"].samples[0].value == 0
    req = {(s.labels["name"], s.labels["status"]): s.value for s in families["envdoctor_requirement"].samples}
    assert req[("driver.version", "fail")] == 1 and req[("driver.version", "pass")] == 0
    assert req[("gpu.*.compute_capability", "pass")] == 1
    driver = families["envdoctor_driver_info"].samples[0]
    assert driver.labels["version"] == "535.154.05"
    gpus = families["envdoctor_gpu_healthy"].samples
    assert len(gpus) == 8
    assert families["envdoctor_run_duration_seconds"].samples[0].value > 0
    sev = {s.labels["severity"]: s.value for s in families["envdoctor_findings"].samples}
    assert set(sev) == {"error", "warning", "info"}


def test_prometheus_label_values_are_escaped():
    pytest.importorskip("prometheus_client")
    verdict = parse_policy('schema_version = 1\n[require]\n"driver.version" = ">=550"\n').evaluate(HOSTILE_REPORT)
    text = engines.prometheus(HOSTILE_REPORT, verdict, 0.5)
    families = _parse(text)
    assert families["envdoctor_driver_info"].samples[0].labels["version"] == '550.54.15"\n} evil{a="'
    names = {s.labels["gpu"]: (s.labels["name"], s.value) for s in families["envdoctor_gpu_healthy"].samples}
    assert names == {"0": ('H100 "SXM"\\\n', 1), "1": ("\u00e9\u00e8\u2603", 0)}  # GPU 1 has the ECC error
    assert "evil" not in families


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed (Debian: prometheus)")
def test_promtool_accepts_the_metrics(tmp_path):
    for snapshot in (BROKEN, HEALTHY):
        r = check(tmp_path, snapshot, "prometheus")
        lint = subprocess.run(["promtool", "check", "metrics"], input=r.stdout, capture_output=True, text=True,
                              timeout=30)
        assert lint.returncode == 0, lint.stdout + lint.stderr
    verdict = parse_policy('schema_version = 1\n[require]\n"driver.version" = ">=550"\n').evaluate(HOSTILE_REPORT)
    lint = subprocess.run(["promtool", "check", "metrics"], input=engines.prometheus(HOSTILE_REPORT, verdict, 0.5),
                          capture_output=True, text=True, timeout=30)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def _node_exporter() -> str:
    for name in ("prometheus-node-exporter", "node_exporter"):
        if shutil.which(name):
            return shutil.which(name) or ""
    return ""


@pytest.mark.skipif(not _node_exporter(), reason="node_exporter not installed (Debian: prometheus-node-exporter)")
def test_node_exporter_serves_the_textfile(tmp_path):
    textdir = tmp_path / "textfile"
    textdir.mkdir()
    r = check(tmp_path, BROKEN, "prometheus", "-o", str(textdir / "envdoctor.prom"))
    assert r.returncode == 1 and r.stdout == "", r.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([_node_exporter(), "--web.listen-address=127.0.0.1:%d" % port,
                             "--collector.disable-defaults", "--collector.textfile",
                             "--collector.textfile.directory=" + str(textdir)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        body = ""
        end = time.monotonic() + 15
        while time.monotonic() < end:
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=2) as resp:
                    body = resp.read().decode()
                break
            except OSError:
                time.sleep(0.2)
        assert "node_textfile_scrape_error 0" in body, body[-2000:]
        assert "envdoctor_node_ready 0" in body
        assert 'envdoctor_requirement{name="driver.version",status="fail"} 1' in body
    finally:
        proc.terminate()
        proc.wait(10)


# ------------------------------------------------------------------------------------------ NFD

_NAME = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                   r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def assert_valid_label(name: str, value: str) -> None:
    """The Kubernetes grammar (k8s.io/apimachinery validation: qualified names and label values)."""
    prefix, _, short = name.rpartition("/")
    assert _NAME.match(name) and len(short) <= 63 and len(prefix) <= 253, name
    assert not (prefix == "kubernetes.io" or prefix.endswith(".kubernetes.io") or prefix == "k8s.io"
                or prefix.endswith(".k8s.io")), name
    assert _VALUE.match(value) and len(value) <= 63, (name, value)


def parse_feature_file(text: str):
    lines = text.splitlines()
    assert lines[0].startswith("# +expiry-time=")
    labels = {}
    for line in lines:
        if line.startswith("#") or not line:
            continue
        name, _, value = line.partition("=")
        labels[name] = value
    return lines[0][len("# +expiry-time="):], labels


def test_nfd_feature_file_from_a_real_node(tmp_path):
    out = tmp_path / "features.d" / "envdoctor"
    out.parent.mkdir()
    r = check(tmp_path, HEALTHY, "nfd", "-o", str(out), "--nfd-ttl", "600")
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert len(text.encode()) < 64 * 1024
    expiry, labels = parse_feature_file(text)
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", expiry)
    for name, value in labels.items():
        assert_valid_label(name, value)
    assert labels["envdoctor.io/ready"] == "true"
    assert (labels["envdoctor.io/driver.major"], labels["envdoctor.io/driver.minor"],
            labels["envdoctor.io/driver.rev"]) == ("580", "159", "4")
    assert labels["envdoctor.io/torch.cuda"] == "13.0" and labels["envdoctor.io/requirements.failing"] == "0"
    assert os.listdir(out.parent) == ["envdoctor"]  # written as a dot-file, renamed into place


def test_label_values_are_sanitised_to_the_grammar():
    assert engines.label_value("2.4.0+cu124") == "2.4.0-cu124"
    assert engines.label_value("+" + "1" * 100 + "+") == "1" * 63
    assert engines.label_value("...") == ""


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(["driver.version", "driver.cuda_version", "framework.torch",
                                        "framework.jax", "cuda.nvcc", "gpu.count", "driver.kernel_module.version"]),
                       st.one_of(st.text(max_size=120), st.integers(), st.none(), st.booleans(),
                                 st.fixed_dictionaries({"version": st.text(max_size=80),
                                                        "cuda": st.one_of(st.none(), st.text(max_size=80))}))))
def test_property_every_nfd_label_is_valid(values):
    report = {"probes": [{"name": "x", "facts": [{"key": k, "value": v, "status": "ok", "source": "s"}
                                                 for k, v in values.items()]}], "findings": []}
    verdict = parse_policy(POLICY).evaluate(report)
    text = engines.nfd(report, verdict, 3600)
    assert len(text.encode()) < 64 * 1024
    _, labels = parse_feature_file(text)
    for name, value in labels.items():
        assert_valid_label(name, value)
    for part in ("major", "minor", "rev"):
        value = labels.get("envdoctor.io/driver." + part)
        assert value is None or value.isdigit()


def test_the_daemonset_is_valid_against_the_kubernetes_schemas_offline():
    kv = pytest.importorskip("kubernetes_validate")
    path = os.path.join(ROOT, "contrib", "k8s", "daemonset.yaml")
    has_cli = subprocess.run([sys.executable, "-m", "kubernetes_validate", "--version"], capture_output=True,
                             timeout=120).returncode == 0
    if has_cli and shutil.which("unshare") and os.geteuid() == 0:
        # no network at all: the schemas must come with the package
        r = subprocess.run(["unshare", "-n", sys.executable, "-m", "kubernetes_validate", "--strict", path],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "passed for resource daemonset/envdoctor" in r.stdout + r.stderr
    else:
        import yaml

        with open(path) as fh:
            for doc in yaml.safe_load_all(fh):
                kv.validate(doc, kv.latest_version(), strict=True)


def test_a_daemonset_with_a_typo_is_rejected():
    with open(os.path.join(ROOT, "contrib", "k8s", "daemonset.yaml")) as fh:
        text = fh.read().replace("readOnlyRootFilesystem", "readOnlyRootFilesytem")
    import yaml

    kv = pytest.importorskip("kubernetes_validate")
    with pytest.raises(kv.ValidationError):
        for doc in yaml.safe_load_all(text):
            kv.validate(doc, kv.latest_version(), strict=True)


# ------------------------------------------------------------------------------------------ JUnit


def test_junit_reads_back_with_junitparser(tmp_path):
    junitparser = pytest.importorskip("junitparser")
    r = check(tmp_path, BROKEN, "junit", "--node", "node17")
    assert r.returncode == 1
    path = tmp_path / "check.xml"
    path.write_text(r.stdout)
    xml = junitparser.JUnitXml.fromfile(str(path))
    suites = list(xml)
    assert [s.name for s in suites] == ["node17"]
    cases = {c.name: c for c in suites[0]}
    assert not cases["driver.version"].is_passed
    failure = cases["driver.version"].result[0]
    assert "535.154.05" in failure.message and ">=550" in failure.message
    assert cases["gpu.*.compute_capability"].is_passed
    assert suites[0].failures == 1 and suites[0].tests == len(cases)


def test_junit_survives_hostile_text(tmp_path):
    junitparser = pytest.importorskip("junitparser")
    verdict = parse_policy('schema_version = 1\n[require]\n"driver.version" = ">=550"\n').evaluate(HOSTILE_REPORT)
    path = tmp_path / "x.xml"
    path.write_text(engines.junit([summarize("n<1>&\"", HOSTILE_REPORT, verdict)]))
    (suite,) = list(junitparser.JUnitXml.fromfile(str(path)))
    assert suite.name == 'n<1>&"'
    assert {c.name for c in suite} == {"driver.version", "gpu.ecc_uncorrectable"}


def test_json_output_is_the_report_plus_policy(tmp_path):
    r = check(tmp_path, BROKEN, "json")
    doc = json.loads(r.stdout)
    assert doc["policy"]["passed"] is False and doc["policy"]["failing_findings"] == []
    assert doc["probes"] and doc["policy"]["requirements"][0]["found"] == "535.154.05"
