"""Outputs for the engines cluster admins run: NHC, Prometheus (node_exporter textfile), Node Feature
Discovery, JUnit, and the text of ``envdoctor check``.

Each takes one node's report (as a dict, as ``diagnose --format json`` writes it) and, where there is
one, its :class:`~envdoctor.policy.Verdict`; the fleet renderers take many.  Every value that comes
from the machine is hostile input: it is escaped (Prometheus label values, XML), reduced to the
grammar (Kubernetes label values) or to one line of printable text (NHC) before it is written.
"""

from __future__ import annotations

import datetime
import re
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from ..policy import SEVERITIES, Verdict
from ..view import FRAMEWORKS, NodeSummary, node_ready, stack, summarize
from .style import one_line as line
from .style import printable

# ------------------------------------------------------------------------------------------ shared


#: C0 and C1 controls (line breaks included), DEL, the Unicode line and paragraph separators, the
#: bidirectional overrides and isolates, and lone surrogates (undecodable bytes): the characters
#: :func:`envdoctor.render.style.printable` escapes, plus tab and newline.
_NOT_ONE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _printable(text: str) -> str:
    """One line of printable text: control characters (line breaks included) and bidi controls become spaces."""
    return _NOT_ONE_LINE.sub(" ", text)


# ------------------------------------------------------------------------------------------ NHC

#: NHC writes the message into its log and into Slurm's drain reason: one short line.
NHC_MAX_BYTES = 200


def nhc_line(verdict: Verdict) -> str:
    """``<first failing requirement or code> (+N more)``, at most 200 bytes; "" when the node passes."""
    problems = verdict.problems()
    if not problems:
        return ""
    more = " (+%d more)" % (len(problems) - 1) if len(problems) > 1 else ""
    # NHC passes the message through its own shell quoting and Slurm's reason field: no quotes either.
    first = re.sub(r"[\"'`$\\]", "", _printable(problems[0])).strip()
    budget = NHC_MAX_BYTES - len(more.encode())
    raw = first.encode("utf-8")
    if len(raw) > budget:
        first = raw[:budget - 3].decode("utf-8", "ignore") + "..."
    return first + more


# ------------------------------------------------------------------------------------------ Prometheus


def prom_escape(value: str) -> str:
    """A label value as the text exposition format wants it: backslash, double quote, newline escaped; and
    control and bidi characters shown as escapes (``\\x1b``), as in every other output."""
    return printable(value).replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")


def _labels(pairs: Sequence[Tuple[str, str]]) -> str:
    if not pairs:
        return ""
    return "{%s}" % ",".join('%s="%s"' % (k, prom_escape(v)) for k, v in pairs)


class _Metrics:
    def __init__(self) -> None:
        self.order: List[str] = []
        self.meta: Dict[str, Tuple[str, str]] = {}
        self.samples: Dict[str, List[str]] = {}

    def add(self, name: str, help_text: str, labels: Sequence[Tuple[str, str]], value: float,
            kind: str = "gauge") -> None:
        if name not in self.meta:
            self.order.append(name)
            self.meta[name] = (help_text, kind)
            self.samples[name] = []
        number = repr(float(value)) if isinstance(value, float) else str(int(value))
        self.samples[name].append("%s%s %s" % (name, _labels(labels), number))

    def text(self) -> str:
        out: List[str] = []
        for name in self.order:
            help_text, kind = self.meta[name]
            out.append("# HELP %s %s" % (name, help_text))
            out.append("# TYPE %s %s" % (name, kind))
            out.extend(self.samples[name])
        return "\n".join(out) + "\n"


def _node_metrics(m: _Metrics, n: NodeSummary, node: Tuple[Tuple[str, str], ...], duration: Optional[float]) -> None:
    m.add("envdoctor_node_ready", "1 when the node meets the policy (no requirement failed or unknown, no finding "
          "at or above fail_on); without a policy, when it has no error.", node, 1 if n.ready else 0)
    for sev in SEVERITIES:
        m.add("envdoctor_findings", "Findings on the node by severity.", node + (("severity", sev),),
              n.counts.get(sev, 0))
    s = n.stack
    if s["driver"]:
        m.add("envdoctor_driver_info", "NVIDIA driver version and the newest CUDA it supports.",
              node + (("version", s["driver"]), ("cuda", s["driver_cuda"] or "")), 1)
    if s["toolkit"]:
        m.add("envdoctor_cuda_toolkit_info", "CUDA toolkit in use (nvcc on PATH, else /usr/local/cuda).",
              node + (("version", s["toolkit"]),), 1)
    for fw in FRAMEWORKS:
        if s[fw]:
            m.add("envdoctor_framework_info", "Framework versions and the CUDA they were built with.",
                  node + (("framework", fw), ("version", s[fw] or ""), ("cuda", s[fw + "_cuda"] or "")), 1)
    if n.gpus is not None:
        m.add("envdoctor_gpus", "GPUs the driver reports.", node, len(n.gpus))
        for i, name, healthy in n.gpus:
            m.add("envdoctor_gpu_healthy", "1 unless a failing requirement or finding concerns this GPU.",
                  node + (("gpu", str(i)), ("name", name)), 1 if healthy else 0)
    for req, status_now, _, _, _ in n.results:
        for status in ("pass", "fail", "unknown"):
            m.add("envdoctor_requirement", "One series per policy requirement and status; 1 on the "
                  "requirement's status.", node + (("name", req), ("status", status)), 1 if status_now == status else 0)
    if duration is not None:
        m.add("envdoctor_run_duration_seconds", "How long the check took.", node, round(float(duration), 4))


def prometheus(report: Dict[str, Any], verdict: Optional[Verdict], duration: Optional[float],
               now: Optional[float] = None) -> str:
    """One node's metrics for node_exporter's textfile collector (which adds the instance label)."""
    import time

    m = _Metrics()
    _node_metrics(m, summarize("", report, verdict), (), duration)
    m.add("envdoctor_last_run_timestamp_seconds", "When the check ran (Unix time).", (),
          float(int(now if now is not None else time.time())))
    return m.text()


def prometheus_fleet(nodes: Iterable[NodeSummary]) -> str:
    """Every node's metrics, told apart by a ``node`` label (for a textfile on the controller)."""
    m = _Metrics()
    for n in nodes:
        _node_metrics(m, n, (("node", n.name),), None)
    return m.text()


# ------------------------------------------------------------------------------------------ NFD

NFD_PREFIX = "envdoctor.io/"
NFD_MAX_BYTES = 64 * 1024
_LABEL_BAD = re.compile(r"[^A-Za-z0-9_.-]+")


def label_value(value: str) -> str:
    """``value`` in the Kubernetes label value grammar (at most 63 characters, alphanumeric at both
    ends, ``-_.`` inside): ``2.4.0+cu124`` -> ``2.4.0-cu124``."""
    def trim(text: str) -> str:
        return re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", text)

    return trim(trim(_LABEL_BAD.sub("-", value))[:63])


def _int_parts(version: str) -> List[str]:
    return [str(int(p)) for p in re.findall(r"[0-9]+", version)[:3]]


def nfd_labels(report: Dict[str, Any], verdict: Optional[Verdict]) -> List[Tuple[str, str]]:
    s = stack(report)
    labels: List[Tuple[str, str]] = [("ready", "true" if node_ready(report, verdict) else "false")]
    if verdict is not None:
        labels.append(("requirements.failing", str(len(verdict.blocking()))))
    if s["gpus"] is not None:
        labels.append(("gpu.count", s["gpus"]))
    if s["driver"]:
        labels.append(("driver.version", s["driver"]))
        # NodeFeatureRule's Gt/Lt compare integers only: the version's parts, each an integer
        for part, n in zip(("major", "minor", "rev"), _int_parts(s["driver"])):
            labels.append(("driver." + part, n))
    if s["driver_cuda"]:
        labels.append(("driver.cuda", s["driver_cuda"]))
        for part, n in zip(("major", "minor"), _int_parts(s["driver_cuda"])):
            labels.append(("driver.cuda." + part, n))
    if s["toolkit"]:
        labels.append(("cuda.toolkit", s["toolkit"]))
    for fw in FRAMEWORKS:
        if s[fw]:
            labels.append((fw + ".version", s[fw] or ""))
            if s[fw + "_cuda"]:
                labels.append((fw + ".cuda", s[fw + "_cuda"] or ""))
    return [(NFD_PREFIX + k, label_value(v)) for k, v in labels]


def nfd(report: Dict[str, Any], verdict: Optional[Verdict], ttl: float, now: Optional[datetime.datetime] = None) -> str:
    """An NFD local feature file: labels expire ``ttl`` seconds from now (``# +expiry-time=``)."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    expiry = (now + datetime.timedelta(seconds=ttl)).strftime("%Y-%m-%dT%H:%M:%SZ")
    lines = ["# +expiry-time=%s" % expiry, "# written by envdoctor check"]
    lines += ["%s=%s" % kv for kv in nfd_labels(report, verdict)]
    # a fixed handful of labels of at most 63 characters each: far below NFD's 64 kB (the tests hold it)
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------ JUnit

_XML_BAD = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(text: Any) -> str:
    """Text for an XML attribute or element: control and bidi characters shown as escapes (XML would carry
    C1 and bidi controls raw to whoever reads the report), what XML cannot hold at all as ``?``."""
    return _XML_BAD.sub("?", printable(str(text)))


def junit(nodes: Iterable[NodeSummary]) -> str:
    """One testsuite per node; one testcase per requirement and per finding that fails the node (at or above
    ``fail_on`` and not ignored; without a policy, every error)."""
    import xml.etree.ElementTree as ET

    root = ET.Element("testsuites", name="envdoctor")
    total = failed = skipped_total = 0
    for n in nodes:
        suite = ET.SubElement(root, "testsuite", name=_xml_text(n.name))
        tests = failures = skipped = 0
        for req, status, want, found, source in n.results:
            tests += 1
            case = ET.SubElement(suite, "testcase", classname=_xml_text(n.name + ".requirement"), name=_xml_text(req),
                                 time="0")
            detail = "want %s, found %s (%s)" % (want, found, source or "no source")
            if status == "fail" or (status == "unknown" and n.on_unknown == "fail"):
                failures += 1
                message = _xml_text(_printable("%s: %s" % (req, detail)))
                el = ET.SubElement(case, "failure", type=status, message=message)
                el.text = _xml_text(detail)
            elif status == "unknown":
                skipped += 1
                ET.SubElement(case, "skipped", message=_xml_text(_printable(detail)))
        for f in n.failing:
            tests += 1
            failures += 1
            case = ET.SubElement(suite, "testcase", classname=_xml_text(n.name + ".finding"), name=_xml_text(f["code"]),
                                 time="0")
            el = ET.SubElement(case, "failure", type=_xml_text(f["severity"]),
                               message=_xml_text(_printable(f["title"] or f["code"])))
            el.text = _xml_text(f["detail"])
        if not n.failing:
            tests += 1
            ET.SubElement(suite, "testcase", classname=_xml_text(n.name + ".finding"),
                          name=_xml_text("no finding at or above %s" % n.fail_on), time="0")
        suite.set("tests", str(tests))
        suite.set("failures", str(failures))
        suite.set("errors", "0")
        suite.set("skipped", str(skipped))
        total, failed, skipped_total = total + tests, failed + failures, skipped_total + skipped
    root.set("tests", str(total))
    root.set("failures", str(failed))
    root.set("errors", "0")
    root.set("skipped", str(skipped_total))
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


# ------------------------------------------------------------------------------------------ text


def check_text(verdict: Verdict, style: Any) -> str:
    counts = verdict.counts()
    blocking = verdict.blocking()
    head = style("READY", "green") if verdict.passed else style("NOT READY", "red")
    out = ["envdoctor check: %s  (policy %s: %d requirement%s, %d pass, %d fail, %d unknown%s)" % (
        head, line(verdict.policy.path), len(verdict.results), "" if len(verdict.results) == 1 else "s",
        counts["pass"], counts["fail"], counts["unknown"],
        "; unknown passes" if verdict.policy.on_unknown == "pass" and counts["unknown"] else "")]
    if verdict.results:
        out.append("")
        width = max(len(r.name) for r in verdict.results) + 2
        marks = {"pass": style("pass", "green"), "fail": style("FAIL", "red"),
                 "unknown": style("unknown", "yellow" if verdict.policy.on_unknown == "fail" else "dim")}
        order = sorted(verdict.results, key=lambda r: ("fail", "unknown", "pass").index(r.status))
        for r in order:
            out.append("  %s %s want %s, found %s" % (marks[r.status].ljust(len(marks[r.status]) + 7 - len(r.status)),
                                                      r.name.ljust(width), line(r.requirement.shown), line(r.found)))
            if r.status != "pass" and r.per_gpu and len({f for _, _, f in r.per_gpu}) > 1:
                out.append("  %s %s" % (" " * 8, style("GPUs: " + ", ".join(
                    "%d %s" % (i, s) for i, s, _ in r.per_gpu if s != "pass"), "dim")))
            if r.source and r.status != "pass":
                out.append("  %s %s" % (" " * 8, style("from " + line(r.source), "dim")))
    if verdict.failing_findings:
        out.append("")
        ignored = style("  (ignored: %s)" % ", ".join(verdict.policy.ignore), "dim") if verdict.policy.ignore else ""
        out.append(style("Findings at or above %s" % verdict.policy.fail_on, "bold") + ignored)
        for f in verdict.failing_findings:
            out.append("  %s %s  %s" % (style.severity_label(str(f.get("severity"))), line(str(f.get("code"))),
                                        line(str(f.get("title") or ""))))
    out.append("")
    if verdict.passed:
        out.append("Summary: the node meets the policy")
    else:
        out.append("Summary: the node does not meet the policy: %d requirement%s, %d finding%s" % (
            len(blocking), "" if len(blocking) == 1 else "s", len(verdict.failing_findings),
            "" if len(verdict.failing_findings) == 1 else "s"))
    return "\n".join(out) + "\n"
