"""Reading safetensors headers without reading (or executing) the weights.

A ``.safetensors`` file starts with 8 bytes, a little-endian unsigned 64-bit integer N, then N bytes
of JSON: ``{"__metadata__": {...}, "NAME": {"dtype": "BF16", "shape": [4096, 4096],
"data_offsets": [BEGIN, END]}, ...}``; the tensor bytes follow. A sharded checkpoint adds
``model.safetensors.index.json`` (``{"weight_map": {"NAME": "model-00001-of-00004.safetensors"}}``).
Format: https://github.com/huggingface/safetensors (README, "Format").

Only the header is ever read: 8 bytes, then the JSON. A header larger than the format's own limit
(100 MB, ``MAX_HEADER_SIZE`` in the safetensors crate), not JSON, or naming a dtype or shape that
cannot be, is refused with the reason (:class:`HeaderError`).
"""

from __future__ import annotations

import json
import struct
from typing import Any, Dict, List, NamedTuple, Optional

#: The largest header the safetensors library itself accepts (bytes).
MAX_HEADER_SIZE = 100_000_000

#: Bits per element of every dtype the format names (safetensors ``Dtype``; F4/F6/E8M0 are the
#: OCP microscaling types added in safetensors 0.6).
DTYPE_BITS: Dict[str, int] = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "E8M0": 8,
    "I16": 16, "U16": 16, "F16": 16, "BF16": 16,
    "I32": 32, "U32": 32, "F32": 32,
    "I64": 64, "U64": 64, "F64": 64,
    "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
}
#: The floating dtypes a model is served in (cast to the serving dtype when it is not quantized).
FLOAT_DTYPES = frozenset(("F16", "BF16", "F32", "F64"))


class HeaderError(Exception):
    """A safetensors header that cannot be used; the message says why."""


class Tensor(NamedTuple):
    name: str
    dtype: str
    shape: List[int]

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return (self.numel * DTYPE_BITS[self.dtype] + 7) // 8


def header_length(first8: bytes) -> int:
    """N from the first 8 bytes of a file, checked against the format's limit."""
    if len(first8) < 8:
        raise HeaderError("shorter than the 8-byte length prefix (%d bytes)" % len(first8))
    (n,) = struct.unpack("<Q", first8[:8])
    if n < 2:
        raise HeaderError("header length %d is too small to hold any JSON" % n)
    if n > MAX_HEADER_SIZE:
        raise HeaderError("header length %d bytes is over the format's limit of %d (not a safetensors file?)"
                          % (n, MAX_HEADER_SIZE))
    return n


def parse_header(raw: bytes) -> List[Tensor]:
    """The tensors a header's JSON describes (``__metadata__`` skipped)."""
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise HeaderError("header is not JSON (%s)" % str(exc)[:80]) from None
    if not isinstance(doc, dict):
        raise HeaderError("header is not a JSON object")
    out: List[Tensor] = []
    for name, info in doc.items():
        if name == "__metadata__":
            continue
        if not isinstance(info, dict):
            raise HeaderError("tensor %r has no description" % str(name)[:80])
        dtype = info.get("dtype")
        shape = info.get("shape")
        if not isinstance(dtype, str) or dtype not in DTYPE_BITS:
            raise HeaderError("tensor %r has an unknown dtype %r" % (str(name)[:80], str(dtype)[:20]))
        if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 2 ** 48
                                                  for d in shape) or len(shape) > 8:
            raise HeaderError("tensor %r has an impossible shape" % str(name)[:80])
        t = Tensor(str(name), dtype, list(shape))
        offsets = info.get("data_offsets")
        if isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) for o in offsets):
            if offsets[1] - offsets[0] != t.nbytes:
                raise HeaderError("tensor %r: its offsets span %d bytes, its shape and dtype %d"
                                  % (str(name)[:80], offsets[1] - offsets[0], t.nbytes))
        out.append(t)
    return out


def read_file_header(path: str) -> List[Tensor]:
    """The tensors of a local ``.safetensors`` file, reading only its header."""
    with open(path, "rb") as fh:
        n = header_length(fh.read(8))
        raw = fh.read(n)
    if len(raw) != n:
        raise HeaderError("file ends inside its header (%d of %d bytes)" % (len(raw), n))
    return parse_header(raw)


def shards_of_index(doc: Any) -> List[str]:
    """The shard file names a ``model.safetensors.index.json`` names, in order, each once."""
    if not isinstance(doc, dict) or not isinstance(doc.get("weight_map"), dict):
        raise HeaderError("the index has no weight_map")
    seen: Dict[str, None] = {}
    for name in doc["weight_map"].values():
        if not isinstance(name, str) or "/" in name or "\\" in name or name.startswith(".") \
                or not name.endswith(".safetensors"):
            raise HeaderError("the index names an unusable shard file %r" % str(name)[:80])
        seen.setdefault(name, None)
    return list(seen)


def total_bytes(tensors: List[Tensor]) -> int:
    return sum(t.nbytes for t in tensors)


def dominant_float_dtype(tensors: List[Tensor]) -> Optional[str]:
    """The floating dtype holding most of the bytes (the checkpoint's storage dtype), or None."""
    sizes: Dict[str, int] = {}
    for t in tensors:
        if t.dtype in FLOAT_DTYPES:
            sizes[t.dtype] = sizes.get(t.dtype, 0) + t.nbytes
    return max(sizes, key=lambda k: sizes[k]) if sizes else None
