"""The arithmetic of ``envdoctor fit``: weights, KV cache, the engine's budget, training memory.

Every number is a :class:`Term` with the bytes and a sentence saying how it was derived; terms that
are estimates (activation peaks, the engine's own overheads) say so (``estimate: true``). Sizes are
per GPU unless a term says otherwise.
"""

from __future__ import annotations

import math
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .arch import Arch
from .quant import Quant
from .safetensors import FLOAT_DTYPES, Tensor

GiB = 1 << 30
#: vLLM's default KV block (``CacheConfig.block_size`` on CUDA): KV memory is handed out in blocks of 16 tokens.
VLLM_BLOCK = 16
#: Bytes per element of the dtypes ``--dtype`` and ``--kv-dtype`` name.
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1}
DTYPE_ALIASES = {"half": "float16", "fp16": "float16", "bf16": "bfloat16", "float": "float32", "fp32": "float32"}


class Term:
    """One number in the sum: ``bytes``, how it was derived, whether it is an estimate."""

    __slots__ = ("name", "bytes", "derivation", "estimate", "group")

    def __init__(self, name: str, nbytes: float, derivation: str, estimate: bool = False, group: str = "") -> None:
        self.name = name
        self.bytes = int(round(nbytes))
        self.derivation = derivation
        self.estimate = estimate
        self.group = group

    def to_dict(self) -> Dict[str, Any]:
        return {"name": self.name, "group": self.group, "bytes": self.bytes, "gib": round(self.bytes / GiB, 3),
                "estimate": self.estimate, "derivation": self.derivation}


def gib(n: float) -> str:
    return "%.2f GiB" % (n / GiB)


def normalize_dtype(name: str) -> str:
    name = (name or "auto").strip().lower()
    return DTYPE_ALIASES.get(name, name)


# ================================================================================================ weights

#: Tensor names (Hugging Face layouts) and the tensor-parallel rule vLLM applies to them.
_VOCAB = re.compile(r"(embed_tokens|lm_head|word_embeddings|\bwte\b|embed_out|tok_embeddings)")
_NORM = re.compile(r"(norm|\bln_|_ln\b|layernorm)", re.I)
_REPLICATED = re.compile(r"(\.mlp\.gate\.|\.router\.|e_score_correction_bias|shared_expert_gate|q_a_proj|"
                         r"kv_a_proj_with_mqa|\.gate\.weight$|\.gate\.bias$)")
_KV = re.compile(r"\.(k_proj|v_proj)\.")
_FUSED_QKV = re.compile(r"\.(qkv_proj|query_key_value|c_attn|Wqkv)\.")
_ROW_BIAS = re.compile(r"\.(o_proj|down_proj|dense|c_proj|out_proj|w2)\.bias$")
_SCALE = re.compile(r"(scale|scales|scale_inv|_scale_2|zeros|g_idx|absmax|quant_map|quant_state)", re.I)
_LAYER = re.compile(r"\blayers\.(\d+)\.")
_ENCODER = re.compile(r"(vision|visual|image|audio|mm_projector|multi_modal_projector|speech)", re.I)


def tensor_share(name: str, ndim: int, arch: Arch, tp: int) -> float:
    """The fraction of a tensor one of ``tp`` GPUs holds (vLLM's sharding, see the arch module)."""
    if tp <= 1:
        return 1.0
    if _VOCAB.search(name):
        return 1.0 / tp
    if _NORM.search(name) or _REPLICATED.search(name) or ndim == 0 or _ROW_BIAS.search(name):
        return 1.0
    kv_share = arch.kv_heads_per_gpu(tp) / arch.kv_heads
    if _KV.search(name):
        return kv_share
    if _FUSED_QKV.search(name):
        q = arch.heads / (arch.heads + 2 * arch.kv_heads)
        return q / tp + (1 - q) * kv_share
    return 1.0 / tp


def _component(name: str) -> str:
    if _VOCAB.search(name):
        return "lm_head" if "lm_head" in name or "embed_out" in name else "embeddings"
    if _ENCODER.search(name):
        return "encoder"
    if _NORM.search(name):
        return "norms"
    if "experts" in name and "shared" not in name:
        return "experts"
    if "shared_expert" in name:
        return "shared experts"
    if "attn" in name or "attention" in name:
        return "attention"
    if "mlp" in name or "feed_forward" in name or "ffn" in name:
        return "mlp"
    return "other"


def weights_from_headers(tensors: Sequence[Tensor], arch: Arch, quant: Quant, tp: int,
                         dtype_bytes: float) -> Tuple[float, Dict[str, float], List[str]]:
    """(bytes on one GPU, bytes per component, notes) from the tensors' dtypes and shapes.

    A floating tensor that is not a quantization scale is counted in the serving dtype (an engine casts
    it on load); a quantized (integer, FP8, FP4) tensor and its scales as stored. With ``--quant`` on an
    unquantized checkpoint, its linear weights are counted in the quantized format instead."""
    total = 0.0
    parts: Dict[str, float] = {}
    notes: List[str] = []
    skipped = 0
    skipped_bytes = 0
    for t in tensors:
        m = _LAYER.search(t.name)
        if m and int(m.group(1)) >= arch.layers and arch.mtp_layers and "mtp" not in t.name.lower():
            skipped += 1          # DeepSeek V3's multi-token-prediction layer: not loaded for serving by default
            skipped_bytes += t.nbytes
            continue
        comp = _component(t.name)
        share = tensor_share(t.name, len(t.shape), arch, tp)
        if t.dtype in FLOAT_DTYPES and not _SCALE.search(t.name.rsplit(".", 1)[-1]):
            if (quant.quantized and not quant.from_checkpoint and len(t.shape) == 2 and t.name.endswith(".weight")
                    and quant.applies_to(comp)):
                nbytes = quant.linear_bytes(t.shape[0], t.shape[1], dtype_bytes)
            else:
                nbytes = t.numel * dtype_bytes
        else:
            nbytes = float(t.nbytes)
        nbytes *= share
        total += nbytes
        parts[comp] = parts.get(comp, 0.0) + nbytes
    if skipped:
        notes.append("%d tensors (%s) of the multi-token-prediction layer are not loaded for serving by default and "
                     "not counted" % (skipped, gib(skipped_bytes)))
    return total, parts, notes


def weights_from_config(arch: Arch, quant: Quant, tp: int, dtype_bytes: float) -> Tuple[float, Dict[str, float]]:
    total = 0.0
    parts: Dict[str, float] = {}
    for b in arch.blocks():
        out, inn = arch.per_gpu(b, tp)
        if b.linear and quant.applies_to(b.component):
            one = quant.linear_bytes(out, inn, dtype_bytes)
        else:
            one = out * inn * dtype_bytes
        n = one * b.copies
        total += n
        parts[b.component] = parts.get(b.component, 0.0) + n
    return total, parts


# ================================================================================================ KV cache

class KV:
    """Bytes of KV cache per token on one GPU, and per request for a given context."""

    def __init__(self, arch: Arch, tp: int, kv_bytes: float, block: int = VLLM_BLOCK, chunk: int = 0) -> None:
        self.arch = arch
        self.full_elems, self.sliding_elems, self.windows = arch.kv_elements_per_token(tp)
        self.kv_bytes = kv_bytes
        self.block = block
        self.chunk = chunk  # vLLM keeps window - 1 + max_num_batched_tokens tokens of a sliding layer

    @property
    def per_token_full(self) -> float:
        return self.full_elems * self.kv_bytes

    @property
    def per_token_all(self) -> float:
        return (self.full_elems + self.sliding_elems) * self.kv_bytes

    def per_request(self, context: int) -> float:
        """Bytes one sequence of ``context`` tokens holds (sliding layers keep their window only)."""
        b = self.block
        full = math.ceil(context / b) * b * self.per_token_full
        sliding = 0.0
        for w, elems in self.windows.items():
            keep = min(w - 1 + self.chunk, context) if self.chunk else min(w, context)
            sliding += (math.ceil(keep / b) + (1 if self.chunk else 0)) * b * elems * self.kv_bytes
        return full + sliding

    def tokens(self, budget: float, context: int) -> int:
        """Tokens of context the budget holds across concurrent sequences of ``context`` tokens."""
        if budget <= 0:
            return 0
        if not self.windows:
            blocks = int(budget // (self.per_token_full * self.block)) if self.per_token_full else 0
            return blocks * self.block
        per = self.per_request(context)
        return int(budget / per * context) if per else 0

    def max_context(self, budget: float, batch: int, limit: Optional[int]) -> int:
        """The longest context ``batch`` sequences can each have within ``budget`` (at most ``limit``)."""
        hi = limit or 10 ** 8
        if budget <= 0 or self.per_request(1) * batch > budget:
            return 0
        if self.per_request(hi) * batch <= budget:
            return hi
        lo = 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.per_request(mid) * batch <= budget:
                lo = mid
            else:
                hi = mid - 1
        return lo - lo % self.block if lo >= self.block else lo

    def derivation(self, tp: int) -> str:
        a = self.arch
        kvb = "%g byte%s" % (self.kv_bytes, "" if self.kv_bytes == 1 else "s")
        kinds = a.layer_kinds()
        n_full = sum(1 for k in kinds if k.kind in ("full", "mla"))
        n_slide = sum(1 for k in kinds if k.kind == "sliding")
        n_lin = sum(1 for k in kinds if k.kind == "linear")
        if a.mla:
            text = ("MLA: %d layers x (kv_lora_rank %d + qk_rope_head_dim %d) x %s; one latent per token shared by "
                    "all heads, so every GPU holds all of it" % (a.layers, a.kv_lora_rank or 0, a.qk_rope, kvb))
        else:
            per = a.kv_heads_per_gpu(tp)
            att = "MHA" if a.kv_heads == a.heads else ("MQA" if a.kv_heads == 1 else "GQA")
            rep = " (%d KV heads < %d GPUs: each GPU keeps a copy of one)" % (a.kv_heads, tp) if a.kv_heads < tp else ""
            text = ("%s: 2 (K and V) x %d layers x %d KV heads%s x head_dim %d x %s" % (
                att, n_full + n_slide, per, " per GPU" if tp > 1 else "", a.head_dim, kvb)) + rep
            if a.v_head_dim != a.head_dim:
                text = text.replace("2 (K and V) x", "(K %d + V %d) x" % (a.head_dim, a.v_head_dim)).replace(
                    " x head_dim %d" % a.head_dim, "")
        if n_slide:
            ws = ", ".join("%d tokens" % w for w in sorted(self.windows))
            text += "; %d of the %d layers use a sliding window (%s) and keep only that many tokens" % (
                n_slide, a.layers, ws)
        if n_lin:
            text += "; %d linear-attention layers keep a fixed state per sequence instead (not counted)" % n_lin
        return text


# ================================================================================================ engines

def vllm_batch_defaults(total: int, gpu_name: str) -> Tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) ``vllm serve`` picks for this GPU (vLLM
    ``EngineArgs.get_batch_defaults``: 8192 and 1024 on GPUs with 70 GiB or more that are not A100s, else 2048
    and 256, for the OpenAI-compatible server)."""
    if total >= 70 * GiB and "a100" not in gpu_name.lower():
        return 8192, 1024
    return 2048, 256


def activation_peak(arch: Arch, tp: int, tokens: int, seqs: int, dtype_bytes: float) -> Tuple[float, str]:
    """An estimate of the memory vLLM's profiling forward pass peaks at (``profile_run``: one forward pass
    over ``max_num_batched_tokens`` tokens, then logits for ``max_num_seqs`` sequences)."""
    H, d = arch.hidden, dtype_bytes
    q = arch.heads * arch.head_dim / tp
    kv = 2 * arch.kv_heads_per_gpu(tp) * arch.head_dim
    attn = q + kv + arch.heads * arch.v_head_dim / tp
    dense = 3 * arch.intermediate / tp if arch.layers > sum(1 for i in range(arch.layers) if arch.moe_layer(i)) else 0
    moe = 0.0
    if arch.experts:
        moe = arch.experts_per_token * (3 * arch.moe_intermediate / tp + H) + arch.experts * 4 / d
    per_token = 2 * H + max(attn, dense, moe)
    forward = tokens * per_token * d
    rows = min(seqs, tokens)
    logits = rows * arch.vocab * 4 * 2
    how = ("forward: %d tokens x (2 x hidden %d + the widest layer output, %d) x %g bytes; plus the sampler: %d "
           "sequences x vocabulary %d x 4 bytes x 2 float32 copies" % (tokens, H, max(attn, dense, moe), d, rows,
                                                                       arch.vocab))
    return forward + logits, how


def non_torch_estimate(tp: int) -> Tuple[float, str]:
    """Memory vLLM allocates outside PyTorch during profiling (cuBLAS workspaces; NCCL and custom all-reduce
    buffers with more than one GPU); what published start-up logs show ('non_torch_memory takes ...')."""
    if tp <= 1:
        return 0.15 * GiB, "0.15 GiB (cuBLAS workspaces; published vLLM start-up logs show 0.03-0.3 GiB on one GPU)"
    return 0.3 * GiB, ("0.3 GiB (NCCL and custom all-reduce buffers with %d GPUs; published vLLM start-up logs show "
                       "0.2-0.3 GiB)" % tp)
