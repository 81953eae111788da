"""Keep reports and snapshots safe to paste into a public bug report.

* Secrets (always, even with ``--include-host``): the snapshot keeps every
  environment variable's *name*, never a credential's *value*.  Three rules
  apply to each variable (see :func:`redact_environ`):

  - by name: a name that says it holds a credential (``*TOKEN*``,
    ``*SECRET*``, ``*PASS*``, ``*KEY*``, ``*AUTH*``, ``*JWT*``, ``*_PWD``...)
    has its whole value replaced by ``<redacted>``.  The shell's ``PWD`` and
    ``OLDPWD`` are the working directory, not passwords: they are kept (and
    their home path and user name hidden like any other path).
  - in URLs anywhere in a value (lists of URLs too): the user information
    before the host (up to the *last* ``@``, so an ``@`` or ``/`` inside the
    password cannot leak the rest of it), and the values of credential-like
    query parameters (``?token=<redacted>``; the parameter names stay, so a
    report still shows a token was there).  The same goes for ``name=value``
    pairs outside URLs (connection strings, ``--password=...`` flags).
  - by shape: well-known token formats (GitHub ``ghp_...``, Hugging Face
    ``hf_...``, AWS ``AKIA...``, Slack ``xox?-...``, JWTs, ``Bearer ...``,
    private-key blocks...) whatever the variable is called.

  The variables the probes read (``PATH``, ``LD_LIBRARY_PATH``, ``CUDA_HOME``,
  ``CONDA_PREFIX``...) match none of these rules, so replaying a snapshot still
  gives the report of the live run.

  URL credentials are also removed from every other string a snapshot or report holds (file
  contents, command output), since package metadata and tool configs carry them too.
* Host identity (unless ``--include-host``): the home directory becomes ``~``,
  the user name ``<user>`` and the host name ``<hostname>`` wherever they occur.
* GPU identity (with ``--redact-ids``): GPU/MIG UUIDs and board serials become
  stable placeholders (``GPU-redacted-0`` ...), so several GPUs stay distinct.

The same :class:`Scrubber` is applied to a live report and to the snapshot it
writes, which is why replaying a snapshot gives the same report.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Dict, List, Optional

if TYPE_CHECKING:
    from .base import Host

REDACTED = "<redacted>"


class _Lazy:
    """A regular expression compiled on first use: a live ``diagnose`` never redacts an environment (only
    snapshots do), and compiling these at import cost every run about 2 ms."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._args = (pattern, flags)
        self._rx: Optional[re.Pattern[str]] = None

    def __getattr__(self, name: str) -> Any:  # search, sub, finditer... of the compiled pattern
        if self._rx is None:
            self._rx = re.compile(*self._args)
        return getattr(self._rx, name)


#: Names of variables that hold credentials (matched case-insensitively, anywhere in the name
#: unless anchored).  Over-matching costs a harmless ``<redacted>``; no variable a probe reads
#: (``PATH``, ``LD_LIBRARY_PATH``, ``CUDA_HOME``, ``CONDA_PREFIX``, ``NVCC_*``...) matches.
SECRET_NAME = _Lazy(
    r"TOKEN|SECRET|PASS|PWD$|(^|_)PW$|CRED|PRIVATE|KEY|AUTH|JWT|COOKIE|SESSION|WEBHOOK|SIGNATURE"
    r"|CONN(ECTION)?_?STR|DSN$|_PAT$",
    re.IGNORECASE,
)
#: The shell's working directories: paths (scrubbed like any path), not passwords.
_NOT_SECRET_NAMES = frozenset({"PWD", "OLDPWD"})
#: Query-parameter and ``name=value`` names that hold credentials, beyond :data:`SECRET_NAME`
#: (``sig`` for Azure SAS, ``X-Amz-Signature``/``X-Amz-Credential`` for S3 presigned URLs).
_SECRET_PARAM = _Lazy(r"SIG|^CODE$", re.IGNORECASE)
#: Variables that may hold a scheme-less ``user:password@host`` (curl reads ``http_proxy=u:p@proxy:3128``).
_ADDRESS_NAME = _Lazy(r"PROXY|_URLS?$|_URIS?$|_ENDPOINTS?$|_HOSTS?$|_ADDR(ESS)?$|_SERVERS?$|_REMOTE$",
                           re.IGNORECASE)

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_WHITESPACE = re.compile(r"\s")
#: ``name=value`` after the start, a space or a URL/connection-string separator: ``?token=...&``,
#: ``;Password=...;``, ``--api-key=...``.
_PARAM = _Lazy(r"(?P<lead>^|[?&;,\s])(?P<name>[A-Za-z0-9_.\[\]-]+)=(?P<value>[^&;,\s#]*)")
#: ``--password VALUE`` (a flag, a space, a value that is not another flag).
_FLAG = _Lazy(r"(?P<lead>(?<![\w-])--?)(?P<name>[A-Za-z][A-Za-z0-9_.-]*)(?P<space>\s+)(?P<value>[^\s-]\S*)")
#: HTTP authorization: ``Bearer ...``, ``Basic ...``, ``Authorization: token ...``.
_AUTH_SCHEME = _Lazy(r"(?i)(?P<keep>\b(?:bearer|basic|digest)\s+)(?P<value>[A-Za-z0-9._~+/=-]{6,})")
_AUTH_HEADER = _Lazy(r"(?i)(?P<keep>\b(?:authorization|proxy-authorization|x-api-key|api-key|private-token"
                          r"|x-auth-token)\s*:\s*(?:(?:bearer|basic|digest|token)\s+)?)(?P<value>\S+)")
_PRIVATE_KEY_BLOCK = _Lazy(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----.*?(-----END [A-Z0-9 ]*PRIVATE KEY"
                                r"( BLOCK)?-----|\Z)", re.DOTALL)
#: Well-known token formats, recognised whatever the variable is called.
_TOKEN_SHAPES = _Lazy(
    r"(?<![A-Za-z0-9_])(?:"
    r"gh[pousr]_[A-Za-z0-9]{30,}"                # GitHub classic tokens
    r"|github_pat_[A-Za-z0-9_]{30,}"             # GitHub fine-grained tokens
    r"|hf_[A-Za-z0-9]{30,}"                      # Hugging Face
    r"|(?:AKIA|ASIA)[A-Z0-9]{16}"                # AWS access key ids
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"            # Slack
    r"|glpat-[A-Za-z0-9_-]{20,}"                 # GitLab
    r"|npm_[A-Za-z0-9]{36}"                      # npm
    r"|pypi-AgE[A-Za-z0-9_-]{20,}"               # PyPI
    r"|AIza[0-9A-Za-z_-]{35}"                    # Google API keys
    r"|sk-(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]{20,}"  # OpenAI/Anthropic-style secret keys
    r"|eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*"  # JWTs (header.payload.signature)
    r")(?![A-Za-z0-9_])"
)

_GPU_UUID = re.compile(r"\b(GPU|MIG)-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
_IDENTITY_VARS = {"USER": "<user>", "LOGNAME": "<user>", "USERNAME": "<user>", "HOSTNAME": "<hostname>"}


def is_secret_name(name: str) -> bool:
    """Whether a variable called ``name`` holds a credential (its whole value is then redacted)."""
    return name.upper() not in _NOT_SECRET_NAMES and bool(SECRET_NAME.search(name))


def _is_secret_param(name: str) -> bool:
    name = name.lstrip("-").replace("-", "_")  # ``?pwd=`` is a password, unlike the shell's $PWD
    return bool(name) and bool(SECRET_NAME.search(name) or _SECRET_PARAM.search(name))


def _userinfo_end(rest: str) -> Optional[int]:
    """Where the user information of a URL ends (the index of its ``@``), given the URL after ``://``.

    Up to the last ``@`` of the authority, so ``user:pa@ss@host`` hides ``pa@ss`` whole.  When the
    authority (up to the first ``/``) holds a ``:`` but no ``@`` and an ``@`` follows later, the
    password held a ``/`` (``user:pa/ss@host``): up to that last ``@``.  Erring this way can hide a
    ``host:port/path@...`` too, which costs detail, never a secret.
    """
    slash = rest.find("/")
    authority = rest if slash < 0 else rest[:slash]
    at = authority.rfind("@")
    if at >= 0:
        return at
    if ":" in authority:
        at = rest.rfind("@")
        if at >= 0:
            return at
    return None


def _redact_urls(value: str) -> str:
    """``scheme://user:password@host`` -> ``scheme://<redacted>@host`` for every URL in ``value``.

    A URL runs to the next whitespace or the next ``scheme://``, so a list of URLs (separated by
    ``,``, ``;`` or spaces) is handled one URL at a time, and a ``,`` inside a password stays hidden.
    """
    starts = list(_SCHEME.finditer(value))
    if not starts:
        return value
    out: List[str] = []
    pos = 0
    for i, m in enumerate(starts):
        begin = m.end()
        end = starts[i + 1].start() if i + 1 < len(starts) else len(value)
        space = _WHITESPACE.search(value, begin, end)
        if space:
            end = space.start()
        rest = value[begin:end]
        cut = _userinfo_end(rest)
        out.append(value[pos:begin])
        out.append(rest if cut is None else REDACTED + rest[cut:])
        pos = end
    out.append(value[pos:])
    return "".join(out)


def _redact_bare_userinfo(value: str) -> str:
    """``user:password@proxy:3128`` without a scheme (curl takes it), item by item."""
    def item(m: re.Match[str]) -> str:
        s = m.group(0)
        if "://" in s or REDACTED in s:
            return s
        at = s.rfind("@")
        return REDACTED + s[at:] if at > 0 else s

    return re.sub(r"[^\s,;]+", item, value)


def redact_value(value: str, name: str = "") -> str:
    """``value`` with every credential found in it replaced by ``<redacted>`` (see the module's doc)."""
    if not value:
        return value
    value = _PRIVATE_KEY_BLOCK.sub(REDACTED, value)
    value = _redact_urls(value)
    if name and _ADDRESS_NAME.search(name) and "@" in value:
        value = _redact_bare_userinfo(value)
    value = _PARAM.sub(lambda m: (m.group("lead") + m.group("name") + "=" + REDACTED
                                  if m.group("value") and _is_secret_param(m.group("name")) else m.group(0)), value)
    value = _FLAG.sub(lambda m: (m.group("lead") + m.group("name") + m.group("space") + REDACTED
                                 if _is_secret_param(m.group("name")) else m.group(0)), value)
    value = _AUTH_HEADER.sub(lambda m: m.group("keep") + REDACTED, value)  # idempotent: <redacted> stays
    value = _AUTH_SCHEME.sub(lambda m: m.group("keep") + REDACTED, value)
    return _TOKEN_SHAPES.sub(REDACTED, value)


def redact_environ(env: Dict[str, str]) -> Dict[str, str]:
    """Environment with credentials removed: every name is kept, a credential's value never is."""
    return {name: (REDACTED if is_secret_name(name) else redact_value(value, name)) for name, value in env.items()}


class Scrubber:
    """Replaces identifying strings throughout a JSON-like structure."""

    def __init__(self, home: Optional[str] = None, user: Optional[str] = None,
                 hostname: Optional[str] = None, include_host: bool = False, redact_ids: bool = False) -> None:
        self.include_host = include_host
        self.redact_ids = redact_ids
        self._ids: Dict[str, str] = {}
        self._serial_values: Dict[str, str] = {}
        rules = []
        if not include_host:
            if home and home not in ("/", "~") and len(home) > 1:
                rules.append((re.compile(re.escape(home.rstrip("/")) + r"(?=/|$|[\s:;,\"'])"), "~"))
            if hostname and len(hostname) >= 3 and hostname not in ("localhost", "<hostname>"):
                rules.append((re.compile(r"(?<![\w.-])" + re.escape(hostname) + r"(?![\w-])"), "<hostname>"))
            if user and len(user) >= 3 and user not in ("root", "<user>"):
                rules.append((re.compile(r"(?<=/)" + re.escape(user) + r"(?=/|$)"), "<user>"))
        self._rules = rules

    @classmethod
    def for_environ(cls, env: Dict[str, str], hostname: Optional[str], include_host: bool = False,
                    redact_ids: bool = False) -> Scrubber:
        return cls(home=env.get("HOME"), user=env.get("USER") or env.get("LOGNAME"), hostname=hostname,
                   include_host=include_host, redact_ids=redact_ids)

    def text(self, s: str) -> str:
        # Credentials in URLs, in any string (always, like the environment's): a docker context's
        # ssh://user@host, a METADATA line `Requires-Dist: pkg @ git+https://user:TOKEN@github.com/...`.
        if "@" in s and "://" in s:
            s = _redact_urls(s)
        for rx, repl in self._rules:
            s = rx.sub(repl, s)
        if self.redact_ids:
            s = _GPU_UUID.sub(self._uuid_placeholder, s)
            for serial, placeholder in self._serial_values.items():
                s = s.replace(serial, placeholder)
        return s

    def _uuid_placeholder(self, m: re.Match[str]) -> str:
        key = m.group(0).lower()
        if key not in self._ids:
            self._ids[key] = "%s-redacted-%d" % (m.group(1), len(self._ids))
        return self._ids[key]

    def add_serial(self, serial: str) -> None:
        """A board serial number to hide wherever it appears (with ``redact_ids``)."""
        if self.redact_ids and serial and len(serial) >= 4 and serial not in self._serial_values:
            self._serial_values[serial] = "serial-redacted-%d" % len(self._serial_values)

    def environ(self, env: Dict[str, str]) -> Dict[str, str]:
        env = redact_environ(env)
        if not self.include_host:
            env = {k: (_IDENTITY_VARS[k] if k in _IDENTITY_VARS else v) for k, v in env.items()}
        return {k: self.text(v) for k, v in env.items()}

    def __call__(self, obj: Any) -> Any:
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, dict):
            return {self.text(k) if isinstance(k, str) else k: self(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [self(v) for v in obj]
        return obj

    @property
    def active(self) -> bool:
        return bool(self._rules) or self.redact_ids


def scrubber_for(host: Host, include_host: bool, redact_ids: bool) -> Scrubber:
    """The scrubber for what ``host`` reports: its home, user and host name, unless asked to keep them."""
    nodename = getattr(host, "nodename", None)
    return Scrubber.for_environ(host.environ(), nodename() if callable(nodename) else None,
                                include_host=include_host, redact_ids=redact_ids)
