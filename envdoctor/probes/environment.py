"""Environment variables that decide which GPUs CUDA shows a program.

Fact ``env.cuda_visible_devices``: the raw value of ``CUDA_VISIBLE_DEVICES`` when it is set (an empty string
included: that hides every GPU), absent otherwise; with it ``env.cuda_device_order`` (``CUDA_DEVICE_ORDER``, or
None when unset: CUDA then numbers the GPUs fastest first, not in nvidia-smi's PCI order).  The checks
compare them with the GPUs NVML sees (NVML ignores the variables; CUDA applies them).

Fact ``env.torch_cuda_arch_list``: the raw value of ``TORCH_CUDA_ARCH_LIST`` when it is set: the GPU
architectures PyTorch CUDA extensions (and PyTorch itself) built in this environment are compiled for.
"""

from __future__ import annotations

from typing import Iterable, List

from ..facts import Fact, ok
from . import ProbeContext, register


@register("environment", "CUDA environment variables", order=15,
          produces=("env.*",))
def probe_environment(ctx: ProbeContext) -> Iterable[Fact]:
    env = ctx.host.environ()
    facts: List[Fact] = []
    if "CUDA_VISIBLE_DEVICES" in env:
        facts.append(ok("env.cuda_visible_devices", env["CUDA_VISIBLE_DEVICES"], "env:CUDA_VISIBLE_DEVICES",
                        "CUDA_VISIBLE_DEVICES"))
        facts.append(ok("env.cuda_device_order", env.get("CUDA_DEVICE_ORDER") or None, "env:CUDA_DEVICE_ORDER",
                        "CUDA_DEVICE_ORDER"))
    if "TORCH_CUDA_ARCH_LIST" in env:
        facts.append(ok("env.torch_cuda_arch_list", env["TORCH_CUDA_ARCH_LIST"], "env:TORCH_CUDA_ARCH_LIST",
                        "TORCH_CUDA_ARCH_LIST"))
    ldp = [d for d in (env.get("LD_LIBRARY_PATH") or "").split(":") if d.startswith("/")]
    if ldp:
        # the directories as the loader reaches them: /usr/local/cuda/compat is /usr/local/cuda-12.9/compat
        facts.append(ok("env.ld_library_path_resolved", [{"entry": d, "resolved": ctx.host.resolve(d)} for d in ldp],
                        "env:LD_LIBRARY_PATH", "LD_LIBRARY_PATH, links resolved"))
    return facts
