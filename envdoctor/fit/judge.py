"""The verdicts of ``envdoctor fit``: findings with the numbers their fixes give.

Each code is documented (``envdoctor explain CODE``) by :data:`CODES`.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ..checks import CodeDoc
from ..findings import Finding, Fix
from ..matrix import hardware as hw
from .memory import GiB, gib

VLLM_DOC = "https://github.com/vllm-project/vllm/blob/35d5cda123ec28581759b6d34cde8052314fb1e6/vllm/v1/worker/gpu_worker.py"

CODES: Tuple[CodeDoc, ...] = (
    CodeDoc("fit.weights_do_not_fit", "error",
            "The model's weights (with the engine's own overheads) are larger than the GPU memory it may use.",
            "The weights per GPU (safetensors headers, else config.json), the engine's share of the GPU's memory",
            "The engine stops while loading with CUDA out of memory. More tensor parallelism, a quantized "
            "checkpoint or a larger GPU is needed; the finding gives the weights per GPU each would leave.",
            VLLM_DOC),
    CodeDoc("fit.kv_below_context", "error",
            "The KV cache left after the weights holds fewer tokens than the context (and batch) asked for.",
            "KV bytes per token per GPU (attention kind, KV heads, head size, KV dtype), the engine's KV budget",
            "vLLM refuses to start when one sequence of max_model_len tokens does not fit its KV cache; fewer "
            "concurrent sequences than asked fit otherwise. The fixes (--max-model-len, an FP8 KV cache, more "
            "memory utilization, more tensor parallelism) each come with the number they give.", VLLM_DOC),
    CodeDoc("fit.precision_unsupported", "error",
            "The GPU's compute capability is below what the engine needs for this precision (BF16, FP8, FP4, AWQ).",
            "gpu.N.compute_capability, the serving dtype and the checkpoint's quantization; precision.json",
            "The engine refuses to load the model (vLLM: 'Bfloat16 is only supported on GPUs with compute "
            "capability of at least 8.0').", "https://github.com/vllm-project/vllm/blob/"
            "0071b24bf8fe8c3d1bc3516d0ff8477f07964aaf/vllm/model_executor/layers/quantization/fp8.py"),
    CodeDoc("fit.precision_emulated", "warning",
            "The GPU cannot compute in the checkpoint's precision natively; the engine keeps the weights in it and "
            "computes in 16 bits (FP8 on Ampere through Marlin).",
            "gpu.N.compute_capability, the checkpoint's quantization; precision.json",
            "It runs and saves the memory, but prefill (compute-bound) is slower than on a GPU with native support.",
            "https://github.com/vllm-project/vllm/blob/0071b24bf8fe8c3d1bc3516d0ff8477f07964aaf/vllm/"
            "model_executor/layers/quantization/fp8.py"),
    CodeDoc("fit.memory_in_use", "warning",
            "Other processes hold much of the GPU's memory now (NVML free memory far below total).",
            "gpu.N.memory_free_bytes, gpu.N.memory_total_bytes",
            "vLLM refuses to start when the free memory is below gpu_memory_utilization x total ('Free memory on "
            "device ... is less than desired GPU memory utilization'); other engines run out of memory sooner.",
            VLLM_DOC),
    CodeDoc("fit.training_does_not_fit", "error",
            "Training this way needs more memory per GPU than the GPU has.",
            "Parameters, optimizer, ZeRO stage and GPUs, batch and sequence length, LoRA rank",
            "The first step runs out of memory. The finding lists the ZeRO stage, LoRA or QLoRA that fits and how "
            "much each needs.", "https://arxiv.org/abs/1910.02054"),
)
CODE_DOCS: Dict[str, CodeDoc] = {c.code: c for c in CODES}


def _ev(key: str, value: Any, source: str) -> Dict[str, Any]:
    return {"key": key, "value": value, "status": "ok", "source": source}


def finding(code: str, severity: str, title: str, detail: str, evidence: List[Dict[str, Any]],
            fix_text: str = "", commands: Optional[List[str]] = None, source: Optional[Dict[str, Any]] = None
            ) -> Finding:
    doc = CODE_DOCS[code]
    src = source or {"rule": doc.summary, "url": doc.source, "checked": "2026-11-29"}
    return Finding(code, severity, ["gpu"], title, detail, evidence, src, Fix(fix_text, commands or []))


def precision_findings(gpu: Any, dtype: str, dtype_explicit: bool, quant: Any, engine: str
                       ) -> List[Finding]:
    """BF16 / FP8 / FP4 / AWQ against the GPU's compute capability (precision.json)."""
    out: List[Finding] = []
    cc = gpu.cc_tuple
    if cc is None:
        return out
    wanted: List[Tuple[str, str]] = []
    if dtype == "bfloat16" and dtype_explicit:
        wanted.append(("bf16", "BF16 (--dtype bfloat16)"))
    if quant.precision == "fp8":
        wanted.append(("fp8", quant.label))
    if quant.precision == "fp4":
        wanted.append(("fp4", quant.label))
    if quant.method == "awq":
        wanted.append(("int4-awq", quant.label))
    for prec, what in wanted:
        row = hw.precision_rule(prec, engine if engine in ("vllm",) else "vllm")
        if row is None:
            continue
        lo = tuple(int(x) for x in row["min_cc"].split("."))
        native = tuple(int(x) for x in row["native_cc"].split("."))
        verified = bool(row["source"].get("verified"))
        src = {"rule": "precision.json: %s on %s" % (prec, row["engine"]), "url": row["source"]["url"],
               "checked": row["source"]["checked"], "verified": verified}
        ev = [_ev("gpu.compute_capability", gpu.cc, gpu.where)]
        if cc < lo:
            out.append(finding(
                "fit.precision_unsupported", "error" if verified else "warning",
                "%s needs compute capability %s; the %s has %s" % (what, row["min_cc"], gpu.name, gpu.cc),
                "%s refuses this precision on this GPU. Use %s instead." % ("vLLM", row["instead"]),
                ev, "Use %s." % row["instead"], source=src))
        elif cc < native and row.get("weight_only"):
            out.append(finding(
                "fit.precision_emulated", "warning" if verified else "info",
                "%s runs weight-only on the %s (compute capability %s; native from %s)" % (
                    what, gpu.name, gpu.cc, row["native_cc"]),
                "The weights keep their size in memory, but the GPU computes in 16 bits: %s. Prefill is slower "
                "than on a GPU with native support." % row["weight_only"], ev,
                "Fine for memory; for speed use %s, or a GPU of compute capability %s or newer." % (
                    row["instead"], row["native_cc"]), source=src))
    return out


def memory_in_use(gpu: Any, requested: Optional[float], engine: str, util: float) -> Optional[Finding]:
    """Free memory far below total: another process holds it (vLLM refuses to start below its share)."""
    if gpu.free is None or gpu.total <= 0:
        return None
    used = gpu.total - gpu.free
    ev = [_ev("gpu.memory_total_bytes", gpu.total, gpu.where), _ev("gpu.memory_free_bytes", gpu.free, gpu.where)]
    if engine == "vllm" and requested is not None and gpu.free < requested:
        can = int(gpu.free / gpu.total * 100 - 1) / 100.0
        return finding(
            "fit.memory_in_use", "error",
            "%s of the %s's %s are in use by other processes; vLLM needs %s free (utilization %.2f)" % (
                gib(used), gpu.name, gib(gpu.total), gib(requested), util),
            "vLLM checks at start-up that the free memory covers gpu_memory_utilization x total and refuses to "
            "start otherwise ('Free memory on device ... is less than desired GPU memory utilization').",
            ev, "Stop the processes holding the memory (nvidia-smi lists them), or lower the utilization to what "
            "is free: --gpu-memory-utilization %.2f." % can,
            ["nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv"])
    if used > 0.1 * gpu.total and used > 1 * GiB:
        return finding(
            "fit.memory_in_use", "warning",
            "%s of the %s's %s are in use by other processes" % (gib(used), gpu.name, gib(gpu.total)),
            "The numbers below count the memory free now, not the GPU's total.", ev,
            "Stop the processes holding the memory if they are not meant to share the GPU (nvidia-smi lists them).",
            ["nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv"])
    return None
