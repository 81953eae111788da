"""After an install: diagnose again and say what envdoctor now sees.

The executor has already run each step's own verification; this looks at the
machine the way `envdoctor diagnose` does, so the user sees the component
found where it was put (a prefix through ``CUDA_HOME``, a virtual environment
through its interpreter) and any finding that still concerns it.
"""

from __future__ import annotations

import os
import time
from typing import Dict, List, Optional, Sequence, Tuple

#: component -> (fact keys worth showing, finding components that concern it)
SHOWN: Dict[str, Tuple[Sequence[str], Sequence[str]]] = {
    "cuda": (("cuda.home", "cuda.toolkits", "cuda.nvcc", "cuda.pip_wheels"), ("cuda", "driver", "compiler")),
    "cudnn": (("libraries.cudnn", "libraries.loader_choice"), ("cudnn",)),
    "nccl": (("libraries.nccl",), ("nccl",)),
    "driver": (("driver.version", "driver.cuda_version", "driver.nvml.status"), ("driver", "gpu")),
    "container-toolkit": (("container.toolkit", "container.nvidia_runtime_configured"),
                          ("container-toolkit", "docker")),
    "pytorch": (("framework.torch",), ("torch",)),
    "tensorflow": (("framework.tensorflow",), ("tensorflow",)),
    "jax": (("framework.jax",), ("jax",)),
}


def rediagnose(component: str, prefix: Optional[str] = None, python: Optional[str] = None,
               timeout: float = 10.0) -> Tuple[List[str], bool]:
    """Lines to show, and whether nothing about ``component`` is an error any more."""
    from ..host.live import LiveHost
    from ..render.text import format_value
    from ..report import diagnose

    host = LiveHost(timeout=timeout, deadline=time.monotonic() + timeout, python_executable=python)
    if prefix and component in ("cuda", "cudnn"):
        # A prefix install is found the way its user will point tools at it.
        env = dict(os.environ)
        if component == "cuda":
            env["CUDA_HOME"] = prefix
        env["LD_LIBRARY_PATH"] = ":".join(p for p in (os.path.join(prefix, "lib"), os.path.join(prefix, "lib64"),
                                                      env.get("LD_LIBRARY_PATH", "")) if p)
        host._environ = env  # the seam's environment for this look only
    report = diagnose(host)
    keys, components = SHOWN.get(component, ((), (component,)))
    facts = report.facts
    lines = ["envdoctor now sees:"]
    for key in keys:
        f = facts.get(key)
        if f is None:
            continue
        value = format_value(key, f.value) if f.status == "ok" else "%s (%s)" % (f.status, f.reason)
        label = f.label or key
        first, *rest = value.split("\n")
        lines.append("  %-28s %s" % (label, first))
        lines += ["  %-28s %s" % ("", r) for r in rest]
    relevant = [fd for fd in report.findings if set(fd.components) & set(components) and fd.severity != "info"]
    for fd in relevant:
        lines.append("  %s %s (%s)" % (fd.severity.upper(), fd.title, fd.code))
    ok = not any(fd.severity == "error" for fd in relevant)
    lines.append("Verified: no remaining problem with %s." % component if ok and not relevant else
                 "Installed; %d finding(s) above still concern %s (run `envdoctor diagnose` for the fixes)."
                 % (len(relevant), component))
    return lines, ok
