"""Training memory per GPU: weights, gradients, optimizer states (per ZeRO stage), activations; LoRA/QLoRA.

Mixed-precision training keeps per parameter (Rajbhandari et al., "ZeRO: Memory Optimizations Toward
Training Trillion Parameter Models", 2020, section 3.1): 16-bit weights (2 bytes), 16-bit gradients
(2 bytes) and the optimizer's K bytes: Adam/AdamW a float32 master copy, momentum and variance (K = 12);
SGD with momentum a master copy and momentum (K = 8); 8-bit Adam (bitsandbytes) a master copy and two
8-bit states (K = 6). ZeRO stage 1 shards the optimizer states over the N data-parallel GPUs, stage 2
the gradients too, stage 3 the weights too.

Activations (Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models", 2022,
section 4.1): a layer keeps about 34 x s x b x h bytes in 16 bits when attention does not materialise its
s x s scores (FlashAttention / SDPA). With activation checkpointing (the default assumed here, as LoRA and
QLoRA recipes and DeepSpeed configs use it) each layer keeps only its 16-bit input (2 x s x b x h) and one
layer's activations exist again during its recomputation. The loss adds float32 logits and their gradient
(b x s x vocab x 8 bytes).

LoRA (Hu et al. 2021) adds r x (in + out) trainable parameters per adapted matrix, kept in float32 by PEFT
(``autocast_adapter_dtype``), with float32 gradients and Adam states; QLoRA (Dettmers et al. 2023) stores
the frozen base's linear weights in 4-bit NF4 with double-quantized absmax (about 4.127 bits per weight).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from .arch import Arch
from .memory import GiB, Term, gib

#: Optimizer bytes per trainable parameter beyond the 16-bit weights and gradients (K in the ZeRO paper).
OPTIMIZER_BYTES = {"adamw": 12, "adam": 12, "sgd": 8, "adamw-8bit": 6}
#: The CUDA context, cuBLAS workspaces and the caching allocator's slack: an estimate.
OVERHEAD = 1 * GiB
DEFAULT_TRAIN_CONTEXT = 4096


def lora_parameters(arch: Arch, rank: int) -> int:
    """r x (in + out) for every attention and dense/shared MLP matrix (PEFT's "all-linear", experts left out)."""
    total = 0
    for b in arch.blocks():
        if b.linear and b.component in ("attention", "mlp", "shared experts"):
            if b.component == "mlp" and b.out > b.inn and arch.gated:
                # gate and up are counted as one block of 2 x intermediate rows: two adapters
                total += 2 * rank * (b.inn + b.out // 2) * b.copies
            else:
                total += rank * (b.inn + b.out) * b.copies
    return total


def _sizes(arch: Arch, params: int, base_bytes: float, mode: str, zero: int, n: int, optimizer: str,
           rank: int) -> Dict[str, float]:
    k = OPTIMIZER_BYTES[optimizer]
    if mode == "full":
        w, g, o = 2.0 * params, 2.0 * params, float(k) * params
        if zero >= 1:
            o /= n
        if zero >= 2:
            g /= n
        if zero >= 3:
            w /= n
        return {"weights": w, "gradients": g, "optimizer": o, "adapters": 0.0}
    lp = lora_parameters(arch, rank)
    # float32 adapters: no separate master copy; Adam's two states (8 bytes), SGD's one (4), 8-bit Adam's two (2).
    ko = {"adamw": 8, "adam": 8, "sgd": 4, "adamw-8bit": 2}[optimizer]
    w = base_bytes
    if zero >= 3:
        w /= n
    return {"weights": w, "adapters": 4.0 * lp, "gradients": 4.0 * lp, "optimizer": float(ko) * lp / (n if zero else 1)}


def activations(arch: Arch, batch: int, seq: int, checkpointing: bool) -> Tuple[float, str]:
    sbh = float(batch) * seq * arch.hidden
    logits = float(batch) * seq * arch.vocab * 8
    if checkpointing:
        a = arch.layers * 2 * sbh + 34 * sbh
        how = ("checkpointing: %d layers x 2 bytes x b %d x s %d x h %d (each layer's input) + one layer's "
               "34 x s x b x h recomputed + float32 logits and their gradient (b x s x vocab %d x 8)" % (
                   arch.layers, batch, seq, arch.hidden, arch.vocab))
    else:
        a = arch.layers * 34 * sbh
        how = ("no checkpointing: %d layers x 34 x b %d x s %d x h %d + float32 logits and their gradient "
               "(b x s x vocab %d x 8)" % (arch.layers, batch, seq, arch.hidden, arch.vocab))
    return a + logits, how


class TrainPlan:
    """One way to train: its per-GPU total and the terms that make it."""

    def __init__(self, label: str, mode: str, zero: int, total: float, terms: List[Term]) -> None:
        self.label = label
        self.mode = mode
        self.zero = zero
        self.total = total
        self.terms = terms


def plan(arch: Arch, params: int, mode: str, zero: int, gpus: int, optimizer: str, batch: int, seq: int,
         checkpointing: bool, rank: int, dtype_bytes: float, qlora_bytes: Optional[float] = None) -> TrainPlan:
    """The memory one GPU needs to train this way."""
    base = params * 2.0 if mode != "qlora" else float(qlora_bytes or params * 0.52)
    s = _sizes(arch, params, base, mode, zero, gpus, optimizer, rank)
    act, act_how = activations(arch, batch, seq, checkpointing)
    shard = " / %d GPUs (ZeRO-%d)" % (gpus, zero)
    terms: List[Term] = []
    if mode == "full":
        terms.append(Term("weights", s["weights"], "%d parameters x 2 bytes (16-bit)%s" % (
            params, shard if zero >= 3 and gpus > 1 else ""), group="training"))
        terms.append(Term("gradients", s["gradients"], "%d parameters x 2 bytes%s" % (
            params, shard if zero >= 2 and gpus > 1 else ""), group="training"))
        terms.append(Term("optimizer states", s["optimizer"], "%s: %d parameters x %d bytes (float32 master copy and "
                          "states)%s" % (optimizer, params, OPTIMIZER_BYTES[optimizer],
                                         shard if zero >= 1 and gpus > 1 else ""), group="training"))
    else:
        lp = lora_parameters(arch, rank)
        what = "16-bit" if mode == "lora" else "NF4 4-bit linear layers (double-quantized absmax), the rest 16-bit"
        terms.append(Term("frozen weights", s["weights"], "%d parameters, %s%s" % (
            params, what, shard if zero >= 3 and gpus > 1 else ""), group="training"))
        terms.append(Term("LoRA adapters", s["adapters"], "rank %d on every attention and MLP matrix: %d parameters x "
                          "4 bytes (float32)" % (rank, lp), group="training"))
        terms.append(Term("LoRA gradients", s["gradients"], "%d x 4 bytes" % lp, group="training"))
        terms.append(Term("optimizer states", s["optimizer"], "%s on the adapters only" % optimizer, group="training"))
    terms.append(Term("activations", act, act_how, estimate=True, group="training"))
    terms.append(Term("CUDA context and allocator", OVERHEAD, "about 1 GiB: the CUDA context, cuBLAS workspaces and "
                      "the caching allocator's slack (an estimate)", estimate=True, group="training"))
    total = sum(t.bytes for t in terms)
    label = {"full": "full fine-tuning", "lora": "LoRA", "qlora": "QLoRA"}[mode]
    if zero:
        label += " with ZeRO-%d over %d GPU%s" % (zero, gpus, "" if gpus == 1 else "s")
    return TrainPlan(label, mode, zero, total, terms)


def alternatives(arch: Arch, params: int, gpus: int, optimizer: str, batch: int, seq: int, checkpointing: bool,
                 rank: int, dtype_bytes: float, qlora_bytes: float, usable: float, current: TrainPlan
                 ) -> List[Tuple[str, float, bool]]:
    """(how, GiB per GPU, fits) for the other ways to train, cheapest change first."""
    out: List[Tuple[str, float, bool]] = []
    if current.mode == "full":
        for z in (1, 2, 3):
            if z > current.zero and gpus > 1:
                p = plan(arch, params, "full", z, gpus, optimizer, batch, seq, checkpointing, rank, dtype_bytes)
                out.append(("--zero %d (over %d GPUs)" % (z, gpus), p.total, p.total <= usable))
    if current.mode in ("full",):
        p = plan(arch, params, "lora", 0, gpus, optimizer, batch, seq, checkpointing, rank, dtype_bytes)
        out.append(("--mode lora", p.total, p.total <= usable))
    if current.mode in ("full", "lora"):
        p = plan(arch, params, "qlora", 0, gpus, optimizer, batch, seq, checkpointing, rank, dtype_bytes, qlora_bytes)
        out.append(("--mode qlora", p.total, p.total <= usable))
    if not checkpointing:
        p = plan(arch, params, current.mode, current.zero, gpus, optimizer, batch, seq, True, rank, dtype_bytes,
                 qlora_bytes)
        out.append(("activation checkpointing", p.total, p.total <= usable))
    if batch > 1:
        p = plan(arch, params, current.mode, current.zero, gpus, optimizer, 1, seq, checkpointing, rank, dtype_bytes,
                 qlora_bytes)
        out.append(("--batch 1", p.total, p.total <= usable))
    return out


def describe(p: TrainPlan) -> str:
    return "%s: %s per GPU" % (p.label, gib(p.total))
