"""Environment variables that decide which GPUs CUDA shows a program.

Fact ``env.cuda_visible_devices``: the raw value of ``CUDA_VISIBLE_DEVICES`` when it is set (an empty string
included: that hides every GPU), absent otherwise.  The checks compare it with the GPUs NVML sees (NVML
ignores the variable; CUDA applies it).
"""

from __future__ import annotations

from typing import Iterable, List

from ..facts import Fact, ok
from . import ProbeContext, register


@register("environment", "CUDA environment variables", order=15)
def probe_environment(ctx: ProbeContext) -> Iterable[Fact]:
    env = ctx.host.environ()
    facts: List[Fact] = []
    if "CUDA_VISIBLE_DEVICES" in env:
        facts.append(ok("env.cuda_visible_devices", env["CUDA_VISIBLE_DEVICES"], "env:CUDA_VISIBLE_DEVICES",
                        "CUDA_VISIBLE_DEVICES"))
    return facts
