"""Shared fixtures of the ``envdoctor fit`` tests: real config.json files (tests/data/fit/configs, each with
its source in configs.sources.json) and synthetic safetensors files holding only their header (the 8-byte
length and the JSON; envdoctor never reads past it), laid out as Hugging Face writes them."""

from __future__ import annotations

import json
import os
import struct
from typing import Any, Dict, Iterable, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = os.path.join(HERE, "data", "fit", "configs")
DTYPE_BYTES = {"BF16": 2, "F16": 2, "F32": 4, "I32": 4, "U8": 1, "I8": 1, "F8_E4M3": 1, "I64": 8}


def config(name: str) -> Dict[str, Any]:
    path = os.path.join(CONFIGS, name if name.endswith(".json") else name + ".json")
    if not os.path.exists(path):
        path = os.path.join(CONFIGS, name, "config.json")
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def header_bytes(tensors: Iterable[Tuple[str, str, List[int]]], metadata: Optional[Dict[str, str]] = None) -> bytes:
    """The 8-byte length and the JSON header of a safetensors file holding ``tensors`` (name, dtype, shape)."""
    doc: Dict[str, Any] = {"__metadata__": metadata or {"format": "pt"}}
    offset = 0
    for name, dtype, shape in tensors:
        n = 1
        for d in shape:
            n *= d
        size = n * DTYPE_BYTES[dtype]
        doc[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(doc).encode("utf-8")
    return struct.pack("<Q", len(raw)) + raw


def llama_tensors(cfg: Dict[str, Any], dtype: str = "BF16", layers: Optional[int] = None
                  ) -> List[Tuple[str, str, List[int]]]:
    """The tensors a Llama-layout checkpoint of ``cfg`` holds (names and shapes as transformers saves them)."""
    h, i, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    nh, nkv = cfg["num_attention_heads"], cfg.get("num_key_value_heads", cfg["num_attention_heads"])
    hd = cfg.get("head_dim") or h // nh
    out = [("model.embed_tokens.weight", dtype, [v, h])]
    for n in range(layers if layers is not None else cfg["num_hidden_layers"]):
        p = "model.layers.%d." % n
        out += [(p + "self_attn.q_proj.weight", dtype, [nh * hd, h]),
                (p + "self_attn.k_proj.weight", dtype, [nkv * hd, h]),
                (p + "self_attn.v_proj.weight", dtype, [nkv * hd, h]),
                (p + "self_attn.o_proj.weight", dtype, [h, nh * hd]),
                (p + "mlp.gate_proj.weight", dtype, [i, h]),
                (p + "mlp.up_proj.weight", dtype, [i, h]),
                (p + "mlp.down_proj.weight", dtype, [h, i]),
                (p + "input_layernorm.weight", dtype, [h]),
                (p + "post_attention_layernorm.weight", dtype, [h])]
    out.append(("model.norm.weight", dtype, [h]))
    if not cfg.get("tie_word_embeddings"):
        out.append(("lm_head.weight", dtype, [v, h]))
    return out


def write_model(folder: str, cfg: Dict[str, Any], shards: List[List[Tuple[str, str, List[int]]]]) -> str:
    """A model directory: config.json and header-only shards (with an index when there are several)."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as fh:
        json.dump(cfg, fh)
    if len(shards) == 1:
        with open(os.path.join(folder, "model.safetensors"), "wb") as fh:
            fh.write(header_bytes(shards[0]))
        return folder
    weight_map = {}
    for k, tensors in enumerate(shards):
        name = "model-%05d-of-%05d.safetensors" % (k + 1, len(shards))
        with open(os.path.join(folder, name), "wb") as fh:
            fh.write(header_bytes(tensors))
        for t in tensors:
            weight_map[t[0]] = name
    with open(os.path.join(folder, "model.safetensors.index.json"), "w", encoding="utf-8") as fh:
        json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, fh)
    return folder


def tiny_llama() -> Dict[str, Any]:
    """A small Llama-shaped config (the shapes of Llama 3.2 1B's config.json, with 2 layers)."""
    cfg = config("meta-llama--Llama-3.2-1B-Instruct")
    cfg = dict(cfg, num_hidden_layers=2)
    return cfg
