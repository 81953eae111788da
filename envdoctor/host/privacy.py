"""Keep reports and snapshots safe to paste into a public bug report.

* Secrets (always, even with ``--include-host``): the snapshot keeps every
  environment variable's *name*, never a credential's *value*.  The rules that
  apply to each variable (see :func:`redact_environ`):

  - by name: a name that says it holds a credential (``*TOKEN*``,
    ``*SECRET*``, ``*PASS*``, ``*KEY*``, ``*AUTH*``, ``*JWT*``, ``*_PWD``...)
    has its whole value replaced by ``<redacted>``.  The shell's ``PWD`` and
    ``OLDPWD`` are working directories, not passwords: ``PWD`` is kept (its home
    path and user name hidden like any other path's), ``OLDPWD`` (the one before,
    which no probe reads) only by name.
  - in URLs anywhere in a value (lists of URLs too): the user information
    before the host (up to the *last* ``@``, so an ``@`` or ``/`` inside the
    password cannot leak the rest of it), the values of credential-like
    query parameters (``?token=<redacted>``; the parameter names stay, so a
    report still shows a token was there) and conda's channel tokens
    (``https://conda.anaconda.org/t/<redacted>/channel``).
  - assignments to a credential-like name outside URLs: ``name=value``
    (connection strings, ``--password=...``), ``--password VALUE``,
    ``"password": "..."`` (JSON, Python), ``password: ...`` (YAML),
    ``PASSWORD="quoted value"`` (quotes kept, the whole quoted value hidden),
    netrc's ``password WORD``, curl's ``-u``/``--user user:<redacted>``, and
    ``-p`` where it is a password: glued for MySQL/MariaDB clients
    (``mysql -p<redacted>``), with or without a space for ``sshpass`` and
    ``docker login`` (anywhere else ``-pVALUE`` is a port: ``ssh -p2222``,
    ``docker run -p8080:80``).
  - by shape: well-known token formats (GitHub ``ghp_...``, Hugging Face
    ``hf_...``, AWS ``AKIA...``, Slack ``xox?-...``, GitLab ``glpat-...``,
    NVIDIA NGC ``nvapi-...``, OpenAI/Anthropic ``sk-...``, JWTs, ``Bearer ...``,
    private-key blocks...) whatever the variable is called.  The shapes need a
    token's real length, so a directory, wheel or conda environment called
    ``sk-learn-gpu-2024-cuda12`` is no token.

  Path variables (``PATH``, ``LD_LIBRARY_PATH``, ``PYTHONPATH``, ``CUDA_HOME``,
  ``CONDA_PREFIX``, ``VIRTUAL_ENV``, ``HOME``... see :func:`is_path_name`) get the
  URL rules only: the probes read them, and replaying a snapshot gives the
  report of the live run only if they are kept as they were.

* Every other string a snapshot or report holds (file contents, command
  output) loses the same URL credentials (user information, credential query
  parameters, conda tokens), token shapes and private-key blocks: package
  metadata and tool configs carry them too.  Each rule runs only where a cheap
  substring test says it could match (``://``, a token's prefix...), because
  this runs over every string of a snapshot of about a megabyte.
* Host identity (unless ``--include-host``): the home directory becomes ``~``,
  the user name ``<user>``, the host name ``<hostname>`` and the address of a
  remote container daemon (``DOCKER_HOST``, ``CONTAINER_HOST``: the site's
  internal network) ``<address>`` wherever they occur.
* GPU identity (with ``--redact-ids``): GPU/MIG UUIDs and board serials become
  stable placeholders (``GPU-redacted-0`` ...), so several GPUs stay distinct.

The same :class:`Scrubber` is applied to a live report and to the snapshot it
writes, which is why replaying a snapshot gives the same report.  Every rule is
idempotent (a redacted value stays as it is when redacted again): the docker
probe redacts the endpoint it reports, which on replay is already redacted.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

from .. import lazyre

if TYPE_CHECKING:
    from .base import Host

REDACTED = "<redacted>"


#: Names of variables that hold credentials (matched case-insensitively, anywhere in the name
#: unless anchored).  Over-matching costs a harmless ``<redacted>``; no variable a probe reads
#: (``PATH``, ``LD_LIBRARY_PATH``, ``CUDA_HOME``, ``CONDA_PREFIX``, ``NVCC_*``...) matches.
SECRET_NAME = lazyre.compile(
    r"TOKEN|SECRET|PASS|PWD$|(^|_)PW$|CRED|PRIVATE|KEY|AUTH|JWT|COOKIE|SESSION|WEBHOOK|SIG|SEED|SALT|HMAC"
    r"|CONN(ECTION)?_?STR|DSN$|_PAT$",
    re.IGNORECASE,
)
#: The shell's working directories: paths (scrubbed like any path), not passwords.
_NOT_SECRET_NAMES = frozenset({"PWD", "OLDPWD"})
#: Query-parameter and ``name=value`` names that hold credentials, beyond :data:`SECRET_NAME`
#: (``sig`` for Azure SAS, ``X-Amz-Signature``/``X-Amz-Credential`` for S3 presigned URLs).
_SECRET_PARAM = lazyre.compile(r"SIG|^CODE$", re.IGNORECASE)
#: Variables that may hold a scheme-less ``user:password@host`` (curl reads ``http_proxy=u:p@proxy:3128``).
_ADDRESS_NAME = lazyre.compile(r"PROXY|_URLS?$|_URIS?$|_ENDPOINTS?$|_HOSTS?$|_ADDR(ESS)?$|_SERVERS?$|_REMOTE$",
                               re.IGNORECASE)
#: Variables that hold a path, a list of paths or the name of an environment: the probes read them
#: (``which`` walks PATH), so they get the URL rules only, never the assignment, flag or token-shape
#: rules, which could take a directory called ``sk-learn-gpu-2024-cuda12`` or ``/opt/a;key=b`` for a
#: credential and make the replay of a snapshot differ from the live run.
_PATH_NAMES = frozenset({
    "PATH", "LD_LIBRARY_PATH", "LIBRARY_PATH", "DYLD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONPATH", "PYTHONHOME",
    "PYTHONUSERBASE", "PYTHONPYCACHEPREFIX", "CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "MANPATH",
    "INFOPATH", "PKG_CONFIG_PATH", "CMAKE_PREFIX_PATH", "CUDA_HOME", "CUDA_PATH", "CUDA_ROOT",
    "CUDA_TOOLKIT_ROOT_DIR", "CUDACXX", "CUDAHOSTCXX", "NVCC_CCBIN", "CC", "CXX", "CONDA_PREFIX",
    "CONDA_DEFAULT_ENV", "CONDA_EXE", "CONDA_PYTHON_EXE", "CONDA_ENVS_PATH", "CONDA_PKGS_DIRS",
    "MAMBA_ROOT_PREFIX", "MAMBA_EXE", "VIRTUAL_ENV", "VIRTUAL_ENV_PROMPT", "HOME", "PWD", "TMPDIR",
    "SHELL", "DOCKER_CONFIG", "DOCKER_CONTEXT", "CONTAINER_CONNECTION",
})
#: (Not OLDPWD: the directory the shell was in before, which no probe reads and which tells where its user
#: has been; a snapshot keeps only its name.)
#: ... and any name that says it holds one (``*PATH``, ``*_HOME``, ``*_DIR(S)``, ``*_ROOT``,
#: ``*_PREFIX``, ``CONDA_PREFIX_1``, ``*_EXE``, ``*_FILE``).
_PATH_NAME = lazyre.compile(r"PATH$|(^|_)(HOME|DIRS?|ROOT|PREFIX(_[0-9]+)?|EXE|FILE)$", re.IGNORECASE)

_SCHEME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+.-")
_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_WHITESPACE = lazyre.compile(r"\s")
#: A credential-like query parameter inside a URL: ``?private_token=...``, ``&sig=...``, ``;jsessionid=``.
_QUERY_PARAM = lazyre.compile(r"(?P<lead>[?&;])(?P<name>[A-Za-z0-9_.\[\]%-]+)=(?P<value>[^&;#\s\"'<>]*)")
#: conda's channel token: ``https://conda.anaconda.org/t/<token>/channel`` (repo.anaconda.cloud,
#: anaconda.com and self-hosted Anaconda servers alike).
_CONDA_TOKEN = lazyre.compile(r"/t/[^/?#\s\"'<>]+")
#: ``name=value`` after the start, a space or a URL/connection-string separator: ``?token=...&``,
#: ``;Password=...;``, ``--api-key=...``.
_PARAM = lazyre.compile(r"(?P<lead>^|[?&;,\s])(?P<name>[A-Za-z0-9_.\[\]-]+)=(?P<value>[^&;,\s#]*)")
#: A quoted value given to a name: ``"password": "..."`` (JSON), ``'password': '...'`` (Python),
#: ``PASSWORD="a b"`` (shell, .env), ``password = '...'`` (INI, TOML), ``"password" => "..."``.
#: The whole quoted value goes, spaces included; the quotes stay.
_QUOTED_ASSIGN = lazyre.compile(
    r"(?<![A-Za-z0-9_.\[\]-])(?P<keep>(?P<q>[\"']?)(?P<name>[A-Za-z0-9_.\[\]-]+)(?P=q)[ \t]*(?:=>|[:=])[ \t]*)"
    r"(?P<value>\"(?:[^\"\\]|\\.)*\"?|'[^']*'?)")
#: An unquoted value given to a name with ``: `` (YAML) or a spaced ``=`` (INI), or to a quoted name
#: (``"password":123`` in JSON): the rest of the line, up to a separator (``,;}]``) or the next ``key:``.
_BARE_ASSIGN = lazyre.compile(
    r"(?<![A-Za-z0-9_.\[\]-])(?P<keep>(?:(?P<q>[\"'])(?P<qname>[A-Za-z0-9_.\[\]-]+)(?P=q)[ \t]*(?:=>|:|=(?!>))[ \t]*"
    r"|(?P<name>[A-Za-z0-9_.\[\]-]+)(?:[ \t]*(?:=>|:)[ \t]+|[ \t]+=(?!>)[ \t]*|=[ \t]+)))"
    r"(?P<value>[^\s\"',;}\]][^\s,;}\]]*(?:[ \t]+(?![^\s,;}\]]*[:=])[^\s,;}\]#][^\s,;}\]]*)*)")
#: ``--password VALUE`` (a flag, a space, a value that is not another flag, quoted or not).
_FLAG = lazyre.compile(r"(?P<lead>(?<![\w-])--?)(?P<name>[A-Za-z][A-Za-z0-9_.-]*)(?P<space>\s+)"
                       r"(?P<value>\"(?:[^\"\\]|\\.)*\"?|'[^']*'?|[^\s-]\S*)")
#: curl's (and wget's, httpie's) ``-u user:password``, ``--user user:password``, ``-U``/``--proxy-user``:
#: the user stays, the password goes.
_USER_FLAG = lazyre.compile(r"(?<![\w-])(?P<keep>(?:-[uU](?:[ \t]+|=)?|--(?:proxy-)?user(?:[ \t]+|=))"
                            r"(?P<q>[\"'])?(?P<user>[^\s:\"']*):)(?P<value>(?(q)[^\"']*|[^\s\"']+))")
#: netrc's ``password WORD`` (``machine h login u password p``); ``password: x`` and ``password=x``
#: are assignments, redacted by the rules above.
_NETRC = lazyre.compile(r"(?<![\w-])(?P<keep>(?:password|passwd|passphrase)[ \t]+)(?P<value>\"[^\"]*\"?|[^\s=:\"]\S*)",
                        re.IGNORECASE)
#: MySQL's password glued to ``-p`` (``mysql -uroot -pS3cret``): only where the value runs a MySQL or
#: MariaDB client, since ``-pVALUE`` is a port for ssh, scp, docker run, nc, pg_dump...  (``mysql -p x``
#: prompts for the password: ``x`` is the database.)
_MYSQL = lazyre.compile(r"(?<![\w-])(?:mysql|mariadb)[\w-]*(?![\w-])", re.IGNORECASE)
_MYSQL_PASSWORD = lazyre.compile(r"(?<![\w-])(?P<keep>-p)(?P<value>\"[^\"]*\"?|'[^']*'?|[^\s\"']\S*)")
#: The commands whose ``-p`` is a password, glued or not: ``sshpass -p PW``, ``docker login -u u -p PW``.
_PASSWORD_P = lazyre.compile(r"(?P<keep>(?<![\w-])(?:sshpass|(?:docker|podman|buildah|nerdctl|skopeo)[ \t]+login)"
                             r"(?:[ \t]+(?!-p)\S+)*?[ \t]+-p[ \t]*)(?P<value>\"[^\"]*\"?|'[^']*'?|[^\s\"']\S*)")
#: HTTP authorization: ``Bearer ...``, ``Basic ...``, ``Authorization: token ...``.
_AUTH_SCHEME = lazyre.compile(r"(?i)(?P<keep>\b(?:bearer|basic|digest)\s+)(?P<value>[A-Za-z0-9._~+/=-]{6,})")
_AUTH_HEADERS = frozenset({"authorization", "proxy-authorization", "x-api-key", "api-key", "private-token",
                           "x-auth-token"})
_AUTH_HEADER = lazyre.compile(r"(?i)(?P<keep>\b(?:" + "|".join(sorted(_AUTH_HEADERS)) +
                              r")\s*:\s*(?:(?:bearer|basic|digest|token)\s+)?)(?P<value>\S+)")
_PRIVATE_KEY_BLOCK = lazyre.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----.*?(-----END [A-Z0-9 ]*PRIVATE KEY"
                                    r"( BLOCK)?-----|\Z)", re.DOTALL)

#: Well-known token formats, recognised whatever the variable is called and in every string of a
#: snapshot: (a substring a string must hold to be searched, the token's shape).  Each shape needs
#: the length of a real token, so that ordinary names (``sk-learn-gpu-2024-cuda12``, ``hf_transfer``,
#: ``npm_config_cache``, ``github_pat_rotation``, ``glpat-rotation-helper``) never match.  Each pattern
#: starts with a literal, which lets the regular expression engine skip to it; the boundary before a
#: token (no letter, digit or ``_``) is checked by :func:`_token_or_not`.
_TOKEN_SPECS: Tuple[Tuple[str, str], ...] = (
    # GitHub classic: ghp_ (gho_, ghu_, ghs_, ghr_) and 36 letters and digits
    ("gh", r"gh[pousr]_[A-Za-z0-9]{30,}"),
    # GitHub fine-grained: github_pat_, 22, _, 59
    ("github_pat_", r"github_pat_[A-Za-z0-9]{8,}_[A-Za-z0-9]{30,}"),
    # Hugging Face: hf_ and 34
    ("hf_", r"hf_[A-Za-z0-9]{30,}"),
    # AWS access key ids (long-lived AKIA, temporary ASIA): 20 in all
    ("IA", r"A[KS]IA[A-Z0-9]{16}"),
    # Slack: xoxb-<team>-<bot>-<secret> (xoxp, xoxa, xoxo, xoxs, xoxr, xoxe)
    ("xox", r"xox[abposre]-[0-9]+-[A-Za-z0-9-]{10,}"),
    # GitLab: glpat- and 20 (deploy, runner, trigger... tokens alike); a capital letter, which 20
    # random characters lack once in 30,000 and a hyphenated name usually does
    ("gl", r"gl(?:pat|dt|rt|ptt|cbt|ft|imt|oas|soat|agent)-(?=[A-Za-z0-9_-]*[A-Z])[A-Za-z0-9_-]{20,}"),
    # npm
    ("npm_", r"npm_[A-Za-z0-9]{36}"),
    # PyPI (a macaroon)
    ("pypi-AgE", r"pypi-AgE[A-Za-z0-9_-]{20,}"),
    # Google API keys
    ("AIza", r"AIza[0-9A-Za-z_-]{35}"),
    # NVIDIA NGC and API catalog: nvapi- and 64
    ("nvapi-", r"nvapi-[A-Za-z0-9_-]{40,}"),
    # OpenAI (sk-proj-, sk-svcacct-, sk-admin- and ~150; legacy sk- and 48 letters and digits),
    # Anthropic (sk-ant-api03- and ~95), OpenRouter (sk-or-v1- and 64), DeepSeek (sk- and 32):
    # 40 or more after a known prefix, 32 or more letters and digits without one
    ("sk-", r"sk-(?:(?:proj|svcacct|admin|None|ant-[a-z]+[0-9]{2}|or-v[0-9])-(?=[A-Za-z0-9_-]*[A-Z0-9])"
            r"[A-Za-z0-9_-]{40,}|[A-Za-z0-9]{32,})"),
    # JWTs: header.payload.signature
    ("eyJ", r"eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*"),
)
_TOKEN_RULES = tuple((needle, lazyre.compile(shape + r"(?![A-Za-z0-9_])")) for needle, shape in _TOKEN_SPECS)
#: No token shape is shorter (an AWS key id is 20 characters).
_SHORTEST_TOKEN = 20

_GPU_UUID = lazyre.compile(r"\b(GPU|MIG)-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
_IDENTITY_VARS = {"USER": "<user>", "LOGNAME": "<user>", "USERNAME": "<user>", "HOSTNAME": "<hostname>",
                  "HOST": "<hostname>"}
#: Variables naming this machine (or the job's machines) for a scheduler: hidden whole, and each name in
#: them hidden wherever it occurs.
_HOST_VARS = lazyre.compile(
    r"^(?:SLURM|PBS|SGE|LSB|FLUX|OMPI|PMIX)_\w*(?:HOST|NODE|NODES|NODELIST|NODENAME|HOSTS|HOSTNAME"
    r"|SERVER|NODEFILE_CONTENT)$|^(?:SLURMD_NODENAME|HOSTNAME|HOST|NODENAME|LSB_HOSTS|LSB_MCPU_HOSTS)$",
    re.IGNORECASE)
_IPV4 = lazyre.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w.])")
_IPV6 = lazyre.compile(r"(?<![\w:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?:%\w+)?(?![\w:])")
#: User names too common as words to hide everywhere (a cloud image's ``ubuntu`` user is hidden in
#: paths, ``/home/ubuntu``, but "Ubuntu 24.04" stays readable).
_COMMON_WORDS = frozenset({"ubuntu", "debian", "centos", "fedora", "rocky", "alma", "admin", "user", "users",
                           "nvidia", "cuda", "docker", "conda", "python", "torch", "test", "guest", "build",
                           "runner", "jenkins", "gitlab", "github", "worker", "node", "home", "local", "ec2-user",
                           "opc", "cloud", "linux", "default", "none", "nobody", "daemon", "system", "share"})


def expand_hostlist(value: str) -> List[str]:
    """Host names in a scheduler's host list: ``gpu[01-03,07],login1`` -> gpu01, gpu02, gpu03, gpu07,
    login1 (one bracket group per name, as Slurm writes them)."""
    out: List[str] = []
    for m in re.finditer(r"([A-Za-z0-9_.-]*)\[([0-9,\-]+)\]([A-Za-z0-9_.-]*)|([A-Za-z0-9_.-]+)", value):
        if m.group(4):
            out.append(m.group(4))
            continue
        head, body, tail = m.group(1), m.group(2), m.group(3)
        for part in body.split(","):
            lo, _, hi = part.partition("-")
            if not lo.isdigit():
                continue
            if hi.isdigit() and 0 <= int(hi) - int(lo) <= 4096:
                out += ["%s%0*d%s" % (head, len(lo), n, tail) for n in range(int(lo), int(hi) + 1)]
            else:
                out.append(head + lo + tail)
    return [h for h in out if h and not h.isdigit()]


def host_names(env: Dict[str, str], nodename: Optional[str]) -> List[str]:
    """Every name this machine goes by: the kernel's node name and the environment's (HOSTNAME, Slurm,
    PBS...), each fully qualified and short (``gpu017.cluster.example.org`` and ``gpu017``)."""
    names: List[str] = []
    for value in [nodename or ""] + [v for k, v in env.items() if _HOST_VARS.search(k)]:
        for name in expand_hostlist(value):
            for n in (name, name.split(".")[0]):
                if len(n) >= 3 and n not in names and not _IPV4.fullmatch(n):
                    names.append(n)
    return sorted(names, key=len, reverse=True)


#: Variables naming the container daemon the docker (podman) command talks to: its address is the site's
#: internal network, hidden like the host's own names.
_DAEMON_VARS = ("DOCKER_HOST", "CONTAINER_HOST")
_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0", "::"})


def daemon_addresses(env: Dict[str, str]) -> List[str]:
    """The host part of each container daemon's address in the environment (``DOCKER_HOST=
    tcp://user:pw@10.0.0.5:2376`` -> ``10.0.0.5``; ``ssh://me@build.corp`` -> ``build.corp``), loopback and
    local sockets left out."""
    out: List[str] = []
    for name in _DAEMON_VARS:
        value = (env.get(name) or "").strip()
        if not value or value.startswith(("unix://", "npipe://", "fd://")):
            continue
        rest = value.split("://", 1)[1] if "://" in value else value  # docker reads host:port as tcp://
        rest = re.split(r"[/?#]", rest, maxsplit=1)[0]
        rest = rest[rest.rfind("@") + 1:]
        if rest.startswith("["):  # [fd00::5]:2376
            host = rest[1:rest.find("]")] if "]" in rest else rest[1:]
        else:
            host = rest.rsplit(":", 1)[0] if rest.count(":") == 1 else rest
        host = host.strip()
        if len(host) >= 3 and host.lower() not in _LOOPBACK and not host.startswith(("<", "127.")) \
                and host not in out:
            out.append(host)
    return sorted(out, key=len, reverse=True)


def _address_rule(address: str) -> re.Pattern[str]:
    """Where ``address`` (a host name or IP) is shown: an IPv6 address, an IPv4 address or a dotted name
    wherever it stands alone (``10.0.0.5`` but not ``10.0.0.50`` nor ``110.0.0.5``); a single-label name
    (``tcp://docker:2375``, GitLab's docker-in-docker service) only as a URL's host, since ``docker`` is
    also a word and a command."""
    name = re.escape(address)
    if ":" in address:
        return re.compile(r"(?<![\w:.])" + name + r"(?![\w:.])")
    if "." in address and address.lower() not in _COMMON_WORDS:
        return re.compile(r"(?<![\w.-])" + name + r"(?![\w-]|\.[\w-])")
    return re.compile(r"(?:(?<=://)|(?<=@))" + name + r"(?=[:/\]\s\"'),;]|$)")


def user_names(env: Dict[str, str], uid_name: Optional[str]) -> List[str]:
    """The user's names: from the uid (the password database: USER and LOGNAME are unset under cron,
    systemd and ``docker exec``), then USER, LOGNAME, USERNAME."""
    out: List[str] = []
    for n in (uid_name, env.get("USER"), env.get("LOGNAME"), env.get("USERNAME")):
        if n and len(n) >= 3 and n not in ("root", "<user>") and n not in out:
            out.append(n)
    return out


def uid_user() -> Optional[str]:
    """The name of the user running envdoctor, from its uid (None where there is no password entry)."""
    try:
        import os
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError, OSError):
        return None


def is_secret_name(name: str) -> bool:
    """Whether a variable called ``name`` holds a credential (its whole value is then redacted)."""
    return name.upper() not in _NOT_SECRET_NAMES and bool(SECRET_NAME.search(name))


def is_path_name(name: str) -> bool:
    """Whether a variable called ``name`` holds paths (or an environment's name): the URL rules only."""
    return (name.upper() in _PATH_NAMES or bool(_PATH_NAME.search(name))) and not is_secret_name(name)


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


def _url_starts(value: str) -> List[Tuple[int, int]]:
    """(where the scheme starts, where ``://`` ends) for each URL of ``value``: the matches of
    ``[A-Za-z][A-Za-z0-9+.-]*://``, found from each ``://`` (``str.find`` is some twenty times faster
    than that pattern on a 650 KB dpkg status file)."""
    out: List[Tuple[int, int]] = []
    i = value.find("://")
    while i >= 0:
        j = i
        while j > 0 and value[j - 1] in _SCHEME_CHARS:
            j -= 1
        while j < i and value[j] not in _LETTERS:
            j += 1
        if j < i:
            out.append((j, i + 3))
        i = value.find("://", i + 3)
    return out


def _query_param(m: re.Match[str]) -> str:
    if m.group("value") and _is_secret_param(m.group("name")):
        return m.group("lead") + m.group("name") + "=" + REDACTED
    return m.group(0)


#: Services whose URL path *is* the credential (a webhook, a bot): everything after the prefix goes.
_SECRET_PATHS = lazyre.compile(r"^(?P<keep>(?:[^/]*\.)?(?:hooks\.slack\.com/(?:services|workflows|triggers)"
                               r"|discord(?:app)?\.com/api/webhooks|[^/]*webhook\.office\.com/webhook[^/]*"
                               r"|outlook\.office(?:365)?\.com/webhook|api\.telegram\.org"
                               r"|chat\.googleapis\.com/v1/spaces|hooks\.zapier\.com/hooks/catch"
                               r"|events\.pagerduty\.com/integration|[^/]*/(?:api/)?webhooks?)/)(?P<secret>[^?#\s]+)",
                               re.IGNORECASE)
#: A path segment that looks like a generated secret (16+ characters of letters and digits with upper
#: and lower case and a digit, no dot): ``/T000/B000/XXXXXXXXXXXXXXXX`` rather than ``/cu121/``.
_SECRET_SEGMENT = lazyre.compile(r"(?<=/)(?=[A-Za-z0-9_:~-]*[A-Z])(?=[A-Za-z0-9_:~-]*[a-z])(?=[A-Za-z0-9_:~-]*[0-9])"
                                 r"[A-Za-z0-9_:~-]{16,}(?=/|$|\?|#)")


def _redact_url_path(rest: str) -> str:
    slash = rest.find("/")
    if slash < 0:
        return rest
    m = _SECRET_PATHS.match(rest)
    if m:
        return m.group("keep") + REDACTED
    end = len(rest)
    for c in "?#":
        i = rest.find(c, slash)
        if 0 <= i < end:
            end = i
    return rest[:slash] + _SECRET_SEGMENT.sub(REDACTED, rest[slash:end]) + rest[end:]


def _redact_url(rest: str) -> str:
    """One URL (after its ``://``) without user information, credential query parameters, conda token,
    webhook or secret-looking path segments."""
    if "@" in rest:
        cut = _userinfo_end(rest)
        if cut is not None:
            rest = REDACTED + rest[cut:]
    rest = _redact_url_path(rest)
    if "=" in rest and ("?" in rest or "&" in rest or ";" in rest):
        rest = _QUERY_PARAM.sub(_query_param, rest)
    if "/t/" in rest:
        slash = rest.find("/")
        if "conda" in rest[:slash].lower():
            rest = rest[:slash] + _CONDA_TOKEN.sub("/t/" + REDACTED, rest[slash:])
    return rest


def _redact_urls(value: str) -> str:
    """Every URL in ``value`` without its credentials: ``scheme://user:password@host`` ->
    ``scheme://<redacted>@host``, ``?token=<redacted>``, ``/t/<redacted>/`` (conda).

    A URL runs to the next whitespace or the next ``scheme://``, so a list of URLs (separated by
    ``,``, ``;`` or spaces) is handled one URL at a time, and a ``,`` inside a password stays hidden.
    """
    if "://" not in value:
        return value
    starts = _url_starts(value)
    if not starts:
        return value
    out: List[str] = []
    pos = 0
    for i, (_, begin) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(value)
        space = _WHITESPACE.search(value, begin, end)
        if space:
            end = space.start()
        out.append(value[pos:begin])
        out.append(_redact_url(value[begin:end]))
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
        if at > 0 and s[:at].isdigit():
            return s  # FlexLM's port@host (LICENSE_SERVER=27000@licsrv): an address, no credential
        return REDACTED + s[at:] if at > 0 else s

    return re.sub(r"[^\s,;]+", item, value)


def _token_or_not(m: re.Match[str]) -> str:
    start = m.start()
    return m.group(0) if start and m.string[start - 1] in _WORD_CHARS else REDACTED


def _redact_tokens(s: str) -> str:
    """``s`` with every well-known token shape (:data:`_TOKEN_SPECS`) replaced by ``<redacted>``."""
    if len(s) < _SHORTEST_TOKEN:
        return s
    for needle, rx in _TOKEN_RULES:
        if needle in s:
            s = rx.sub(_token_or_not, s)
    return s


def _quoted(value: str) -> str:
    """``<redacted>`` in the quotes ``value`` came in (closed, though the value was not)."""
    return value[0] + REDACTED + value[0] if value[:1] in ("'", '"') else REDACTED


def _quoted_assign(m: re.Match[str]) -> str:
    return m.group("keep") + _quoted(m.group("value")) if _is_secret_param(m.group("name")) else m.group(0)


def _param(m: re.Match[str]) -> str:
    value = m.group("value")
    if value and value[0] not in "\"'" and _is_secret_param(m.group("name")):  # quoted: _QUOTED_ASSIGN's
        return m.group("lead") + m.group("name") + "=" + REDACTED
    return m.group(0)


def _bare_assign(m: re.Match[str]) -> str:
    name = m.group("name") or m.group("qname")
    if name.lower() in _AUTH_HEADERS or not _is_secret_param(name):  # headers keep their scheme: _AUTH_HEADER
        return m.group(0)
    return m.group("keep") + REDACTED


def _flag(m: re.Match[str]) -> str:
    if not _is_secret_param(m.group("name")):
        return m.group(0)
    return m.group("lead") + m.group("name") + m.group("space") + _quoted(m.group("value"))


def _user_flag(m: re.Match[str]) -> str:
    if m.group("user").isdigit() and m.group("value").isdigit():  # docker run -u 1000:1000 (uid:gid)
        return m.group(0)
    return m.group("keep") + REDACTED


def _keep_and_redact(m: re.Match[str]) -> str:
    return m.group("keep") + _quoted(m.group("value"))


def _fixed_point(rules: Callable[[str], str], value: str) -> str:
    """``rules`` applied until they change nothing more (at most a few rounds): one redaction can make
    another rule match (a token glued to ``--password`` or to the scheme of a URL), and redacting the
    result again must give it unchanged (the docker probe redacts what a snapshot already redacted)."""
    for _ in range(4):
        out = rules(value)
        if out == value:
            break
        value = out
    return value


def redact_value(value: str, name: str = "") -> str:
    """``value`` with every credential found in it replaced by ``<redacted>`` (see the module's doc)."""
    if not value:
        return value
    if name and is_path_name(name):
        return _fixed_point(_redact_urls, value)
    return _fixed_point(lambda v: _redact_value_once(v, name), value)


def _redact_value_once(value: str, name: str) -> str:
    if "PRIVATE KEY" in value:
        value = _PRIVATE_KEY_BLOCK.sub(REDACTED, value)
    value = _redact_urls(value)
    if name and _ADDRESS_NAME.search(name) and "@" in value:
        value = _redact_bare_userinfo(value)
    value = _QUOTED_ASSIGN.sub(_quoted_assign, value)
    value = _PARAM.sub(_param, value)
    value = _BARE_ASSIGN.sub(_bare_assign, value)
    value = _FLAG.sub(_flag, value)
    value = _USER_FLAG.sub(_user_flag, value)
    value = _NETRC.sub(_keep_and_redact, value)
    if _MYSQL.search(value):
        value = _MYSQL_PASSWORD.sub(_keep_and_redact, value)
    if "sshpass" in value or " login" in value:
        value = _PASSWORD_P.sub(_keep_and_redact, value)
    value = _AUTH_HEADER.sub(lambda m: m.group("keep") + REDACTED, value)  # idempotent: <redacted> stays
    value = _AUTH_SCHEME.sub(lambda m: m.group("keep") + REDACTED, value)
    return _redact_tokens(value)


def redact_environ(env: Dict[str, str]) -> Dict[str, str]:
    """Environment with credentials removed: every name is kept, a credential's value never is."""
    return {name: (REDACTED if is_secret_name(name) else redact_value(value, name)) for name, value in env.items()}


def redact_text(s: str) -> str:
    """What every string of a snapshot or report loses (file contents, command output): credentials in
    URLs, well-known token shapes, private-key blocks.  Each rule runs only where a substring test says
    it could match, since this runs over every string of a snapshot (a dpkg status file is 650 KB)."""
    out = _redact_text_once(s)
    return out if out == s else _fixed_point(_redact_text_once, out)


def _redact_text_once(s: str) -> str:
    if "://" in s:
        s = _redact_urls(s)
    if len(s) >= _SHORTEST_TOKEN:
        s = _redact_tokens(s)
        if "PRIVATE KEY" in s:
            s = _PRIVATE_KEY_BLOCK.sub(REDACTED, s)
    return s


class Scrubber:
    """Replaces credentials (always) and identifying strings throughout a JSON-like structure."""

    def __init__(self, home: Optional[str] = None, user: Optional[str] = None,
                 hostname: Optional[str] = None, include_host: bool = False, redact_ids: bool = False,
                 users: Sequence[str] = (), hostnames: Sequence[str] = (), addresses: Sequence[str] = ()) -> None:
        self.include_host = include_host
        self.redact_ids = redact_ids
        self._ids: Dict[str, str] = {}
        self._serial_values: Dict[str, str] = {}
        #: What text() made of each string so far (a report repeats the same keys, sources and values, once
        #: per GPU; the answer depends only on the rules, and on the serials, which forget it when added).
        self._done: Dict[str, str] = {}
        rules = []
        if not include_host:
            if home and home not in ("/", "~") and len(home) > 1:
                rules.append((home.rstrip("/"), re.compile(re.escape(home.rstrip("/")) + r"(?=/|$|[\s:;,\"'])"),
                              "~"))
            hosts = [h for h in [hostname or ""] + list(hostnames)
                     if len(h) >= 3 and h not in ("localhost", "<hostname>")]
            for h in sorted(set(hosts), key=len, reverse=True):  # the FQDN before its short name
                # not after a dot: a dotted identifier's part (the fact key cpu.model on a host named "model")
                rules.append((h, re.compile(r"(?<![\w.-])" + re.escape(h) + r"(?![\w-])"), "<hostname>"))
            for a in addresses:  # a remote container daemon's (DOCKER_HOST)
                rules.append((a, _address_rule(a), "<address>"))
            for u in dict.fromkeys([user or ""] + list(users)):
                if len(u) >= 3 and u not in ("root", "<user>"):
                    if u.lower() in _COMMON_WORDS or len(u) < 4:
                        # As a path component only (/home/ubuntu/...), not as a word.
                        rules.append((u, re.compile(r"(?<=/)" + re.escape(u) + r"(?=/|$)"), "<user>"))
                    else:
                        rules.append((u, re.compile(r"(?<![\w.-])" + re.escape(u) + r"(?![\w-])"), "<user>"))
        self._rules = rules

    @classmethod
    def for_environ(cls, env: Dict[str, str], hostname: Optional[str], include_host: bool = False,
                    redact_ids: bool = False, uid_name: Optional[str] = None) -> Scrubber:
        return cls(home=env.get("HOME"), hostname=hostname, include_host=include_host, redact_ids=redact_ids,
                   users=user_names(env, uid_name), hostnames=host_names(env, hostname),
                   addresses=daemon_addresses(env))

    def text(self, s: str) -> str:
        done = self._done.get(s)
        if done is None:
            done = self._done[s] = self._text(s)
        return done

    def _text(self, s: str) -> str:
        # Credentials, in any string (always, like the environment's): a docker context's ssh://user@host,
        # a METADATA line `Requires-Dist: pkg @ https://host/x.whl?private_token=...`, a token in a config.
        s = redact_text(s)
        for literal, rx, repl in self._rules:
            if literal in s:  # each rule matches its literal (escaped) and nothing else: no regex scan without it
                s = rx.sub(repl, s)
        if self.redact_ids:
            if "GPU-" in s or "MIG-" in s:
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
            self._done.clear()

    def environ(self, env: Dict[str, str]) -> Dict[str, str]:
        env = redact_environ(env)
        if not self.include_host:
            env = {k: (_IDENTITY_VARS[k] if k in _IDENTITY_VARS else "<hostname>" if _HOST_VARS.search(k) and v
                       else _ip_free(v) if k.upper().startswith("SSH_") else v) for k, v in env.items()}
        return {k: self.text(v) for k, v in env.items()}

    def __call__(self, obj: Any) -> Any:
        kind = type(obj)
        if kind in _AS_IS:  # most values of a many-GPU report (numbers, flags): by their exact type, at once
            return obj
        if kind is str:
            done = self._done.get(obj)
            return done if done is not None else self.text(obj)
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, dict):
            done_get, text = self._done.get, self.text
            out = {}
            for k, v in obj.items():
                if isinstance(k, str):
                    new_k = done_get(k)
                    k = new_k if new_k is not None else text(k)
                kind = type(v)
                if kind in _AS_IS or (k in _IDENTIFIERS and kind is str):
                    out[k] = v
                elif kind is str:  # what self(v) does for text, without the call: once per distinct text
                    done = done_get(v)
                    out[k] = done if done is not None else text(v)
                else:
                    out[k] = self(v)
            return out
        if isinstance(obj, (list, tuple)):
            return [v if type(v) in _AS_IS else self(v) for v in obj]
        return obj

    @property
    def active(self) -> bool:
        """Whether applying it can change anything: always, since credentials are removed even with
        ``--include-host`` (a report's facts hold file contents and command output too)."""
        return True


#: Fields whose text is envdoctor's own vocabulary (a fact's key, a finding's code), never a machine's: a host or a
#: user named like a word of it ("model", "driver") must not turn ``cpu.model`` into ``cpu.<hostname>``.
_IDENTIFIERS = frozenset(("key", "code"))

#: The types a scrubber returns unchanged without a look (none holds text); a subclass of one (an IntEnum) is
#: looked at as before.
_AS_IS = frozenset((int, float, bool, type(None)))


def _ip_free(value: str) -> str:
    """``value`` with IP addresses replaced (SSH_CONNECTION, SSH_CLIENT: where the user connects from)."""
    value = _IPV4.sub("<ip>", value)
    return _IPV6.sub(lambda m: "<ip>" if m.group(0).count(":") >= 2 and any(c.isalnum() for c in m.group(0))
                     else m.group(0), value)


def scrubber_for(host: Host, include_host: bool, redact_ids: bool) -> Scrubber:
    """The scrubber for what ``host`` reports: its home, users (from the uid too) and every name it goes by,
    unless asked to keep them."""
    nodename = getattr(host, "nodename", None)
    return Scrubber.for_environ(host.environ(), nodename() if callable(nodename) else None,
                                include_host=include_host, redact_ids=redact_ids,
                                uid_name=uid_user() if nodename is not None else None)
