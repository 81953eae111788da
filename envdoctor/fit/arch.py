"""A model's architecture, read from its ``config.json``: the shapes of its weights and of its KV cache.

Only the keys Hugging Face's configuration classes define are read (``transformers/models/*/
configuration_*.py``); nothing is imported and no model code runs. Each weight is a :class:`Block`
(a matrix or vector repeated ``count`` times) with the rule that splits it over tensor-parallel GPUs,
the same rules vLLM's layers apply (``vllm/model_executor/layers/linear.py``: column-parallel splits
the output, row-parallel the input; ``QKVParallelLinear`` replicates the key/value heads when there
are fewer of them than GPUs; ``VocabParallelEmbedding`` splits the vocabulary; norms and MoE routers
are replicated; MLA's down-projections ``q_a_proj``/``kv_a_proj_with_mqa`` are replicated).

The attention layers' kinds (:meth:`Arch.layer_kinds`) decide the KV cache: full attention keeps every
token; a sliding window keeps the last W (Mistral's ``sliding_window``; Gemma 2's even layers; Gemma 3's
five local layers of every six, ``sliding_window_pattern``; ``layer_types`` where a config lists them);
MLA (DeepSeek V2/V3) keeps one latent vector of ``kv_lora_rank + qk_rope_head_dim`` per token and layer,
shared by every head (so not split over GPUs); linear-attention layers (``layer_types`` "linear_attention",
Mamba) keep a fixed state per sequence, not per token.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

#: Model types whose MLP is not gated (two matrices, not three).
NON_GATED = frozenset(("gpt2", "gpt_neox", "gptj", "falcon", "opt", "bloom", "phi", "starcoder2", "gpt_bigcode",
                       "mpt", "codegen", "gpt_neo"))
#: ``tie_word_embeddings`` when a config leaves it out: the default of that model type's configuration class.
TIED_BY_DEFAULT = frozenset(("gemma", "gemma2", "gemma3", "gemma3_text", "gpt2", "bloom", "opt", "starcoder2",
                             "falcon", "gpt_bigcode", "phi"))
#: Model types whose q/k/v projections carry a bias without saying so in config.json.
QKV_BIAS = frozenset(("qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl"))
#: Model types with four norms per decoder layer (pre/post attention, pre/post feed-forward).
FOUR_NORMS = frozenset(("gemma2", "gemma3", "gemma3_text", "olmo2"))
#: Model types with per-head q/k norms (head_dim each).
QK_NORM = frozenset(("qwen3", "qwen3_moe", "gemma3", "gemma3_text"))


class ArchError(Exception):
    """config.json lacks what the arithmetic needs; the message names the missing key."""


class Block(NamedTuple):
    """A weight: ``copies`` copies of an ``out`` x ``inn`` matrix (``inn`` 1: a vector), split over GPUs by
    ``split``: ``col`` (output), ``row`` (input), ``kv`` (key/value heads), ``vocab``, ``rep`` (replicated)."""

    component: str
    out: int
    inn: int
    copies: int
    split: str
    linear: bool  # a linear layer's weight: what quantization applies to

    @property
    def numel(self) -> int:
        return self.out * self.inn * self.copies


class LayerKind(NamedTuple):
    kind: str  # "full", "sliding", "mla", "linear" (a fixed state), "cross"
    window: Optional[int] = None


def _first(cfg: Dict[str, Any], *keys: str) -> Any:
    for k in keys:
        v = cfg.get(k)
        if v is not None and not isinstance(v, bool):
            return v
    return None


def _int(cfg: Dict[str, Any], *keys: str, default: Optional[int] = None, required: bool = True) -> Optional[int]:
    v = _first(cfg, *keys)
    if v is None:
        if default is None and required:
            raise ArchError("config.json has no %s" % " / ".join(keys))
        return default
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if not isinstance(v, int) or v < 0 or v > 10 ** 9:
        raise ArchError("config.json's %s is %r, not a count" % (keys[0], v))
    return v


def text_config(config: Dict[str, Any]) -> Tuple[Dict[str, Any], bool]:
    """The language model's part of a config (multimodal models nest it in ``text_config``), and whether
    the model has parts beyond it (a vision or audio encoder)."""
    inner = config.get("text_config") if isinstance(config.get("text_config"), dict) else None
    extra = any(isinstance(config.get(k), dict) for k in ("vision_config", "audio_config", "vision_tower_config"))
    if inner is not None and not config.get("num_hidden_layers"):
        merged = dict(inner)
        for k in ("tie_word_embeddings", "torch_dtype", "dtype", "quantization_config"):
            if k in config and k not in merged:
                merged[k] = config[k]
        if "model_type" not in merged:
            merged["model_type"] = config.get("model_type")
        return merged, True
    return config, extra


class Arch:
    """The shapes a config.json describes (see the module docstring)."""

    def __init__(self, config: Dict[str, Any]) -> None:
        if not isinstance(config, dict):
            raise ArchError("config.json is not a JSON object")
        self.raw = config
        cfg, self.has_encoder = text_config(config)
        self.cfg = cfg
        self.model_type = str(cfg.get("model_type") or config.get("model_type") or "")
        archs = config.get("architectures")
        self.architecture = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else ""
        self.hidden = _int(cfg, "hidden_size", "n_embd", "d_model", "dim") or 0
        self.layers = _int(cfg, "num_hidden_layers", "n_layer", "num_layers", "n_layers") or 0
        self.heads = _int(cfg, "num_attention_heads", "n_head", "num_heads") or 0
        if self.hidden <= 0 or self.layers <= 0 or self.heads <= 0:
            raise ArchError("config.json gives no positive hidden size, layer count and head count")
        kv = _first(cfg, "num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num")
        if kv is None and cfg.get("multi_query") is True:
            kv = 1
        self.kv_heads = int(kv) if isinstance(kv, int) and kv > 0 else self.heads
        hd = cfg.get("head_dim")
        self.head_dim = int(hd) if isinstance(hd, int) and hd > 0 else self.hidden // self.heads
        self.v_head_dim = self.head_dim
        self.vocab = _int(cfg, "vocab_size", "padded_vocab_size", "n_vocab") or 0
        inter = _first(cfg, "intermediate_size", "ffn_hidden_size", "n_inner", "ffn_dim")
        self.intermediate = int(inter) if isinstance(inter, int) and inter > 0 else 4 * self.hidden
        tied = cfg.get("tie_word_embeddings", config.get("tie_word_embeddings"))
        self.tied = bool(tied) if isinstance(tied, bool) else self.model_type in TIED_BY_DEFAULT
        self.tied_assumed = not isinstance(tied, bool)
        self.gated = self.model_type not in NON_GATED
        self.qkv_bias = bool(cfg.get("attention_bias")) or self.model_type in QKV_BIAS or \
            bool(cfg.get("qkv_bias")) or bool(cfg.get("bias"))
        self.mlp_bias = bool(cfg.get("mlp_bias"))
        self.norms_per_layer = 4 if self.model_type in FOUR_NORMS else 2
        self.qk_norm = self.model_type in QK_NORM
        self.max_position = _int(cfg, "max_position_embeddings", "n_positions", "max_seq_len", "seq_length",
                                 "max_sequence_length", required=False)
        self.dtype = cfg.get("torch_dtype") or cfg.get("dtype") or config.get("torch_dtype") or config.get("dtype")
        self.notes: List[str] = []
        # MoE
        experts = _first(cfg, "num_local_experts", "n_routed_experts", "num_experts", "moe_num_experts")
        self.experts = int(experts) if isinstance(experts, int) and experts > 1 else 0
        topk = _first(cfg, "num_experts_per_tok", "moe_top_k", "num_experts_per_token", "top_k")
        self.experts_per_token = int(topk) if isinstance(topk, int) and topk > 0 else (2 if self.experts else 0)
        mi = _first(cfg, "moe_intermediate_size", "expert_intermediate_size")
        self.moe_intermediate = int(mi) if isinstance(mi, int) and mi > 0 else self.intermediate
        shared = 0
        if isinstance(cfg.get("n_shared_experts"), int) and cfg["n_shared_experts"] > 0:
            shared = cfg["n_shared_experts"] * self.moe_intermediate
        elif isinstance(cfg.get("shared_expert_intermediate_size"), int):
            shared = cfg["shared_expert_intermediate_size"]
        elif self.model_type in ("llama4", "llama4_text") and self.experts:
            shared = self.intermediate
        self.shared_intermediate = shared
        # MLA
        self.kv_lora_rank = cfg.get("kv_lora_rank") if isinstance(cfg.get("kv_lora_rank"), int) else None
        self.q_lora_rank = cfg.get("q_lora_rank") if isinstance(cfg.get("q_lora_rank"), int) else None
        self.qk_nope = int(cfg.get("qk_nope_head_dim") or 0)
        self.qk_rope = int(cfg.get("qk_rope_head_dim") or 0)
        if self.kv_lora_rank:
            self.v_head_dim = int(cfg.get("v_head_dim") or self.head_dim)
            self.head_dim = self.qk_nope + self.qk_rope
        self.mtp_layers = int(cfg.get("num_nextn_predict_layers") or 0)

    # --------------------------------------------------------------------------------------------- layers

    @property
    def mla(self) -> bool:
        return bool(self.kv_lora_rank)

    def moe_layer(self, i: int) -> bool:
        if not self.experts:
            return False
        c = self.cfg
        if self.model_type.startswith("deepseek") or "first_k_dense_replace" in c:
            first = int(c.get("first_k_dense_replace") or 0)
            freq = int(c.get("moe_layer_freq") or 1)
            return i >= first and i % max(freq, 1) == 0
        if isinstance(c.get("mlp_only_layers"), list) and i in c["mlp_only_layers"]:
            return False
        if isinstance(c.get("decoder_sparse_step"), int) and c["decoder_sparse_step"] > 0:
            return (i + 1) % c["decoder_sparse_step"] == 0
        if isinstance(c.get("interleave_moe_layer_step"), int) and c["interleave_moe_layer_step"] > 0:
            return (i + 1) % c["interleave_moe_layer_step"] == 0
        return True

    def layer_kinds(self) -> List[LayerKind]:
        """Each decoder layer's attention kind (see the module docstring)."""
        c = self.cfg
        n = self.layers
        if self.mla:
            return [LayerKind("mla")] * n
        window = c.get("sliding_window") if isinstance(c.get("sliding_window"), int) else None
        window = window if window and window > 0 else None
        types = c.get("layer_types")
        if isinstance(types, list) and len(types) == n and all(isinstance(t, str) for t in types):
            out: List[LayerKind] = []
            for t in types:
                if "linear" in t or "mamba" in t:
                    out.append(LayerKind("linear"))
                elif ("sliding" in t or "chunked" in t or "local" in t) and window:
                    out.append(LayerKind("sliding", window))
                else:
                    out.append(LayerKind("full"))
            return out
        chunk = c.get("attention_chunk_size")
        if self.model_type in ("llama4", "llama4_text") and isinstance(chunk, int) and chunk > 0:
            # Llama 4: every fourth layer is global (no RoPE), the others attend within chunks.
            step = 4
            nope = c.get("no_rope_layers")
            if isinstance(nope, list) and len(nope) == n:
                return [LayerKind("full") if not r else LayerKind("sliding", chunk) for r in nope]
            return [LayerKind("full") if (i + 1) % step == 0 else LayerKind("sliding", chunk) for i in range(n)]
        if self.model_type == "gemma2" and window:
            return [LayerKind("sliding", window) if i % 2 == 0 else LayerKind("full") for i in range(n)]
        if self.model_type in ("gemma3", "gemma3_text") and window:
            sp = c.get("sliding_window_pattern")
            pattern = sp if isinstance(sp, int) and sp > 0 else 6
            return [LayerKind("full") if (i + 1) % pattern == 0 else LayerKind("sliding", window) for i in range(n)]
        if self.model_type in ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe"):
            if c.get("use_sliding_window") and window:
                first = int(c.get("max_window_layers") or 0)
                return [LayerKind("sliding", window) if i >= first else LayerKind("full") for i in range(n)]
            return [LayerKind("full")] * n
        if window and self.max_position and window < self.max_position:
            return [LayerKind("sliding", window)] * n
        return [LayerKind("full")] * n

    def default_context(self) -> Optional[int]:
        """The context vLLM serves by default (``max_model_len`` from config.json): the largest position
        the config allows, scaled by YaRN's factor where the config states the original length (vLLM,
        ``vllm/config/model.py`` ``_get_and_verify_max_len``)."""
        base = self.max_position
        rs = self.cfg.get("rope_scaling")
        if isinstance(rs, dict):
            kind = rs.get("rope_type") or rs.get("type")
            factor = rs.get("factor")
            orig = rs.get("original_max_position_embeddings")
            if kind == "yarn" and isinstance(factor, (int, float)) and isinstance(orig, int):
                return int(orig * factor)
        return base

    # --------------------------------------------------------------------------------------------- weights

    def blocks(self) -> List[Block]:
        """Every weight of the language model, in order (embedding, layers, final norm, head)."""
        H, L, V = self.hidden, self.layers, self.vocab
        out: List[Block] = [Block("embeddings", V, H, 1, "vocab", False)]
        nh, nkv, hd, vd = self.heads, self.kv_heads, self.head_dim, self.v_head_dim
        attn_layers = sum(1 for k in self.layer_kinds() if k.kind != "linear")
        if attn_layers < L:
            self.notes.append("%d linear-attention layers counted as attention layers of the same size "
                              "(their exact shapes are not in this arithmetic)" % (L - attn_layers))
        if self.mla:
            kvr, rope, nope = int(self.kv_lora_rank or 0), self.qk_rope, self.qk_nope
            if self.q_lora_rank:
                out.append(Block("attention", self.q_lora_rank, H, L, "rep", True))          # q_a_proj
                out.append(Block("norms", self.q_lora_rank, 1, L, "rep", False))              # q_a_layernorm
                out.append(Block("attention", nh * (nope + rope), self.q_lora_rank, L, "col", True))  # q_b_proj
            else:
                out.append(Block("attention", nh * (nope + rope), H, L, "col", True))         # q_proj
            out.append(Block("attention", kvr + rope, H, L, "rep", True))                    # kv_a_proj_with_mqa
            out.append(Block("norms", kvr, 1, L, "rep", False))                               # kv_a_layernorm
            out.append(Block("attention", nh * (nope + vd), kvr, L, "col", True))            # kv_b_proj
            out.append(Block("attention", H, nh * vd, L, "row", True))                        # o_proj
        else:
            out.append(Block("attention", nh * hd, H, L, "col", True))                        # q_proj
            out.append(Block("attention", nkv * hd, H, L, "kv", True))                        # k_proj
            out.append(Block("attention", nkv * vd, H, L, "kv", True))                        # v_proj
            out.append(Block("attention", H, nh * vd, L, "row", True))                        # o_proj
            if self.qkv_bias:
                out.append(Block("attention", nh * hd, 1, L, "col", False))
                out.append(Block("attention", 2 * nkv * hd, 1, L, "kv", False))
            if self.qk_norm:
                out.append(Block("norms", 2 * hd, 1, L, "rep", False))
        moe_layers = sum(1 for i in range(L) if self.moe_layer(i))
        dense = L - moe_layers
        mats = 3 if self.gated else 2
        if dense:
            out.append(Block("mlp", (mats - 1) * self.intermediate, H, dense, "col", True))  # gate+up
            out.append(Block("mlp", H, self.intermediate, dense, "row", True))                 # down
            if self.mlp_bias:
                out.append(Block("mlp", (mats - 1) * self.intermediate + H, 1, dense, "col", False))
        if moe_layers:
            E, Im = self.experts, self.moe_intermediate
            out.append(Block("experts", (mats - 1) * Im, H, moe_layers * E, "col", True))
            out.append(Block("experts", H, Im, moe_layers * E, "row", True))
            out.append(Block("router", E, H, moe_layers, "rep", False))
            if self.shared_intermediate:
                out.append(Block("shared experts", (mats - 1) * self.shared_intermediate, H, moe_layers, "col", True))
                out.append(Block("shared experts", H, self.shared_intermediate, moe_layers, "row", True))
                if self.model_type == "qwen2_moe":
                    out.append(Block("router", 1, H, moe_layers, "rep", False))            # shared_expert_gate
        out.append(Block("norms", self.norms_per_layer * H, 1, L, "rep", False))
        out.append(Block("norms", H, 1, 1, "rep", False))                                   # final norm
        if not self.tied:
            out.append(Block("lm_head", V, H, 1, "vocab", False))
        return out

    def parameters(self) -> int:
        return sum(b.numel for b in self.blocks())

    def per_gpu(self, b: Block, tp: int) -> Tuple[int, int]:
        """(out, in) of one copy of ``b`` on one of ``tp`` GPUs."""
        if tp <= 1 or b.split == "rep":
            return b.out, b.inn
        if b.split == "col":
            return math.ceil(b.out / tp), b.inn
        if b.split == "row":
            return b.out, math.ceil(b.inn / tp)
        if b.split == "vocab":
            return math.ceil(b.out / tp), b.inn
        if b.split == "kv":
            nkv = self.kv_heads
            per = max(1, nkv // tp) if nkv >= tp else 1
            return b.out // nkv * per, b.inn
        return b.out, b.inn

    # --------------------------------------------------------------------------------------------- KV cache

    def kv_elements_per_token(self, tp: int) -> Tuple[int, int, Dict[int, int]]:
        """(elements per token on one GPU in full-attention layers (MLA included), in sliding layers, and
        elements per token per window size). Keys and values both counted."""
        full = 0
        sliding = 0
        by_window: Dict[int, int] = {}
        nkv = self.kv_heads
        per_gpu = nkv if tp <= 1 else (max(1, nkv // tp) if nkv >= tp else 1)
        for k in self.layer_kinds():
            if k.kind == "mla":
                full += int(self.kv_lora_rank or 0) + self.qk_rope
            elif k.kind == "linear":
                continue
            else:
                e = per_gpu * (self.head_dim + self.v_head_dim)
                if k.kind == "sliding" and k.window:
                    sliding += e
                    by_window[k.window] = by_window.get(k.window, 0) + e
                else:
                    full += e
        return full, sliding, by_window

    def kv_heads_per_gpu(self, tp: int) -> int:
        return self.kv_heads if tp <= 1 else (max(1, self.kv_heads // tp) if self.kv_heads >= tp else 1)
