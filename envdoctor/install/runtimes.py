"""Which container runtimes this machine has, and whether systemd manages them (for ``install container-toolkit``).

Read from the file system only (the programs on ``PATH``, systemd's unit directories), so it never hangs on
a daemon that does not answer.  The answer reaches the recipe as the fact ``install.runtimes``:
``{"systemd": bool, "runtimes": {"docker": {"systemd": bool}, ...}}``.
"""

from __future__ import annotations

import os
import shutil
from typing import Callable, Dict, Optional, Tuple

#: runtime -> (the program that shows it is installed, its systemd unit; None: daemonless)
RUNTIMES: Dict[str, Tuple[str, Optional[str]]] = {
    "docker": ("dockerd", "docker.service"),
    "containerd": ("containerd", "containerd.service"),
    "crio": ("crio", "crio.service"),
    "podman": ("podman", None),
}
UNIT_DIRS = ("/etc/systemd/system", "/run/systemd/system", "/usr/lib/systemd/system", "/lib/systemd/system")
#: Directories searched besides PATH (sudo's secure_path may leave /usr/sbin out, where crio lives).
EXTRA_BIN = ("/usr/sbin", "/usr/local/sbin", "/usr/bin", "/usr/local/bin")


def detect(which: Callable[[str], Optional[str]] = shutil.which,
           exists: Callable[[str], bool] = os.path.exists) -> Dict[str, object]:
    systemd = exists("/run/systemd/system")  # sd_booted(3): systemd is PID 1
    found: Dict[str, Dict[str, bool]] = {}
    for name, (program, unit) in RUNTIMES.items():
        if which(program) is None and not any(exists(os.path.join(d, program)) for d in EXTRA_BIN):
            continue
        managed = bool(systemd and unit and any(exists(os.path.join(d, unit)) for d in UNIT_DIRS))
        found[name] = {"systemd": managed}
    kubelet = which("kubelet") is not None or any(exists(os.path.join(d, "kubelet")) for d in EXTRA_BIN)
    return {"systemd": systemd, "runtimes": found, "kubelet": kubelet}
