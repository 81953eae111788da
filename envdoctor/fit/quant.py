"""Quantization: what a checkpoint's ``quantization_config`` (or ``--quant``) does to the bytes of its
linear layers.

Storage per format (bytes for an ``out`` x ``inn`` weight, ``n = out * inn``), as the loaders lay it out:

* FP8 (``quant_method: fp8``): ``n`` bytes, plus one float32 scale per ``weight_block_size`` block
  (``ceil(out/bn) * ceil(inn/bk) * 4``, DeepSeek V3 / Qwen3 FP8) or one per tensor (vLLM
  ``vllm/model_executor/layers/quantization/fp8.py``, ``Fp8LinearMethod.create_weights``);
* AWQ / GPTQ (``bits`` b, ``group_size`` g): ``n * b / 8`` packed, plus per group and output column an
  fp16 scale and a packed b-bit zero point; GPTQ adds an int32 ``g_idx`` per input row
  (AutoAWQ's ``WQLinear_GEMM``, AutoGPTQ's ``QuantLinear``);
* bitsandbytes 4-bit (NF4/FP4): ``n / 2`` plus an absmax per 64 values (1 byte with double quantization,
  which also stores a float32 per 256 absmax values; 4 bytes without) (QLoRA paper, section 3;
  ``bitsandbytes.functional.quantize_4bit``); 8-bit: ``n`` plus a float32 per output row;
* NVFP4 (ModelOpt): ``n / 2`` plus an FP8 scale per 16 values; MXFP4 (gpt-oss): ``n / 2`` plus an
  E8M0 scale per 32 values (OCP Microscaling spec v1.0);
* compressed-tensors: its ``config_groups`` weights' ``num_bits`` and ``strategy`` (tensor, channel, group,
  block) the same way.

Embeddings, the LM head, norms and MoE routers stay in the model's dtype (and whatever
``modules_to_not_convert`` / ``ignore`` lists).
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Tuple

#: ``--quant`` choices.
CHOICES = ("auto", "none", "fp8", "int8", "awq", "gptq", "bnb4", "bnb8", "nvfp4", "mxfp4")
#: Formats that need a checkpoint quantized ahead of time (an engine cannot produce them while loading).
PREQUANTIZED_ONLY = ("awq", "gptq", "nvfp4", "mxfp4")


class QuantError(Exception):
    """An impossible quantization request (the message says why)."""


class Quant:
    """How the linear layers are stored. ``precision`` is what the GPU must run: ``fp8``, ``fp4``, ``int4``,
    ``int8`` or None (the model's own dtype)."""

    def __init__(self, method: str = "none", bits: float = 16, group: Optional[int] = None,
                 block: Optional[Tuple[int, int]] = None, strategy: str = "", gptq: bool = False,
                 double_quant: bool = True, symmetric: bool = True, label: str = "", from_checkpoint: bool = False,
                 experts_only: bool = False, attention_excluded: bool = False, precision: Optional[str] = None,
                 engine_name: str = "") -> None:
        self.method = method
        self.bits = bits
        self.group = group
        self.block = block
        self.strategy = strategy
        self.gptq = gptq
        self.double_quant = double_quant
        self.symmetric = symmetric
        self.label = label or method
        self.from_checkpoint = from_checkpoint
        self.experts_only = experts_only
        self.attention_excluded = attention_excluded
        self.precision = precision
        self.engine_name = engine_name or method

    @property
    def quantized(self) -> bool:
        return self.method != "none"

    def applies_to(self, component: str) -> bool:
        if not self.quantized:
            return False
        if self.experts_only:
            return component == "experts"
        if self.attention_excluded and component == "attention":
            return False
        return component in ("attention", "mlp", "experts", "shared experts")

    def linear_bytes(self, out: int, inn: int, dtype_bytes: float) -> float:
        """Bytes of one ``out`` x ``inn`` linear weight stored this way."""
        n = out * inn
        m = self.method
        if m == "none":
            return n * dtype_bytes
        if m in ("fp8", "int8", "modelopt-fp8"):
            if self.block:
                bn, bk = self.block
                return n + math.ceil(out / bn) * math.ceil(inn / bk) * 4
            if self.strategy == "channel":
                return n + out * 4
            return n + 8  # a weight scale and (static activations) an input scale
        if m in ("awq", "gptq"):
            g = self.group if self.group and self.group > 0 else inn
            groups = math.ceil(inn / g)
            packed = n * self.bits / 8
            scales = groups * out * 2
            zeros = groups * out * self.bits / 8
            gidx = inn * 4 if self.gptq else 0
            return packed + scales + zeros + gidx
        if m == "bnb4":
            absmax = n / 64 + n / (64 * 256) * 4 if self.double_quant else n / 64 * 4
            return n / 2 + absmax
        if m == "bnb8":
            return n + out * 4
        if m == "nvfp4":
            return n / 2 + n / 16 + 8
        if m == "mxfp4":
            return n / 2 + n / 32
        if m == "compressed-tensors":
            data = n * self.bits / 8
            if self.strategy == "group" and self.group:
                groups = math.ceil(inn / self.group)
                return data + groups * out * 2 + (0 if self.symmetric else groups * out * self.bits / 8)
            if self.strategy == "block" and self.block:
                bn, bk = self.block
                return data + math.ceil(out / bn) * math.ceil(inn / bk) * 4
            if self.strategy == "channel":
                return data + out * 4
            return data + 8
        return n * dtype_bytes

    def describe_formula(self) -> str:
        m = self.method
        if m in ("fp8", "int8", "modelopt-fp8"):
            if self.block:
                return "1 byte per weight + a float32 scale per %dx%d block" % self.block
            return "1 byte per weight + per-%s float32 scales" % ("channel" if self.strategy == "channel" else
                                                                 "tensor")
        if m in ("awq", "gptq"):
            return "%g bits per weight + an fp16 scale and a %g-bit zero point per group of %s%s" % (
                self.bits, self.bits, self.group or "a whole row", " + an int32 g_idx per input row" if self.gptq
                else "")
        if m == "bnb4":
            return "4 bits per weight + an absmax per 64 (%s)" % ("double-quantized" if self.double_quant else
                                                                  "float32")
        if m == "bnb8":
            return "1 byte per weight + a float32 scale per row"
        if m == "nvfp4":
            return "4 bits per weight + an FP8 scale per 16"
        if m == "mxfp4":
            return "4 bits per weight + an E8M0 scale per 32"
        if m == "compressed-tensors":
            return "%g bits per weight, %s scales" % (self.bits, self.strategy or "tensor")
        return "the model's dtype"


def _excluded_attention(names: Any) -> bool:
    if not isinstance(names, list):
        return False
    return any(isinstance(n, str) and (n.endswith("self_attn") or n.endswith("self_attn.*") or n == "re:.*self_attn.*")
               for n in names)


def from_config(config: Dict[str, Any], quant_file: Optional[Dict[str, Any]] = None) -> Optional[Quant]:
    """The checkpoint's own quantization (``quantization_config`` in config.json, or ModelOpt's
    ``hf_quant_config.json``), or None when it has none. :class:`QuantError` for one envdoctor cannot size."""
    q = config.get("quantization_config")
    if not isinstance(q, dict) and isinstance(config.get("text_config"), dict):
        q = config["text_config"].get("quantization_config")
    if not isinstance(q, dict) and isinstance(quant_file, dict) and isinstance(quant_file.get("quantization"), dict):
        q = dict(quant_file["quantization"], quant_method="modelopt")
    if not isinstance(q, dict):
        return None
    method = str(q.get("quant_method") or "").lower()
    excluded = _excluded_attention(q.get("modules_to_not_convert") or q.get("ignore") or q.get("ignored_layers")
                                   or q.get("exclude_modules"))
    if method == "fp8":
        block = q.get("weight_block_size")
        blk = (int(block[0]), int(block[1])) if isinstance(block, list) and len(block) == 2 and \
            all(isinstance(b, int) and b > 0 for b in block) else None
        label = "FP8 (%s)" % ("%dx%d block scales" % blk if blk else "per-tensor scales")
        return Quant("fp8", 8, block=blk, label=label, from_checkpoint=True, attention_excluded=excluded,
                     precision="fp8", engine_name="fp8")
    if method in ("awq", "gptq", "awq_marlin", "gptq_marlin"):
        bits = q.get("bits", q.get("w_bit", 4))
        group = q.get("group_size", q.get("q_group_size", 128))
        if not isinstance(bits, int) or bits not in (2, 3, 4, 8):
            raise QuantError("quantization_config bits %r is not a bit width envdoctor can size" % (bits,))
        g = group if isinstance(group, int) and group > 0 else None
        gptq = method.startswith("gptq")
        name = "GPTQ" if gptq else "AWQ"
        return Quant(method.split("_")[0], bits, group=g, gptq=gptq, from_checkpoint=True,
                     label="%s %d-bit, group %s" % (name, bits, g or "per-channel"),
                     attention_excluded=excluded, precision="int4" if bits <= 4 else "int8",
                     engine_name=method.split("_")[0])
    if method == "bitsandbytes":
        if q.get("load_in_8bit"):
            return Quant("bnb8", 8, from_checkpoint=True, label="bitsandbytes 8-bit", precision="int8",
                         engine_name="bitsandbytes")
        return Quant("bnb4", 4, double_quant=bool(q.get("bnb_4bit_use_double_quant", False)), from_checkpoint=True,
                     label="bitsandbytes 4-bit (%s)" % q.get("bnb_4bit_quant_type", "nf4"), precision="int4",
                     engine_name="bitsandbytes")
    if method == "mxfp4":
        return Quant("mxfp4", 4, from_checkpoint=True, label="MXFP4 (MoE experts)", experts_only=True,
                     precision="fp4", engine_name="mxfp4")
    if method == "modelopt" or q.get("quant_algo"):
        algo = str(q.get("quant_algo") or "").upper()
        if algo == "FP8":
            return Quant("modelopt-fp8", 8, from_checkpoint=True, label="FP8 (ModelOpt, per-tensor scales)",
                         precision="fp8", engine_name="modelopt")
        if algo in ("NVFP4", "FP4"):
            return Quant("nvfp4", 4, from_checkpoint=True, label="NVFP4 (ModelOpt)", precision="fp4",
                         engine_name="modelopt_fp4")
        raise QuantError("ModelOpt quant_algo %r is not one envdoctor can size" % algo)
    if method == "compressed-tensors":
        groups = q.get("config_groups")
        weights: Dict[str, Any] = {}
        if isinstance(groups, dict):
            for g in groups.values():
                if isinstance(g, dict) and isinstance(g.get("weights"), dict):
                    weights = g["weights"]
                    break
        bits = weights.get("num_bits", 8)
        if not isinstance(bits, int) or not 1 <= bits <= 16:
            raise QuantError("compressed-tensors num_bits %r is not a bit width" % (bits,))
        kind = str(weights.get("type") or "int")
        strategy = str(weights.get("strategy") or "tensor")
        block = weights.get("block_structure")
        blk = (int(block[0]), int(block[1])) if isinstance(block, list) and len(block) == 2 else None
        fmt = str(q.get("format") or "")
        if fmt == "nvfp4-pack-quantized" or (kind == "float" and bits == 4):
            return Quant("nvfp4", 4, from_checkpoint=True, label="NVFP4 (compressed-tensors)", precision="fp4",
                         engine_name="compressed-tensors")
        precision = ("fp8" if kind == "float" else "int8") if bits == 8 else ("int4" if bits <= 4 else None)
        return Quant("compressed-tensors", bits, group=weights.get("group_size") if isinstance(
            weights.get("group_size"), int) else None, block=blk, strategy=strategy,
            symmetric=bool(weights.get("symmetric", True)), from_checkpoint=True,
            label="compressed-tensors %s%d, %s scales" % ("FP" if kind == "float" else "INT", bits, strategy),
            attention_excluded=_excluded_attention(q.get("ignore")), precision=precision,
            engine_name="compressed-tensors")
    raise QuantError("quantization method %r is not one envdoctor can size" % method)


def from_option(choice: str) -> Quant:
    """What ``--quant CHOICE`` asks of an unquantized checkpoint."""
    if choice == "none":
        return Quant()
    if choice == "fp8":
        return Quant("fp8", 8, label="FP8, quantized while loading (per-tensor scales)", precision="fp8",
                     engine_name="fp8")
    if choice == "int8":
        return Quant("int8", 8, strategy="channel", label="INT8, per-channel scales", precision="int8",
                     engine_name="int8")
    if choice == "bnb4":
        return Quant("bnb4", 4, double_quant=True, label="bitsandbytes 4-bit NF4, quantized while loading",
                     precision="int4", engine_name="bitsandbytes")
    if choice == "bnb8":
        return Quant("bnb8", 8, label="bitsandbytes 8-bit, quantized while loading", precision="int8",
                     engine_name="bitsandbytes")
    if choice in PREQUANTIZED_ONLY:
        raise QuantError("--quant %s needs a checkpoint quantized that way ahead of time (its quantization_config "
                         "says so); this one is not quantized. Use a %s checkpoint of the model, or --quant fp8 / "
                         "bnb4, which are applied while loading" % (choice, choice.upper()))
    raise QuantError("unknown --quant %r (one of %s)" % (choice, ", ".join(CHOICES)))


def resolve(config: Dict[str, Any], quant_file: Optional[Dict[str, Any]], choice: str) -> Tuple[Quant, List[str]]:
    """The quantization that applies: the checkpoint's, or ``--quant``'s on an unquantized checkpoint."""
    notes: List[str] = []
    ckpt = from_config(config, quant_file)
    if ckpt is not None:
        if choice not in ("auto", ckpt.method) and not (choice == "fp8" and ckpt.method == "modelopt-fp8"):
            raise QuantError("the checkpoint is already quantized (%s); --quant %s cannot change that (vLLM refuses "
                             "a --quantization that differs from the checkpoint's)" % (ckpt.label, choice))
        return ckpt, notes
    if choice in ("auto", "none"):
        return Quant(), notes
    return from_option(choice), notes
