"""Container engines and the NVIDIA Container Toolkit: Docker (client, daemon,
runtimes, ``/etc/docker/daemon.json``), snap Docker, the toolkit's CLIs and
config, CDI specs, Podman.

The Docker daemon is often down, hung, or closed to the current user; each of
those is reported as what it is (with the error Docker printed), never as
"Docker not installed".
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ..facts import Fact, ok, timed_out, unknown
from ..host.base import CommandResult, Host
from . import ProbeContext, register

DOCKER_VERSION = ["docker", "version", "--format", "{{json .}}"]
DOCKER_RUNTIMES = ["docker", "info", "--format", "{{json .Runtimes}}"]
DAEMON_JSON = "/etc/docker/daemon.json"
TOOLKIT_CONFIG = "/etc/nvidia-container-runtime/config.toml"
CDI_DIRS = ("/etc/cdi", "/var/run/cdi")


def classify_docker_error(res: CommandResult) -> Optional[Tuple[str, str]]:
    """``(code, message)`` for a docker command that did not reach the daemon."""
    text = (res.stderr + "\n" + res.stdout).strip()
    if res.timed_out:
        return "timed_out", f"docker did not answer within {res.duration:.0f}s (daemon hung?)"
    if res.error:
        return "not_run", res.describe_failure()
    low = text.lower()
    if "permission denied" in low and "docker" in low:
        return "permission_denied", _last_line(text, "permission denied")
    if "cannot connect to the docker daemon" in low or "is the docker daemon running" in low:
        return "daemon_not_running", _last_line(text, "cannot connect")
    if res.returncode not in (0, None):
        return "failed", res.describe_failure()
    return None


def _last_line(text: str, needle: str) -> str:
    for line in text.splitlines():
        if needle in line.lower():
            return line.strip()[:300]
    return text.splitlines()[-1].strip()[:300] if text else ""


def _as_dict(value: Any) -> Dict[str, Any]:
    """``value`` itself when it is a dict (a JSON object), else a new empty dict."""
    return value if isinstance(value, dict) else {}


def _first_json_object(text: str) -> Optional[Dict[str, Any]]:
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                doc = json.loads(line)
            except ValueError:
                continue
            if isinstance(doc, dict):
                return doc
    return None


def docker_facts(host: Host) -> Tuple[List[Fact], Optional[List[str]]]:
    """container.docker and container.docker_snap; also the runtimes docker reports."""
    facts: List[Fact] = []
    path = host.which("docker")
    snap = host.exists("/snap/bin/docker") or host.is_dir("/snap/docker")
    facts.append(ok("container.docker_snap", bool(snap), "dir:/snap/docker", "Docker from snap"))
    if not path and not snap:
        facts.append(ok("container.docker", {"installed": False, "client": None, "server": None, "error": None},
                        "env:PATH", "Docker"))
        return facts, None
    # A snap-only install is often missing from PATH (/snap/bin): call it by its full path then.
    docker = "docker" if path else "/snap/bin/docker"
    version_argv = [docker] + DOCKER_VERSION[1:]
    src = "command:" + " ".join(version_argv)
    res = host.run(version_argv, timeout=10)
    value: Dict[str, Any] = {"installed": True, "path": path or "/snap/bin/docker", "client": None,
                             "server": None, "api_version": None, "error": None, "message": ""}
    doc = _first_json_object(res.stdout)
    if doc:
        client = _as_dict(doc.get("Client"))
        server = _as_dict(doc.get("Server"))
        value["client"] = client.get("Version")
        value["api_version"] = client.get("ApiVersion")
        value["server"] = server.get("Version") if server else None
        if server:
            value["server_api_version"] = server.get("ApiVersion")
    err = classify_docker_error(res)
    if err and not (value["server"] and res.returncode == 0):
        value["error"], value["message"] = err
    if res.timed_out:
        facts.append(timed_out("container.docker", "docker version: " + value["message"], src, "Docker"))
        return facts, None
    if res.not_found:
        why = f"docker was found ({path or docker}) but could not be run: {res.describe_failure()}"
        facts.append(unknown("container.docker", why, src, "Docker"))
        return facts, None
    if not doc and not err:
        facts.append(unknown("container.docker", f"docker version printed no JSON ({res.stdout.strip()[:120]!r})",
                             src, "Docker"))
        return facts, None
    facts.append(ok("container.docker", value, src, "Docker"))
    runtimes: Optional[List[str]] = None
    if value["server"]:
        info = host.run([docker] + DOCKER_RUNTIMES[1:], timeout=10)
        rt = None
        if info.ok:
            try:
                rt = json.loads(info.stdout.strip() or "null")
            except ValueError:
                rt = None
        if isinstance(rt, dict):
            runtimes = sorted(rt)
    return facts, runtimes


def daemon_json_fact(host: Host) -> Tuple[Fact, Optional[Dict[str, Any]]]:
    res = host.read_file(DAEMON_JSON, limit=256 * 1024)
    src = "file:" + DAEMON_JSON
    label = "Docker daemon.json"
    if res.text is None:
        if res.missing:
            return ok("container.daemon_json", {"present": False}, src, label), None
        return unknown("container.daemon_json", f"cannot read {DAEMON_JSON} ({res.error})", src, label), None
    if not res.text.strip():
        return ok("container.daemon_json", {"present": True, "runtimes": [], "default_runtime": None}, src,
                  label), {}
    try:
        doc = json.loads(res.text)
    except ValueError as exc:
        why = f"{DAEMON_JSON} is not valid JSON ({exc}); dockerd refuses to start with it"
        return unknown("container.daemon_json", why, src, label), None
    if not isinstance(doc, dict):
        return unknown("container.daemon_json", f"{DAEMON_JSON} is not a JSON object", src, label), None
    runtimes = _as_dict(doc.get("runtimes"))
    nvidia = runtimes.get("nvidia") if isinstance(runtimes.get("nvidia"), dict) else None
    value = {"present": True, "runtimes": sorted(runtimes), "default_runtime": doc.get("default-runtime"),
             "nvidia_runtime_path": nvidia.get("path") if nvidia else None}
    return ok("container.daemon_json", value, src, label), doc


_CTK = re.compile(r"NVIDIA Container Toolkit CLI version\s+(\S+)")
_CLI = re.compile(r"^cli-version:\s*(\S+)", re.M)


def toolkit_fact(host: Host) -> Fact:
    ctk = host.run(["nvidia-ctk", "--version"], timeout=5)
    cli = host.run(["nvidia-container-cli", "--version"], timeout=5)
    m1 = _CTK.search(ctk.stdout) if ctk.ok else None
    m2 = _CLI.search(cli.stdout) if cli.ok else None
    config = host.exists(TOOLKIT_CONFIG)
    runtime = host.which("nvidia-container-runtime")
    if not (m1 or m2):
        src = "command:nvidia-ctk --version"
        if ctk.not_found and cli.not_found and not config and not runtime:
            return ok("container.toolkit", {"installed": False, "version": None}, src, "NVIDIA Container Toolkit")
        why = "; ".join(r.describe_failure() if not r.ok else
                        "{}: unexpected output {!r}".format(" ".join(r.argv), r.stdout.strip()[:80])
                        for r in (ctk, cli))
        return unknown("container.toolkit", why, src, "NVIDIA Container Toolkit")
    value = {"installed": True, "version": (m1 or m2).group(1),  # type: ignore[union-attr]
             "ctk_version": m1.group(1) if m1 else None, "cli_version": m2.group(1) if m2 else None,
             "config_toml": config, "runtime_path": runtime}
    src = "command:nvidia-ctk --version" if m1 else "command:nvidia-container-cli --version"
    return ok("container.toolkit", value, src, "NVIDIA Container Toolkit")


def cdi_fact(host: Host) -> Fact:
    specs: List[Dict[str, Any]] = []
    for d in CDI_DIRS:
        for path in host.glob_dir(d, r".+\.(ya?ml|json)"):
            text = host.read_text(path, limit=4 * 1024 * 1024) or ""
            kind = re.search(r"""^\s*"?kind"?\s*:\s*"?([\w./-]+)""", text, re.M)
            ver = re.search(r"""^\s*"?cdiVersion"?\s*:\s*"?([\w.]+)""", text, re.M)
            devices = re.findall(r"""^\s*-\s*"?name"?\s*:\s*"?([\w.-]+)""", text, re.M)
            specs.append({"path": path, "kind": kind.group(1) if kind else None,
                          "cdi_version": ver.group(1) if ver else None, "devices": devices})
    value = {"specs": specs, "nvidia": any((s["kind"] or "").startswith("nvidia.com/") for s in specs)}
    return ok("container.cdi_specs", value, "dir:" + ",".join(CDI_DIRS), "CDI specs")


def podman_fact(host: Host) -> Fact:
    res = host.run(["podman", "--version"], timeout=5)
    src = "command:podman --version"
    if res.not_found:
        return ok("container.podman", {"installed": False, "version": None}, src, "Podman")
    m = re.search(r"podman(?:-remote)? version\s+(\S+)", res.stdout) if res.ok else None
    if not m:
        reason = res.describe_failure() if not res.ok else f"unexpected output {res.stdout.strip()[:80]!r}"
        if res.timed_out:
            return timed_out("container.podman", reason, src, "Podman")
        return unknown("container.podman", reason, src, "Podman")
    return ok("container.podman", {"installed": True, "version": m.group(1)}, src, "Podman")


@register("containers", "Containers", order=100)
def probe_containers(ctx: ProbeContext) -> Iterable[Fact]:
    host = ctx.host
    facts, runtimes = docker_facts(host)
    dj_fact, dj = daemon_json_fact(host)
    facts.append(dj_fact)
    label = "NVIDIA runtime registered with Docker"
    if runtimes is not None:
        facts.append(ok("container.nvidia_runtime_configured", "nvidia" in runtimes,
                        "command:" + " ".join(DOCKER_RUNTIMES), label))
    elif dj is not None:
        rts = _as_dict(dj.get("runtimes"))
        facts.append(ok("container.nvidia_runtime_configured", "nvidia" in rts, "file:" + DAEMON_JSON, label))
    elif dj_fact.known and dj_fact.value.get("present") is False:
        facts.append(ok("container.nvidia_runtime_configured", False, "file:" + DAEMON_JSON, label))
    else:
        facts.append(unknown("container.nvidia_runtime_configured",
                             f"the Docker daemon did not answer and {DAEMON_JSON} could not be used",
                             "file:" + DAEMON_JSON, label))
    facts.append(toolkit_fact(host))
    facts.append(cdi_fact(host))
    facts.append(podman_fact(host))
    return facts

