"""JSON text that is safe to show: what ``json.dumps`` writes, with the characters that could steer a
terminal or an editor written as escapes.  The one home of that rule, for every JSON envdoctor writes
(reports, snapshots, fleet documents)."""

from __future__ import annotations

import json
from typing import Any, Iterator, List

from . import lazyre

# json.dumps escapes C0 controls itself; these it would write raw with ensure_ascii=False (C1
# controls, 0x9b being an 8-bit CSI, and the bidirectional overrides), so `cat report.json` on a
# terminal could still be steered by a hostile machine.
#: C1 controls, bidi overrides and line separators (which reorder or break what a terminal or editor
#: shows) and lone surrogates (undecodable bytes of file names and the environment, kept by Python's
#: surrogateescape: not encodable as UTF-8): written as JSON escapes, which decode back to the same text.
_RAW = lazyre.compile("[\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def escape_raw(text: str) -> str:
    """JSON text with the characters of :data:`_RAW` written as ``\\uXXXX`` escapes (valid only inside
    JSON strings, where json.dumps puts every such character)."""
    return _RAW.sub(lambda m: "\\u%04x" % ord(m.group()), text)


def reference_dumps(doc: Any) -> str:
    """What every JSON output is, by definition: the json module's text, indented by two (UTF-8 kept), the
    characters of :data:`_RAW` escaped, a final newline. :func:`dumps` writes the same text, faster."""
    text = json.dumps(doc, indent=2, sort_keys=False, ensure_ascii=False)
    return escape_raw(text) + "\n"


def dumps(doc: Any) -> str:
    """``doc`` as indented JSON text (UTF-8 kept, see :func:`escape_raw`), with a final newline:
    :func:`reference_dumps`' text, written by :func:`chunks`."""
    return "".join(chunks(doc))


#: How deep :func:`chunks` can hand out a piece: a container nested deeper is written whole into the piece of the
#: one holding it (a report's fact, a fleet's node row), by plain calls, which cost less than a generator each.
CHUNK_DEPTH = 4


def chunks(doc: Any) -> Iterator[str]:
    """``doc`` as :func:`reference_dumps` writes it, character for character (its final newline included),
    in pieces of a few thousand items each, so that a fleet's document is never one string (10,000 nodes:
    14 MB of JSON).  Faster too (a 64-GPU report: about three times): the json module indents in Python, through
    a generator per container and item, and a fleet document holds lists of thousands of node names, written
    here in one join each. Containers down to :data:`CHUNK_DEPTH` levels are walked by generators (a piece can
    end after any of them), the ones below by plain calls."""
    from json.encoder import encode_basestring

    out: List[str] = []
    put = out.append

    def scalar(o: Any) -> str:
        """What json.dumps writes for ``o`` (not a dict or list); TypeError as it raises."""
        if isinstance(o, str):
            return encode_basestring(o)
        if o is None:
            return "null"
        if o is True:
            return "true"
        if o is False:
            return "false"
        if isinstance(o, int):
            return int.__repr__(o)
        if isinstance(o, float):
            if o != o:
                return "NaN"
            if o in (float("inf"), float("-inf")):
                return "Infinity" if o > 0 else "-Infinity"
            return float.__repr__(o)
        raise TypeError("Object of type %s is not JSON serializable" % type(o).__name__)

    def key(k: Any) -> str:
        if isinstance(k, str):
            return encode_basestring(k)
        if isinstance(k, (bool, int, float)) or k is None:
            text = scalar(k)
            return encode_basestring(text)
        raise TypeError("keys must be str, int, float, bool or None, not %s" % type(k).__name__)

    def write(o: Any, indent: str) -> None:
        """A container below :data:`CHUNK_DEPTH`, whole, into ``out`` (the commonest scalars written in line)."""
        if type(o) is dict or (type(o) is not list and isinstance(o, dict)):
            if not o:
                put("{}")
                return
            inner = indent + "  "
            sep = "{" + inner
            for k, v in o.items():
                tv = type(v)
                head = sep + (encode_basestring(k) if type(k) is str else key(k)) + ": "
                sep = "," + inner
                if tv is str:
                    put(head + encode_basestring(v))
                elif tv is int:
                    put(head + int.__repr__(v))
                elif v is None:
                    put(head + "null")
                elif tv is dict or tv is list or isinstance(v, (dict, list, tuple)):
                    put(head)
                    write(v, inner)
                else:
                    put(head + scalar(v))
            put(indent + "}")
        elif not o:
            put("[]")
        else:
            inner = indent + "  "
            if all(type(x) is str for x in o):
                put("[" + inner + ("," + inner).join(map(encode_basestring, o)) + indent + "]")
                return
            sep = "[" + inner
            for v in o:
                tv = type(v)
                if tv is dict or tv is list or isinstance(v, (dict, list, tuple)):
                    put(sep)
                    write(v, inner)
                elif tv is int:
                    put(sep + int.__repr__(v))
                else:
                    put(sep + scalar(v))
                sep = "," + inner
            put(indent + "]")

    def emit(o: Any, indent: str, depth: int) -> Iterator[str]:
        t = type(o)
        if t is str:
            put(encode_basestring(o))
        elif t is dict or (t is not list and isinstance(o, dict)) or t is list or isinstance(o, (list, tuple)):
            if depth >= CHUNK_DEPTH:
                write(o, indent)
            elif t is dict or (t is not list and isinstance(o, dict)):
                if not o:
                    put("{}")
                    return
                inner = indent + "  "
                sep = "{" + inner
                for k, v in o.items():
                    put(sep + (encode_basestring(k) if type(k) is str else key(k)) + ": ")
                    sep = "," + inner
                    tv = type(v)
                    if tv is str:
                        put(encode_basestring(v))
                    elif tv is dict or tv is list or isinstance(v, (dict, list, tuple)):
                        yield from emit(v, inner, depth + 1)
                    else:
                        put(scalar(v))
                put(indent + "}")
            elif not o:
                put("[]")
                return
            else:
                inner = indent + "  "
                if all(type(x) is str for x in o):
                    put("[" + inner + ("," + inner).join(map(encode_basestring, o)) + indent + "]")
                else:
                    sep = "[" + inner
                    for v in o:
                        put(sep)
                        sep = "," + inner
                        yield from emit(v, inner, depth + 1)
                    put(indent + "]")
        else:
            put(scalar(o))
        if len(out) > 4096:
            yield flush()

    def flush() -> str:
        text = "".join(out)
        out.clear()
        return text if text.isascii() and "\x7f" not in text else escape_raw(text)

    for chunk in emit(doc, "\n", 0):
        if chunk:
            yield chunk
    put("\n")
    yield flush()
