"""Container engines and the NVIDIA Container Toolkit: Docker (client, daemon,
runtimes, ``/etc/docker/daemon.json``), snap Docker, the toolkit's CLIs and
config, CDI specs, Podman.

The Docker daemon is often down, hung, or closed to the current user; each of
those is reported as what it is (with the error Docker printed), never as
"Docker not installed".

No network: ``diagnose`` and ``snapshot`` open no network connection, and
``docker version`` / ``docker info`` talk to whatever daemon DOCKER_HOST or the
current docker context names -- a TCP port, or an ``ssh`` child process.  So the
endpoint is worked out first, from the environment and the docker context store
(:func:`docker_endpoint`), and the daemon is asked only when it is certainly a
local unix socket.  Otherwise only the client's version is read, with a command
that contacts nothing, and the daemon is reported as not contacted, with why.
``podman --version`` is answered by the client before any connection is set up
(cobra prints the version before podman's PersistentPreRunE connects, remote or
not), so Podman needs no such care.
"""

from __future__ import annotations

import fnmatch
import json
import posixpath
import re
from typing import Any, Dict, Iterable, Iterator, List, NamedTuple, Optional, Tuple

from .. import lazyre
from ..facts import Fact, ok, timed_out, unknown
from ..host.base import FILE_FILTERS, FILE_PATTERN_FILTERS, CommandResult, Host
from ..host.privacy import redact_environ
from . import ProbeContext, register
from .mounts import MOUNTS, MOUNTS_LINK, mount_table

DOCKER_VERSION = ["docker", "version", "--format", "{{json .}}"]
DOCKER_RUNTIMES = ["docker", "info", "--format", "{{json .Runtimes}}"]
DOCKER_CGROUP_DRIVER = ["docker", "info", "--format", "{{.CgroupDriver}}"]
#: The NVIDIA character devices' major number (/dev/nvidia0 is 195:0, /dev/nvidiactl 195:255).
NVIDIA_MAJOR = "195"
#: The client's version without contacting any daemon.  ``--version`` is answered before any API
#: call; ``--host`` pins the endpoint to a path no daemon can listen on (connecting to it fails at
#: once with ECONNREFUSED), because docker CLIs before 19.03.9 pinged the daemon while starting up,
#: whatever the command (docker/cli#2424), and would otherwise dial DOCKER_HOST or the context's host.
DOCKER_CLIENT_VERSION = ["docker", "--host", "unix:///dev/null", "--version"]
#: The daemon docker uses when neither DOCKER_HOST nor a docker context names another (Linux).
DEFAULT_DOCKER_HOST = "unix:///var/run/docker.sock"
NOT_CONTACTED = "envdoctor diagnose opens no network connection"
#: More docker contexts than any workstation holds: past this, the store is not read through.
MAX_CONTEXTS = 64
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


class DockerEndpoint(NamedTuple):
    """Where docker would send its API calls, and whether envdoctor may send them there too."""

    url: Optional[str]  # credentials redacted; None when it cannot be told
    source: str  # "env:DOCKER_HOST", "file:<context meta.json>", "dir:<context store>", "default"
    contact: bool  # True only when every endpoint docker could be using is a local unix socket
    reason: str = ""  # why not, when not


def _redact_url(url: str) -> str:
    """``url`` with any ``user:password@`` replaced, by the very rule snapshots apply to environment
    values, so a live report and the replay of its snapshot say the same."""
    return redact_environ({"DOCKER_HOST": url})["DOCKER_HOST"]


def _is_local(url: str) -> bool:
    # unix:// is the only local transport on Linux; tcp://, http(s)://, ssh:// (docker runs `ssh`),
    # fd://, npipe:// and a bare host:port (docker reads it as tcp://) all are, or may be, elsewhere.
    # Even tcp://127.0.0.1 is an AF_INET connection, which the "no network" promise rules out.
    return url.startswith("unix://")


def _go_field(doc: Dict[str, Any], name: str) -> Any:
    """``doc[name]`` as Go's encoding/json fills a struct field: keys match case-insensitively and the
    last match in the document wins (so a hand-edited ``"host"`` after ``"Host"`` is the one docker
    uses)."""
    value = None
    for key, v in doc.items():
        if key.casefold() == name.casefold():
            value = v
    return value


def _read_context(host: Host, path: str) -> Optional[Tuple[str, Optional[str], str]]:
    """``(name, docker host URL, problem)`` from a context's meta.json; None when there is none.

    The layout (docker/cli cli/context/store): ``<config dir>/contexts/meta/<sha256 of the context
    name>/meta.json`` holding ``{"Name": ..., "Endpoints": {"docker": {"Host": ...}}}``.  TLS material
    lives apart (``contexts/tls``) and is never read.
    """
    res = host.read_file(path, limit=64 * 1024)
    if res.missing:
        return None
    if res.text is None:
        return "?", None, f"cannot read {path} ({res.error})"
    try:
        doc = json.loads(res.text)
    except ValueError as exc:
        return "?", None, f"{path} is not valid JSON ({exc})"
    if not isinstance(doc, dict):
        return "?", None, f"{path} is not a JSON object"
    name = _go_field(doc, "Name")
    name = name if isinstance(name, str) and name else "?"
    endpoint = _as_dict(_go_field(doc, "Endpoints")).get("docker")
    url = _go_field(endpoint, "Host") if isinstance(endpoint, dict) else None
    if not isinstance(url, str) or not url.strip():
        return name, None, f"docker context {name!r} ({path}) names no docker host"
    return name, url.strip(), ""


def _config_dirs(host: Host, snap: bool) -> List[str]:
    """docker's configuration directories: $DOCKER_CONFIG, else ~/.docker (docker/cli cli/config).
    The snap runs docker with HOME set to its own data directory, so its store is looked at too."""
    configured = host.getenv("DOCKER_CONFIG") or ""
    if configured:
        return [configured]
    home = host.getenv("HOME") or ""
    if not home:
        # docker would ask the password database; the seam cannot, so no store is known and only
        # DOCKER_HOST / DOCKER_CONTEXT decide (see docker_endpoint).
        return []
    dirs = [posixpath.join(home, ".docker")]
    if snap:
        dirs.append(posixpath.join(home, "snap", "docker", "current", ".docker"))
    return dirs


def _decide(candidates: List[Tuple[str, str, str]], problems: List[str], source: str,
            fallback: Optional[str], hint: str = "") -> DockerEndpoint:
    """Contact only when every endpoint docker could be using is local.  ``candidates`` holds
    ``(url, source, what)``; ``fallback`` is the endpoint used when no candidate applies (None: docker
    would fail before contacting anything); ``hint`` ends the reason when there is one."""
    if problems:
        return DockerEndpoint(None, source, False, "cannot tell which daemon docker would contact: %s; %s%s"
                              % (problems[0], NOT_CONTACTED, hint))
    for url, src, what in candidates:
        if not _is_local(url):
            return DockerEndpoint(_redact_url(url), src, False, "daemon at %s (%s) not contacted: %s%s"
                                  % (_redact_url(url), what, NOT_CONTACTED, hint))
    urls = sorted({_redact_url(url) for url, _, _ in candidates} | ({fallback} if fallback else set()))
    if not urls:
        return DockerEndpoint(None, source, False, "daemon not contacted: %s" % NOT_CONTACTED)
    if len(candidates) == 1 and fallback is None:
        return DockerEndpoint(urls[0], candidates[0][1], True)
    return DockerEndpoint(" or ".join(urls), source, True)


def docker_endpoint(host: Host, snap: bool = False) -> DockerEndpoint:
    """The daemon a docker command would contact, decided the way the docker CLI does (docker/cli
    cli/command/cli.go, resolveContextName): a non-empty DOCKER_HOST wins (the "default" context);
    else the context named by DOCKER_CONTEXT; else the ``currentContext`` of config.json; else the
    default context, whose endpoint is DEFAULT_DOCKER_HOST.

    config.json is never read: it holds registry credentials ("auths"), and every file probes read
    goes verbatim into snapshots.  Without it, the current context may be any context in the store,
    so the daemon is contacted only when every one of them is local (the usual store, empty or
    absent, leaves only the default).  One directory listing on the common path; no process.
    """
    raw = host.getenv("DOCKER_HOST") or ""
    if raw:
        return _decide([(raw.strip() or DEFAULT_DOCKER_HOST, "env:DOCKER_HOST", "DOCKER_HOST")], [],
                       "env:DOCKER_HOST", None)
    dirs = _config_dirs(host, snap)
    name = host.getenv("DOCKER_CONTEXT") or ""
    candidates: List[Tuple[str, str, str]] = []
    problems: List[str] = []
    if name == "default":
        return DockerEndpoint(DEFAULT_DOCKER_HOST, "env:DOCKER_CONTEXT", True)
    if name:
        import hashlib  # only here: importing it costs every run 2.6 ms

        digest = hashlib.sha256(name.encode("utf-8")).hexdigest()
        for d in dirs:
            path = posixpath.join(d, "contexts", "meta", digest, "meta.json")
            ctx = _read_context(host, path)
            if ctx is None:
                continue
            if ctx[2]:
                problems.append(ctx[2])
            else:
                candidates.append((ctx[1] or "", "file:" + path, "docker context %r, from DOCKER_CONTEXT" % name))
        if not candidates and not problems:
            where = " or ".join(posixpath.join(d, "contexts") for d in dirs) or "any store (HOME is unset)"
            problems.append("DOCKER_CONTEXT names docker context %r, which is not in %s (docker commands fail "
                            "with 'context not found')" % (name, where))
        return _decide(candidates, problems, "env:DOCKER_CONTEXT", None)
    stores = []
    for d in dirs:
        meta = posixpath.join(d, "contexts", "meta")
        listing = host.list_dir(meta)
        if not listing.ok:
            if listing.error not in ("ENOENT", "ENOTDIR"):
                problems.append("cannot list the docker contexts in %s (%s)" % (meta, listing.error))
            continue
        stores.append(meta)
        entries = listing.names()
        if len(entries) > MAX_CONTEXTS:
            problems.append("%s holds %d docker contexts, more than envdoctor reads" % (meta, len(entries)))
            continue
        for entry in entries:
            path = posixpath.join(meta, entry, "meta.json")
            ctx = _read_context(host, path)
            if ctx is None:
                continue  # no meta.json: docker cannot use it either
            if ctx[2]:
                problems.append(ctx[2])
            else:
                candidates.append((ctx[1] or "", "file:" + path, "docker context %r, which may be the current "
                                                                  "one" % ctx[0]))
    if not candidates and not problems:
        return DockerEndpoint(DEFAULT_DOCKER_HOST, "default", True)
    hint = (". The current context is named in docker's config.json, which envdoctor does not read (it holds "
            "registry credentials); set DOCKER_CONTEXT to the context to check, or DOCKER_CONTEXT=default")
    return _decide(candidates, problems, "dir:" + ",".join(stores), DEFAULT_DOCKER_HOST, hint)


def _podman_wrapper(host: Host, path: str) -> bool:
    """Whether ``docker`` may be Podman's docker wrapper (podman-docker: a script, or a link to podman),
    which follows CONTAINER_HOST / CONTAINER_CONNECTION instead of DOCKER_HOST."""
    real = host.resolve(path)
    if posixpath.basename(real).startswith("podman"):
        return True
    return not host.elf(real).ok  # a script (or unreadable): cannot rule it out


def _podman_remote(host: Host) -> Optional[str]:
    """The remote service Podman is pointed at by the environment, if any."""
    container_host = (host.getenv("CONTAINER_HOST") or "").strip()
    if container_host and not _is_local(container_host):
        return "CONTAINER_HOST=" + _redact_url(container_host)
    connection = (host.getenv("CONTAINER_CONNECTION") or "").strip()
    if connection:
        return "CONTAINER_CONNECTION=" + connection
    return None


_DOCKER_CLIENT = lazyre.compile(r"Docker version\s+([^\s,]+)")


def _uncontacted_docker(host: Host, docker: str, path: str, ep: DockerEndpoint) -> Fact:
    """container.docker when the daemon is not to be contacted: the client's version, and why."""
    argv = [docker] + DOCKER_CLIENT_VERSION[1:]
    src = "command:" + " ".join(argv)
    res = host.run(argv, timeout=10)
    if res.not_found:
        why = f"docker was found ({path}) but could not be run: {res.describe_failure()}"
        return unknown("container.docker", why, src, "Docker")
    m = _DOCKER_CLIENT.search(res.stdout) if res.ok else None
    message = ep.reason
    if not m:
        message += "; client version unknown (%s)" % (
            res.describe_failure() if not res.ok else "unexpected output %r" % res.stdout.strip()[:80])
    value = {"installed": True, "path": path, "client": m.group(1) if m else None, "server": None,
             "api_version": None, "error": "not_contacted", "message": message, "endpoint": ep.url,
             "endpoint_source": ep.source}
    return ok("container.docker", value, src, "Docker")


def _docker_plan(host: Host) -> Tuple[Optional[str], bool, str, str, Optional[DockerEndpoint]]:
    """Where docker is and which daemon it would talk to: (its PATH entry, whether a snap is installed, the name
    to call it by, the path shown, the endpoint; None when it is not installed)."""
    path = host.which("docker")
    snap = bool(host.exists("/snap/bin/docker") or host.is_dir("/snap/docker"))
    if not path and not snap:
        return path, snap, "", "", None
    # A snap-only install is often missing from PATH (/snap/bin): call it by its full path then.
    docker = "docker" if path else "/snap/bin/docker"
    shown = path or "/snap/bin/docker"
    ep = docker_endpoint(host, snap=shown.startswith("/snap/"))
    if ep.contact:
        remote = _podman_remote(host)
        if remote and _podman_wrapper(host, shown):
            ep = DockerEndpoint(None, "env:" + remote.split("=", 1)[0], False,
                                "daemon not contacted: %s may be Podman's docker wrapper, which follows %s; %s"
                                % (shown, remote, NOT_CONTACTED))
    return path, snap, docker, shown, ep


def launch_docker(host: Host) -> None:
    """Start the docker command :func:`docker_facts` will run first (the same decision, from the same reads),
    ahead of the probes: it is over before the NVML query starts (docker alone is about 20 MiB)."""
    _, _, docker, _, ep = _docker_plan(host)
    if ep is not None:
        host.launch([docker] + (DOCKER_VERSION if ep.contact else DOCKER_CLIENT_VERSION)[1:], timeout=10)


def docker_facts(host: Host) -> Tuple[List[Fact], Optional[List[str]], bool]:
    """container.docker and container.docker_snap; the runtimes docker reports; whether the daemon
    was contacted (False: remote or unresolved, see :func:`docker_endpoint`)."""
    facts: List[Fact] = []
    path, snap, docker, shown, ep = _docker_plan(host)
    facts.append(ok("container.docker_snap", snap, "dir:/snap/docker", "Docker from snap"))
    if ep is None:
        facts.append(ok("container.docker", {"installed": False, "client": None, "server": None, "error": None},
                        "env:PATH", "Docker"))
        return facts, None, True
    if not ep.contact:
        facts.append(_uncontacted_docker(host, docker, shown, ep))
        return facts, None, False
    version_argv = [docker] + DOCKER_VERSION[1:]
    src = "command:" + " ".join(version_argv)
    res = host.run(version_argv, timeout=10)
    value: Dict[str, Any] = {"installed": True, "path": shown, "client": None,
                             "server": None, "api_version": None, "error": None, "message": "",
                             "endpoint": ep.url, "endpoint_source": ep.source}
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
        return facts, None, True
    if res.not_found:
        why = f"docker was found ({path or docker}) but could not be run: {res.describe_failure()}"
        facts.append(unknown("container.docker", why, src, "Docker"))
        return facts, None, True
    if not doc and not err:
        facts.append(unknown("container.docker", f"docker version printed no JSON ({res.stdout.strip()[:120]!r})",
                             src, "Docker"))
        return facts, None, True
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
    return facts, runtimes, True


def cgroup_driver_fact(host: Host, docker: Dict[str, Any]) -> Optional[Fact]:
    """Docker's cgroup driver (asked only when it matters: the NVIDIA links are missing from /dev/char)."""
    argv = ["docker" if host.which("docker") else str(docker.get("path") or "docker")] + DOCKER_CGROUP_DRIVER[1:]
    res = host.run(argv, timeout=10)
    driver = res.stdout.strip() if res.ok else ""
    if driver not in ("systemd", "cgroupfs", "none"):
        return None
    return ok("container.docker_cgroup_driver", driver, "command:" + " ".join(DOCKER_CGROUP_DRIVER),
              "Docker cgroup driver")


def dev_char_fact(host: Host) -> Optional[Fact]:
    """Whether /dev/char holds links for the NVIDIA devices (major 195): runc resolves the device rules systemd
    re-applies through them (nvidia-ctk system create-dev-char-symlinks makes them)."""
    if not host.exists("/dev/nvidiactl"):
        return None
    listing = host.list_dir("/dev/char")
    if not listing.ok:
        return None
    links = sorted(n for n in listing.names() if n.split(":", 1)[0] == NVIDIA_MAJOR)
    return ok("container.dev_char_nvidia_links", links, "dir:/dev/char", "NVIDIA links in /dev/char")


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


def daemon_json_syntax(host: Host) -> Optional[Fact]:
    """``container.daemon_json_invalid`` (only when it is): daemon.json is not JSON, or not a JSON object. dockerd
    decodes it before anything else and exits ("unable to configure the Docker daemon with file ...")."""
    res = host.read_file(DAEMON_JSON, limit=256 * 1024)
    if res.text is None or not res.text.strip():
        return None
    try:
        doc = json.loads(res.text)
    except ValueError as exc:
        line, col = getattr(exc, "lineno", None), getattr(exc, "colno", None)
        return ok("container.daemon_json_invalid", {"path": DAEMON_JSON, "error": getattr(exc, "msg", str(exc)),
                                                    "line": line, "column": col},
                  "file:" + DAEMON_JSON, "Docker daemon.json syntax")
    if not isinstance(doc, dict):
        return ok("container.daemon_json_invalid", {"path": DAEMON_JSON, "error": "not a JSON object",
                                                    "line": None, "column": None},
                  "file:" + DAEMON_JSON, "Docker daemon.json syntax")
    return None


_CTK = lazyre.compile(r"NVIDIA Container Toolkit CLI version\s+(\S+)")
_TOML_SECTION = lazyre.compile(r"^\s*\[\s*([\w.-]+)\s*\]\s*(?:#.*)?$")
_TOML_KEY = lazyre.compile(r"""^\s*"?([\w-]+)"?\s*=\s*(.*?)\s*(?:#.*)?$""")


def _toml_lines(text: str) -> Iterator[Tuple[str, str]]:
    """(section, line) for each line of a config.toml that is neither a comment (the packaged file lists every
    default commented out) nor a section header."""
    section = ""
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            continue
        sec = _TOML_SECTION.match(line)
        if sec:
            section = sec.group(1)
            continue
        yield section, line


def toolkit_settings(text: str) -> Dict[str, Any]:
    """The config.toml settings the checks judge: ``no_cgroups`` ([nvidia-container-cli] no-cgroups: True,
    False, or None when not set; the toolkit's default is false) and ``mode`` ([nvidia-container-runtime] mode,
    None when not set: "auto").  Commented-out lines (the packaged file lists every default that way) are not
    settings.  A value that is not a TOML boolean or string reads as None, as if unset."""
    out: Dict[str, Any] = {"no_cgroups": None, "mode": None}
    for section, line in _toml_lines(text):
        kv = _TOML_KEY.match(line)
        if not kv:
            continue
        key, raw = kv.group(1), kv.group(2)
        if section == "nvidia-container-cli" and key == "no-cgroups":
            out["no_cgroups"] = {"true": True, "false": False}.get(raw)
        elif section == "nvidia-container-runtime" and key == "mode":
            m = re.fullmatch(r"""["']([\w-]*)["']""", raw)
            out["mode"] = m.group(1) if m else None
    return out
_CLI = lazyre.compile(r"^cli-version:\s*(\S+)", re.M)

#: Where enroot keeps its hooks (``$(sysconfdir)/enroot/hooks.d``: its packages' /etc, ``make install``'s default
#: prefix /usr/local), and the name of its NVIDIA hook there (98-nvidia.sh, 99-nvidia.sh before), which runs
#: ``nvidia-container-cli --user configure`` itself (NVIDIA/enroot Makefile and conf/hooks/98-nvidia.sh).
ENROOT_HOOK_DIRS = ("/etc/enroot/hooks.d", "/usr/local/etc/enroot/hooks.d")
ENROOT_NVIDIA_HOOK = r"\d*-?nvidia\.sh"


def direct_cli_callers(host: Host) -> List[str]:
    """The hooks installed here that call ``nvidia-container-cli`` themselves rather than through the
    toolkit's own ``nvidia-container-runtime-hook`` (which passes every flag it means): enroot's NVIDIA hook."""
    found: List[str] = []
    for d in ENROOT_HOOK_DIRS:
        found.extend(host.glob_dir(d, ENROOT_NVIDIA_HOOK))
    return sorted(found)


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
             "config_toml": config, "runtime_path": runtime, "direct_cli_callers": direct_cli_callers(host)}
    if config:
        text = host.read_text(TOOLKIT_CONFIG, limit=256 * 1024)
        value.update(toolkit_settings(text) if text is not None else {"no_cgroups": None, "mode": None})
    src = "command:nvidia-ctk --version" if m1 else "command:nvidia-container-cli --version"
    return ok("container.toolkit", value, src, "NVIDIA Container Toolkit")


#: Where the NVIDIA GPU Operator's toolkit daemonset installs the toolkit on the node, and the config.toml it writes
#: there (gpu-operator assets/state-container-toolkit: toolkit install dir /usr/local/nvidia; the toolkit's installer
#: writes .config/nvidia-container-runtime/config.toml under <dir>/toolkit).
OPERATOR_TOOLKIT_DIR = "/usr/local/nvidia/toolkit"
OPERATOR_TOOLKIT_CONFIG = OPERATOR_TOOLKIT_DIR + "/.config/nvidia-container-runtime/config.toml"
_LIBNVC_RELEASE = r"libnvidia-container\.so\.(\d+\.\d+\.\d+)"
_LDCONFIG_KEY = lazyre.compile(r"""^\s*ldconfig\s*=\s*["']([^"']*)["']\s*(?:#.*)?$""")


def toolkit_ldconfig_setting(text: str) -> Optional[str]:
    """The ``[nvidia-container-cli] ldconfig`` value a toolkit config.toml sets, or None."""
    for section, line in _toml_lines(text):
        m = _LDCONFIG_KEY.match(line)
        if m and section == "nvidia-container-cli":
            return m.group(1)
    return None


def operator_toolkit_release(host: Host) -> Optional[str]:
    """The release of the toolkit the GPU Operator installed in :data:`OPERATOR_TOOLKIT_DIR`, from the
    ``libnvidia-container.so.X.Y.Z`` it copies there (released in step with the toolkit), or None."""
    found = host.glob_dir(OPERATOR_TOOLKIT_DIR, _LIBNVC_RELEASE)
    releases = sorted({re.fullmatch(_LIBNVC_RELEASE, posixpath.basename(p)).group(1)  # type: ignore[union-attr]
                       for p in found})
    return releases[-1] if len(releases) == 1 else None


def toolkit_ldconfig_fact(host: Host, toolkit: Fact) -> Optional[Fact]:
    """``container.toolkit_ldconfig``: the host ldconfig a toolkit config names (``ldconfig = "@/path"``) and
    whether that file is a shell script rather than the ELF program; None when no config names a host ldconfig."""
    configs: List[Dict[str, Any]] = []
    host_release = toolkit.value.get("version") if toolkit.known and isinstance(toolkit.value, dict) else None
    for path, release in ((TOOLKIT_CONFIG, host_release), (OPERATOR_TOOLKIT_CONFIG, None)):
        text = host.read_text(path, limit=256 * 1024)
        if text is None:
            continue
        setting = toolkit_ldconfig_setting(text)
        if not setting or not setting.startswith("@/"):
            continue
        target = setting[1:]
        head = host.read_text(target, limit=64)
        configs.append({
            "config": path, "ldconfig": setting, "present": head is not None,
            "script": head is not None and head.startswith("#!"),
            "real_present": host.read_text(target + ".real", limit=4) is not None,
            "release": release if path == TOOLKIT_CONFIG else operator_toolkit_release(host)})
    if not configs:
        return None
    return ok("container.toolkit_ldconfig", configs, "file:" + str(configs[0]["config"]),
              "the host ldconfig the NVIDIA Container Toolkit runs")


#: The containerd that runs a Kubernetes node's pods, and its config: RKE2 and k3s run their own containerd,
#: configured from <data-dir>/agent/etc/containerd/config.toml (generated from config.toml.tmpl when present) with
#: its socket at /run/k3s/containerd/containerd.sock (k3s pkg/agent/config/config.go and config_linux.go; RKE2's
#: data-dir defaults to /var/lib/rancher/rke2, docs.rke2.io/reference/linux_agent_config); any other node's
#: containerd reads /etc/containerd/config.toml and listens on /run/containerd/containerd.sock.
KUBE_CONTAINERDS = (
    ("RKE2", ("/usr/local/bin/rke2", "/usr/bin/rke2", "/opt/rke2/bin/rke2", "/var/lib/rancher/rke2/bin/containerd"),
     "/var/lib/rancher/rke2/agent/etc/containerd/config.toml", "/run/k3s/containerd/containerd.sock"),
    ("k3s", ("/usr/local/bin/k3s", "/usr/bin/k3s"),
     "/var/lib/rancher/k3s/agent/etc/containerd/config.toml", "/run/k3s/containerd/containerd.sock"),
)
CONTAINERD_CONFIG = "/etc/containerd/config.toml"
CONTAINERD_SOCKET = "/run/containerd/containerd.sock"
_CD_IMPORTS = lazyre.compile(r"^\s*imports\s*=\s*\[(.*?)\]", re.M | re.S)
_CD_NVIDIA = lazyre.compile(r"""^\s*\[[^\]]*\.runtimes\.["']?nvidia[\w-]*["']?\s*\]|nvidia-container-runtime""", re.M)
_CD_CDI = lazyre.compile(r"^\s*enable_cdi\s*=\s*true\b", re.M)
_CD_NO_CRI = lazyre.compile(r"""^\s*disabled_plugins\s*=\s*\[[^\]]*["'](?:cri|io\.containerd\.grpc\.v1\.cri)["']""",
                            re.M)


def _containerd_texts(host: Host, path: str) -> Tuple[Optional[str], bool]:
    """A containerd config's text with the files its ``imports`` name (globs in a directory); whether every
    import could be read."""
    text = host.read_text(path, limit=256 * 1024)
    if text is None:
        return None, True
    parts, complete = [text], True
    m = _CD_IMPORTS.search(text)
    for item in (re.findall(r"""["']([^"']+)["']""", m.group(1)) if m else [])[:16]:
        item = item if item.startswith("/") else posixpath.join(posixpath.dirname(path), item)
        d, name = posixpath.split(item)
        names = [posixpath.join(d, n) for n in host.list_dir(d).names() if fnmatch.fnmatchcase(n, name)] \
            if any(c in name for c in "*?[") else [item]
        for p in names[:32]:
            t = host.read_text(p, limit=256 * 1024)
            if t is None:
                complete = False
            else:
                parts.append(t)
    return "\n".join(parts), complete


def kube_containerd_fact(host: Host) -> Optional[Fact]:
    """``container.kube_containerd``: on a Kubernetes node whose pods run under containerd, that containerd's
    config and whether it registers an NVIDIA runtime; None elsewhere (no kubelet, RKE2 or k3s)."""
    found = next(((name, cfg, sock) for name, markers, cfg, sock in KUBE_CONTAINERDS
                  if any(host.exists(m) for m in markers)), None)
    if found is None:
        if not (host.which("kubelet") and host.which("containerd")):
            return None
        found = ("containerd", CONTAINERD_CONFIG, CONTAINERD_SOCKET)
    flavour, config, socket = found
    text, complete = _containerd_texts(host, config)
    value = {"flavour": flavour, "config": config, "socket": socket, "present": text is not None,
             "complete": complete,
             "nvidia_runtime": bool(text and _CD_NVIDIA.search(text)), "cdi": bool(text and _CD_CDI.search(text)),
             "cri_disabled": bool(text and _CD_NO_CRI.search(text)),
             "operator_toolkit": host.is_dir(OPERATOR_TOOLKIT_DIR)}
    return ok("container.kube_containerd", value, "file:" + config, "the containerd that runs the node's pods")


_KEY = lazyre.compile(r"""^(?P<indent>\s*)(?P<dash>-\s+)?"?(?P<key>[\w.-]+)"?\s*:\s*(?P<value>.*?)\s*$""")


def _scalar(value: str) -> str:
    value = value.split(" #", 1)[0].strip()
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'" else value


def _json_spec(text: str) -> Optional[Dict[str, Any]]:
    """A CDI spec written as JSON, as an object; None when it is not one."""
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def parse_cdi(text: str) -> Dict[str, Any]:
    """The parts of a CDI spec envdoctor judges: ``kind``, ``cdiVersion``, each device's name and every device
    node (``path``, ``hostPath``, ``major``, ``minor``), from the spec-wide ``containerEdits`` and each device's.

    JSON specs are parsed as JSON; YAML ones line by line, as ``nvidia-ctk cdi generate`` writes them (keys sorted:
    a device's ``name:`` comes after its ``containerEdits:``) and as people write them (``- name:`` first)."""
    if text.lstrip().startswith("{"):
        doc = _json_spec(text)
        if doc is not None:
            def nodes_of(edits: Any) -> List[Dict[str, str]]:
                out = []
                for n in (edits or {}).get("deviceNodes") or [] if isinstance(edits, dict) else []:
                    if isinstance(n, dict):
                        out.append({k: str(n[k]) for k in ("path", "hostPath", "major", "minor") if k in n})
                return out
            devices = [d for d in doc.get("devices") or [] if isinstance(d, dict)]
            nodes = nodes_of(doc.get("containerEdits"))
            for d in devices:
                nodes += nodes_of(d.get("containerEdits"))
            return {"kind": doc.get("kind"), "cdi_version": doc.get("cdiVersion"),
                    "devices": [str(d.get("name")) for d in devices if d.get("name") is not None], "nodes": nodes}
    out: Dict[str, Any] = {"kind": None, "cdi_version": None, "devices": [], "nodes": []}
    section = ""  # the top-level key we are in
    device_indent: Optional[int] = None  # indentation of the "- " that begins each device
    nodes_indent: Optional[int] = None  # indentation of "deviceNodes:" while inside it
    node: Optional[Dict[str, str]] = None
    node_keys: Optional[int] = None  # indentation of a device node's keys
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#") or line.startswith("---"):
            continue
        m = _KEY.match(line)
        if not m:
            if line.lstrip().startswith("-") and nodes_indent is not None:
                node = None  # a list item that is no node entry
            continue
        indent = len(m.group("indent"))
        dash = m.group("dash")
        key, value = m.group("key"), _scalar(m.group("value"))
        if indent == 0 and not dash:
            section, device_indent, nodes_indent, node = key, None, None, None
            if key == "kind":
                out["kind"] = value
            elif key == "cdiVersion":
                out["cdi_version"] = value
            elif key == "deviceNodes" and not value:  # a fragment: the list at the top
                nodes_indent = 0
            continue
        if nodes_indent is not None and indent <= nodes_indent and not (dash and indent == nodes_indent):
            nodes_indent, node = None, None
        if section == "devices" and dash and (device_indent is None or indent == device_indent) and \
                nodes_indent is None:
            device_indent = indent
        if section == "devices" and key == "name" and device_indent is not None and nodes_indent is None and (
                (dash and indent == device_indent) or (not dash and indent == device_indent + 2)):
            out["devices"].append(value)
            continue
        if key == "deviceNodes" and not value:
            nodes_indent, node = indent, None
            continue
        if nodes_indent is not None:
            if dash:
                node = {}
                node_keys = indent + len(dash)
                out["nodes"].append(node)
            if node is not None and indent + (len(dash) if dash else 0) == node_keys \
                    and key in ("path", "hostPath", "major", "minor"):
                node[key] = value
    return out


def cdi_device_nodes(text: str) -> List[str]:
    """The host device nodes a CDI spec's deviceNodes entries name (``hostPath`` where given, else ``path``),
    in order, each once (only paths under /dev)."""
    nodes: List[str] = []
    for n in parse_cdi(text)["nodes"]:
        node = n.get("hostPath") or n.get("path") or ""
        if node.startswith("/dev/") and node not in nodes:
            nodes.append(node)
    return nodes


#: A driver file whose name carries its release: ``libcuda.so.580.159.04``, ``libnvidia-ml.so.535.54``,
#: ``firmware/nvidia/580.159.04/gsp_ga10x.bin`` (a soname suffix that is no driver release, such as
#: ``libnvidia-egl-wayland.so.1.1.13``, is not one: :data:`versions.DRIVER_VERSION`).
_RELEASE_IN_PATH = (lazyre.compile(r"\.so\.(\d{3,}\.\d+(?:\.\d+)?)$"),
                    lazyre.compile(r"/firmware/nvidia/(\d{3,}\.\d+(?:\.\d+)?)/"))
#: The release a spec was generated for, where nvidia-ctk writes it (its enable-cuda-compat hook's argument).
_SPEC_DRIVER = lazyre.compile(r"--host-driver-version=[\"']?(\d{3,}\.\d+(?:\.\d+)?)\b")
#: The most versioned files kept per spec (nvidia-ctk's specs mount a few dozen).
MAX_DRIVER_FILES = 256


def driver_release_of(path: str) -> Optional[str]:
    """The NVIDIA driver release a host file's path names (see :data:`_RELEASE_IN_PATH`), or None."""
    for rx in _RELEASE_IN_PATH:
        m = rx.search(path)
        if m:
            return m.group(1)
    return None


def cdi_mount_paths(text: str) -> List[str]:
    """The host paths a CDI spec's ``mounts`` entries bind (``hostPath``), from the spec-wide ``containerEdits``
    and each device's, in order, each once. JSON specs are parsed as JSON; YAML ones line by line."""
    out: List[str] = []

    def add(value: Any) -> None:
        if isinstance(value, str) and value.startswith("/") and value not in out:
            out.append(value)

    if text.lstrip().startswith("{"):
        doc = _json_spec(text)
        if doc is not None:
            edits = [doc.get("containerEdits")] + [d.get("containerEdits") for d in doc.get("devices") or []
                                                   if isinstance(d, dict)]
            for e in edits:
                for m in (e.get("mounts") or [] if isinstance(e, dict) else []):
                    if isinstance(m, dict):
                        add(m.get("hostPath"))
            return out
    mounts_indent: Optional[int] = None  # indentation of "mounts:" while inside it
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#") or line.startswith("---"):
            continue
        m = _KEY.match(line)
        indent = len(line) - len(line.lstrip(" "))
        dash = bool(m and m.group("dash")) or line.lstrip().startswith("-")
        if mounts_indent is not None and indent <= mounts_indent and not (dash and indent == mounts_indent):
            mounts_indent = None
        if not m:
            continue
        key, value = m.group("key"), _scalar(m.group("value"))
        if key == "mounts" and not value:
            mounts_indent = indent + (len(m.group("dash")) if m.group("dash") else 0)
        elif mounts_indent is not None and key == "hostPath":
            add(value)
    return out


def cdi_spec_driver(text: str) -> Optional[str]:
    """The driver release a spec says it was generated for (``--host-driver-version=``), or None."""
    m = _SPEC_DRIVER.search(text)
    return m.group(1) if m else None


PROC_DEVICES = "/proc/devices"


def char_majors(text: str) -> Dict[str, int]:
    """``/proc/devices``' character devices: driver name -> major."""
    out: Dict[str, int] = {}
    part = text.split("Block devices:", 1)[0]
    for line in part.splitlines():
        m = re.match(r"^\s*(\d+)\s+(\S+)\s*$", line)
        if m:
            out.setdefault(m.group(2), int(m.group(1)))
    return out


#: Which /proc/devices driver a node of the NVIDIA driver belongs to: nvidia-uvm's and nvidia-caps' majors are
#: given out when the module loads (they change across driver reloads and kernels); the others are fixed (195).
_NODE_DRIVER = ((lazyre.compile(r"^/dev/nvidia-uvm(?:-tools)?$"), "nvidia-uvm"),
                (lazyre.compile(r"^/dev/nvidia-caps/"), "nvidia-caps"),
                (lazyre.compile(r"^/dev/nvidia-nvswitch"), "nvidia-nvswitch"),
                (lazyre.compile(r"^/dev/nvidia(?:\d+|ctl|-modeset)$"), "nvidia-frontend"))


def _wrong_majors(nodes: List[Dict[str, str]], majors: Dict[str, int]) -> List[Dict[str, Any]]:
    out = []
    for n in nodes:
        path = n.get("hostPath") or n.get("path") or ""
        if not str(n.get("major", "")).isdigit():
            continue
        driver = next((d for rx, d in _NODE_DRIVER if rx.match(path)), None)
        have = majors.get(driver or "")
        if driver == "nvidia-frontend" and have is None:
            have = majors.get("nvidia")
        if have is not None and have != int(n["major"]):
            out.append({"path": path, "spec_major": int(n["major"]), "host_major": have, "driver": driver})
    return out


def versioned_fields(text: str) -> List[str]:
    """The keys of the ``cdi_engines`` table's field rows that the spec uses (``additionalGids``...), each once: a
    CDI library older than the version that introduced one refuses the spec ('unknown field')."""
    from ..matrix import containers as ctm

    out = []
    for row in ctm.cdi_fields():
        key = str(row["key"])
        if key not in out and re.search(r'^\s*(?:-\s+)?"?%s"?\s*:' % re.escape(key), text, re.M):
            out.append(key)
    return out


def cdi_fact(host: Host) -> Fact:
    specs: List[Dict[str, Any]] = []
    majors: Optional[Dict[str, int]] = None
    for d in CDI_DIRS:
        for path in host.glob_dir(d, r".+\.(ya?ml|json)"):
            text = host.read_text(path, limit=4 * 1024 * 1024) or ""
            parsed = parse_cdi(text)
            nodes = cdi_device_nodes(text)
            spec: Dict[str, Any] = {"path": path, "kind": parsed["kind"], "cdi_version": parsed["cdi_version"],
                                    "devices": parsed["devices"],
                                    "missing_nodes": [n for n in nodes if not host.exists(n)],
                                    "fields": versioned_fields(text)}
            files = [(p, driver_release_of(p)) for p in cdi_mount_paths(text)]
            versioned = [{"path": p, "release": r, "missing": not host.exists(p)}
                         for p, r in files if r is not None][:MAX_DRIVER_FILES]
            if versioned:
                spec["driver_files"] = versioned
            own = cdi_spec_driver(text)
            if own:
                spec["driver_release"] = own
            if any(str(n.get("major", "")).isdigit() for n in parsed["nodes"]):
                if majors is None:
                    proc = host.read_text(PROC_DEVICES, limit=64 * 1024)
                    majors = char_majors(proc) if proc is not None else {}
                spec["wrong_majors"] = _wrong_majors(parsed["nodes"], majors)
            specs.append(spec)
    value = {"specs": specs, "nvidia": any((s["kind"] or "").startswith("nvidia.com/") for s in specs)}
    return ok("container.cdi_specs", value, "dir:" + ",".join(CDI_DIRS), "CDI specs")




#: Mount points a snapshot keeps whatever their options: /dev/shm (NCCL's buffers) and the temporary folders where
#: torch.compile's caches go by default (env.compile_cache), with the root they would otherwise fall under.
KEPT_MOUNT_POINTS = ("/dev/shm", "/", "/tmp", "/var/tmp")


def keep_shm_mount(text: str) -> str:
    """What a snapshot keeps of /proc/self/mounts: the lines of KEPT_MOUNT_POINTS, every noexec mount and every
    mount below a noexec one (what tells whether a folder may hold programs that get loaded); nothing else."""
    rows = [(line, line.split()) for line in text.splitlines()]
    noexec = [p[1] for _, p in rows if len(p) > 3 and "noexec" in p[3].split(",")]

    def kept(p: List[str]) -> bool:
        if len(p) < 2:
            return False
        if p[1] in KEPT_MOUNT_POINTS or p[1] in noexec:
            return True
        return any(p[1].startswith(n.rstrip("/") + "/") for n in noexec)

    return "".join(_site_free(p) + "\n" for _, p in rows if kept(p))


#: The mount options a kept line keeps besides its flags: what a mount's size says.
_SIZE_OPTIONS = ("size=", "nr_inodes=", "mode=")


def _site_free(p: List[str]) -> str:
    """A kept mount line without what names the site: a network filesystem's server (``nas:/export``,
    ``//server/share``) is written as its filesystem type, and of the options only the flags and the sizes are kept
    (an NFS mount's ``addr=``/``clientaddr=``, a CIFS mount's ``username=``/``domain=`` are not)."""
    source = p[0] if ":" not in p[0] and not p[0].startswith("//") else (p[2] if len(p) > 2 else "none")
    rest = list(p[1:])
    if len(rest) > 2:
        rest[2] = ",".join(o for o in rest[2].split(",") if "=" not in o or o.startswith(_SIZE_OPTIONS)) or "rw"
    return " ".join([source] + rest)


FILE_FILTERS[MOUNTS] = keep_shm_mount
FILE_FILTERS[MOUNTS_LINK] = keep_shm_mount


def shm_fact(host: Host) -> Optional[Fact]:
    """``container.shm``: the size of /dev/shm (its tmpfs mount's ``size=``), where NCCL keeps its intra-node
    buffers; None where there is no /dev/shm mount to read."""
    table = mount_table(host)
    if table is None:
        return None
    for mount in table.mounts:
        if mount["point"] == "/dev/shm":
            options = ",".join(mount["options"])
            m = re.search(r"(?:^|,)size=(\d+)([kmgKMG]?)(?:,|$)", options)
            if not m:
                return ok("container.shm", {"size_bytes": None, "options": options[:200]}, "file:" + table.where,
                          "/dev/shm")
            mult = {"": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}[m.group(2).lower()]
            return ok("container.shm", {"size_bytes": int(m.group(1)) * mult}, "file:" + table.where, "/dev/shm")
    return None


#: The kernel's RDMA devices (InfiniBand, RoCE, EFA) and their user-verbs interfaces (uverbsN), as sysfs shows
#: them; sysfs is not filtered by a container's device list, so inside one they list the host's devices.
RDMA_DEVICES = "/sys/class/infiniband"
RDMA_VERBS = "/sys/class/infiniband_verbs"
#: Where the uverbs character devices live: libibverbs opens /dev/infiniband/<uverbsN> for each device it lists
#: (rdma-core libibverbs/device.c, __ibv_open_device), so without the node the device cannot be used.
RDMA_DEV_DIR = "/dev/infiniband"
#: The user-space libraries that drive RDMA devices: verbs (rdma-core), libfabric (EFA, verbs providers) and NCCL's
#: network plugin (aws-ofi-nccl, nccl-rdma-sharp-plugins: NCCL dlopens libnccl-net.so).
RDMA_USERSPACE = ("libibverbs.so.1", "libfabric.so.1", "libnccl-net.so")
_UVERBS = lazyre.compile(r"^uverbs\d+$")


def rdma_fact(host: Host) -> Optional[Fact]:
    """``container.rdma``: the RDMA devices the kernel shows (``devices``: name and driver), their uverbs
    interfaces in sysfs (``verbs``), the nodes of /dev/infiniband (``nodes``; None when /dev/infiniband cannot be
    read for another reason than its absence) and which RDMA user-space libraries the loader finds
    (``userspace``); None where the kernel shows no RDMA device."""
    listing = host.list_dir(RDMA_DEVICES)
    names = sorted(listing.names())[:256] if listing.ok else []
    if not names:
        return None
    devices = []
    for name in names:
        drv = host.read_link(posixpath.join(host.resolve(posixpath.join(RDMA_DEVICES, name, "device")), "driver"))
        driver = posixpath.basename((drv.target or "").rstrip("/")) if drv.ok else ""
        devices.append({"name": name, "driver": driver or None})
    verbs = sorted((n for n in host.list_dir(RDMA_VERBS).names() if _UVERBS.match(n)),
                   key=lambda n: int(n[6:]))[:256]
    dev = host.list_dir(RDMA_DEV_DIR)
    if dev.ok:
        nodes: Optional[List[str]] = sorted(dev.names())[:512]
    elif dev.error in ("ENOENT", "ENOTDIR") or not host.exists(RDMA_DEV_DIR):
        nodes = []
    else:
        nodes = None
    from .loader import resolve_soname  # the loader's search order, for the few RDMA sonames
    userspace = []
    for soname in RDMA_USERSPACE:
        hit = resolve_soname(host, soname)
        if hit.get("path"):
            userspace.append({"soname": soname, "path": hit["path"]})
    return ok("container.rdma", {"devices": devices, "verbs": verbs, "nodes": nodes, "userspace": userspace},
              "dir:%s,%s,%s" % (RDMA_DEVICES, RDMA_VERBS, RDMA_DEV_DIR), "RDMA devices")


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


#: Where dockerd keeps its data when daemon.json names no other place ("data-root"; "graph" before Docker 17.05).
DOCKER_ROOT = "/var/lib/docker"
#: The most images whose configuration is read (the newest tags of a large image store stay unread past it).
MAX_IMAGES = 200
#: An image's configuration in dockerd's own store (the graph drivers' layout: image/<driver>/imagedb/...).
_IMAGE_CONFIG = lazyre.compile(r"/image/[^/]+/imagedb/content/sha256/[0-9a-f]{64}$")
#: The image variables kept: the NVIDIA Container Toolkit's constraints (NVIDIA_REQUIRE_*, NVIDIA_DISABLE_REQUIRE)
#: and the CUDA release of NVIDIA's CUDA images; the rest of an image's environment may hold secrets.
_KEPT_ENV = lazyre.compile(r"^(NVIDIA_REQUIRE_[A-Z0-9_]+|NVIDIA_DISABLE_REQUIRE|CUDA_VERSION)=")


def keep_image_config(text: str) -> str:
    """What a snapshot keeps of an image's configuration: the kept variables of its environment."""
    try:
        doc = json.loads(text)
    except ValueError:
        return ""
    env = _as_dict(_as_dict(doc).get("config")).get("Env")
    kept = [e for e in env if isinstance(e, str) and _KEPT_ENV.match(e)] if isinstance(env, list) else []
    return json.dumps({"config": {"Env": kept}})


FILE_PATTERN_FILTERS.append((_IMAGE_CONFIG, keep_image_config))


def images_fact(host: Host, daemon_json: Optional[Dict[str, Any]]) -> Optional[Fact]:
    """``container.images``: Docker's local images that carry NVIDIA Container Toolkit constraints
    (``NVIDIA_REQUIRE_CUDA`` in NVIDIA's CUDA images and those built on them; ``CUDA_VERSION`` alone in the legacy
    CUDA images of nvidia-docker 1.0's time, which the toolkit holds to ``cuda>=<major.minor>``), read from dockerd's
    image store (its ``repositories.json`` and each image's configuration), without asking the daemon. None when the
    store cannot be read (not there, another user's: dockerd keeps it to root) or holds no such image."""
    doc = daemon_json or {}
    root = doc.get("data-root") or doc.get("graph") or DOCKER_ROOT
    if not isinstance(root, str) or not root.startswith("/"):
        return None
    base = posixpath.join(root, "image")
    listing = host.list_dir(base)
    if not listing.ok:
        return None
    images: Dict[str, Dict[str, Any]] = {}
    for driver in listing.names():
        res = host.read_file(posixpath.join(base, driver, "repositories.json"), limit=8 * 1024 * 1024)
        try:
            repos = _as_dict(json.loads(res.text or "")).get("Repositories")
        except ValueError:
            continue
        for tags in _as_dict(repos).values():
            for tag, ident in sorted(_as_dict(tags).items()):
                if "@sha256:" in tag or not isinstance(ident, str) or not ident.startswith("sha256:"):
                    continue
                entry = images.get(ident)
                if entry is None:
                    if len(images) >= MAX_IMAGES:
                        continue
                    entry = images[ident] = {"tags": [], "driver": driver}
                entry["tags"].append(tag)
    found: List[Dict[str, Any]] = []
    for ident, entry in images.items():
        hexid = ident.split(":", 1)[1]
        if not re.match(r"^[0-9a-f]{64}$", hexid):
            continue
        text = host.read_text(posixpath.join(base, entry["driver"], "imagedb/content/sha256", hexid),
                              limit=4 * 1024 * 1024)
        try:
            env = _as_dict(_as_dict(json.loads(text or "")).get("config")).get("Env")
        except ValueError:
            continue
        if not isinstance(env, list):
            continue
        variables = dict(e.split("=", 1) for e in env if isinstance(e, str) and "=" in e and _KEPT_ENV.match(e))
        require = {k: v for k, v in variables.items() if k.startswith("NVIDIA_REQUIRE_")}
        if not require and not variables.get("CUDA_VERSION"):
            continue  # (CUDA_VERSION alone: a legacy CUDA image, still held to its CUDA release)
        found.append({"tags": sorted(entry["tags"]), "id": hexid[:12], "require": require,
                      "disable_require": variables.get("NVIDIA_DISABLE_REQUIRE", "").lower() in ("1", "true"),
                      "cuda_version": variables.get("CUDA_VERSION")})
    if not found:
        return None
    return ok("container.images", sorted(found, key=lambda i: i["tags"]), "dir:" + base,
              "Docker images with NVIDIA constraints")


#: Apptainer and its predecessor, by the program's name (both read <sysconfdir>/<name>/nvliblist.conf).
APPTAINER_PROGRAMS = ("apptainer", "singularity")
_APPTAINER_VERSION = lazyre.compile(r"version\s+v?(\d+(?:\.\d+)+)")
_USE_NVCCLI = lazyre.compile(r"^\s*use nvidia-container-cli\s*=\s*(\S+)", re.M)


def _apptainer_confdir(host: Host, program: str, path: str) -> List[str]:
    """Where an installed Apptainer (or Singularity) keeps its configuration: ``<sysconfdir>/<program>``, the
    sysconfdir of its installation prefix (``/usr/bin/apptainer``: /etc; ``/usr/local/bin``: /usr/local/etc;
    ``/opt/apptainer/bin``: /opt/apptainer/etc), then /etc."""
    prefix = posixpath.dirname(posixpath.dirname(host.resolve(path)))
    sysconf = "/etc" if prefix in ("/usr", "/", "") else posixpath.join(prefix, "etc")
    dirs = [posixpath.join(sysconf, program), posixpath.join("/etc", program)]
    return [d for i, d in enumerate(dirs) if d not in dirs[:i]]


def apptainer_fact(host: Host) -> Fact:
    """``container.apptainer``: the Apptainer (or Singularity) on PATH, its version, and the libraries its
    ``nvliblist.conf`` names for ``--nv`` (each non-comment line, as Apptainer reads it; ``uses_nvccli`` when its
    configuration hands ``--nv`` to nvidia-container-cli, which does not read the list)."""
    for program in APPTAINER_PROGRAMS:
        path = host.which(program)
        if not path:
            continue
        res = host.run([path, "--version"], timeout=5)
        m = _APPTAINER_VERSION.search(res.stdout) if res.ok else None
        value: Dict[str, Any] = {"installed": True, "program": program, "path": path,
                                 "version": m.group(1) if m else None, "nvliblist": None, "entries": None,
                                 "uses_nvccli": False}
        for confdir in _apptainer_confdir(host, program, path):
            conf = host.read_file(posixpath.join(confdir, "nvliblist.conf"), limit=256 * 1024)
            if conf.text is None:
                continue
            value["nvliblist"] = posixpath.join(confdir, "nvliblist.conf")
            value["entries"] = [line.strip() for line in conf.text.splitlines()[:4096]
                                if line.strip() and not line.strip().startswith("#")]
            main = host.read_file(posixpath.join(confdir, "%s.conf" % program), limit=256 * 1024).text or ""
            setting = _USE_NVCCLI.search(main)
            value["uses_nvccli"] = setting is not None and setting.group(1).lower() == "yes"
            break
        return ok("container.apptainer", value, "command:%s --version" % program, "Apptainer")
    return ok("container.apptainer", {"installed": False}, "which:apptainer", "Apptainer")


@register("containers", "Containers", order=100,
          produces=("container.*",), launch=launch_docker)
def probe_containers(ctx: ProbeContext) -> Iterable[Fact]:
    host = ctx.host
    facts, runtimes, contacted = docker_facts(host)
    dj_fact, dj = daemon_json_fact(host)
    facts.append(dj_fact)
    invalid = daemon_json_syntax(host)
    if invalid is not None:
        facts.append(invalid)
    label = "NVIDIA runtime registered with Docker"
    if not contacted:
        # daemon.json describes this machine's dockerd, which need not be the daemon docker talks to.
        facts.append(unknown("container.nvidia_runtime_configured",
                             "Docker's daemon was not contacted (see Docker); %s describes this machine's own "
                             "dockerd, which need not be the one docker uses" % DAEMON_JSON,
                             "file:" + DAEMON_JSON, label))
    elif runtimes is not None:
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
    toolkit = toolkit_fact(host)
    facts.append(toolkit)
    for extra in (toolkit_ldconfig_fact(host, toolkit), kube_containerd_fact(host)):
        if extra is not None:
            facts.append(extra)
    dev_char = dev_char_fact(host)
    if dev_char is not None:
        facts.append(dev_char)
        docker = next((f.value for f in facts if f.key == "container.docker" and f.known), None)
        if dev_char.value == [] and contacted and isinstance(docker, dict) and docker.get("server"):
            cg = cgroup_driver_fact(host, docker)
            if cg is not None:
                facts.append(cg)
    facts.append(cdi_fact(host))
    images = images_fact(host, dj)
    if images is not None:
        facts.append(images)
    facts.append(podman_fact(host))
    facts.append(apptainer_fact(host))
    shm = shm_fact(host)
    if shm is not None:
        facts.append(shm)
    rdma = rdma_fact(host)
    if rdma is not None:
        facts.append(rdma)
    return facts

