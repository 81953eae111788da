"""Keep reports and snapshots safe to paste into a public bug report.

* Secrets: environment variables whose names look like credentials are
  replaced by ``<redacted>`` (always, even with ``--include-host``).
* Host identity (unless ``--include-host``): the home directory becomes ``~``,
  the user name ``<user>`` and the host name ``<hostname>`` wherever they occur.
* GPU identity (with ``--redact-ids``): GPU/MIG UUIDs and board serials become
  stable placeholders (``GPU-redacted-0`` ...), so several GPUs stay distinct.

The same :class:`Scrubber` is applied to a live report and to the snapshot it
writes, which is why replaying a snapshot gives the same report.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Dict, Optional

if TYPE_CHECKING:
    from .base import Host

SECRET_NAME = re.compile(
    r"(TOKEN|SECRET|PASSW(OR)?D|PASSPHRASE|CREDENTIAL|API_?KEY|ACCESS_?KEY|PRIVATE|AUTH|COOKIE|SESSION|_KEY$|^KEY$"
    r"|_PAT$|WEBHOOK|DSN$)",
    re.IGNORECASE,
)
REDACTED = "<redacted>"
_URL_CREDENTIALS = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s:]+(:[^/@\s]*)?@")
_GPU_UUID = re.compile(r"\b(GPU|MIG)-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
_IDENTITY_VARS = {"USER": "<user>", "LOGNAME": "<user>", "USERNAME": "<user>", "HOSTNAME": "<hostname>"}


def is_secret_name(name: str) -> bool:
    return bool(SECRET_NAME.search(name))


def redact_environ(env: Dict[str, str]) -> Dict[str, str]:
    """Environment with credential-like values removed (names are kept)."""
    out = {}
    for name, value in env.items():
        if is_secret_name(name):
            out[name] = REDACTED
        else:
            # Proxy URLs and the like can carry user:password@.
            out[name] = _URL_CREDENTIALS.sub(lambda m: m.group("scheme") + REDACTED + "@", value)
    return out


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
