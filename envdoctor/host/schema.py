"""Check a JSON document against envdoctor's own JSON Schemas, without the jsonschema package.

The snapshot format is public and documented by ``envdoctor/schemas/snapshot.schema.json``; a
snapshot is accepted for replay exactly when it is valid against that file.  Rather than keep a
second, hand-written copy of the rules (which drifted from the schema once, letting
``{"text": 5, "error": "EIO"}`` through to crash a probe), the reader interprets the schema
itself.  It understands the subset the schemas use:

``type`` (``integer`` excludes booleans, as in JSON Schema), ``properties``,
``additionalProperties``, ``required``, ``items``, ``minItems``, ``minimum``, ``anyOf``, and local
``$ref`` to ``#/$defs/...``; ``$schema``, ``$id``, ``title`` and ``description`` are annotations.
Any other keyword raises :class:`SchemaUnsupported`, so an edit of the snapshot schema cannot
silently outrun the interpreter (the tests load it through it, and compare its verdicts with the
jsonschema package's on hundreds of mutated snapshots of real machines).

The walk is iterative, so a deeply nested document cannot exhaust the interpreter's stack.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Tuple

SCHEMA_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "schemas")

_ANNOTATIONS = frozenset(("$schema", "$id", "title", "description", "$defs"))
_KEYWORDS = frozenset(("type", "properties", "additionalProperties", "required", "items", "minItems", "minimum",
                       "anyOf", "$ref")) | _ANNOTATIONS
_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


class SchemaUnsupported(Exception):
    """The schema uses a keyword this interpreter does not implement (a bug in envdoctor)."""


def load_schema(name: str) -> Dict[str, Any]:
    """One of envdoctor's shipped schemas (the reader uses ``snapshot``), checked for supported keywords."""
    with open(os.path.join(SCHEMA_DIR, name + ".schema.json"), encoding="utf-8") as fh:
        schema = json.load(fh)
    check_keywords(schema)
    return schema


def check_keywords(schema: Any) -> None:
    """Raise :class:`SchemaUnsupported` if ``schema`` uses a keyword :func:`first_error` does not implement."""
    todo = [schema]
    while todo:
        node = todo.pop()
        if not isinstance(node, dict):
            continue
        unknown = set(node) - _KEYWORDS
        if unknown:
            raise SchemaUnsupported("schema keyword(s) %s not understood by envdoctor.host.schema" %
                                    ", ".join(sorted(unknown)))
        for key in ("properties", "$defs"):
            todo.extend(node.get(key, {}).values())
        for key in ("additionalProperties", "items"):
            if isinstance(node.get(key), dict):
                todo.append(node[key])
        todo.extend(node.get("anyOf", []))


def _where(path: Tuple[Any, ...]) -> str:
    """``files["/etc/os-release"].text``, ``commands[3].duration``: a path a user can find in the file."""
    out = ""
    for p in path:
        if isinstance(p, int):
            out += "[%d]" % p
        elif p.isidentifier():
            out += ("." if out else "") + p
        else:
            out += "[%r]" % (p,)
    return out or "the document"


def first_error(instance: Any, schema: Dict[str, Any], root: Optional[Dict[str, Any]] = None) -> Optional[str]:
    """The first place where ``instance`` breaks ``schema``, as a readable sentence; None when valid."""
    root = schema if root is None else root
    # Depth-first over (value, schema node, path); anyOf branches are tried with a nested call,
    # whose depth is bounded by the schema's nesting, not the document's.
    todo: List[Tuple[Any, Dict[str, Any], Tuple[Any, ...]]] = [(instance, schema, ())]
    while todo:
        value, node, path = todo.pop()
        ref = node.get("$ref")
        if ref is not None:
            node = _resolve(root, ref)
        types = node.get("type")
        if types is not None:
            names = [types] if isinstance(types, str) else list(types)
            if not any(_TYPES[t](value) for t in names):
                return "%s must be %s" % (_where(path), " or ".join(names))
        if "minimum" in node and isinstance(value, (int, float)) and not isinstance(value, bool) \
                and not value >= node["minimum"]:  # NaN fails too
            return "%s must be at least %s" % (_where(path), node["minimum"])
        if "anyOf" in node and not any(first_error(value, branch, root) is None for branch in node["anyOf"]):
            options = [", ".join(b.get("required", [])) or "?" for b in node["anyOf"]]
            return "%s needs one of: %s" % (_where(path), "; ".join(options))
        if isinstance(value, dict):
            for key in node.get("required", []):
                if key not in value:
                    return "%s needs %r" % (_where(path), key)
            props = node.get("properties", {})
            extra = node.get("additionalProperties", True)
            simple = _simple_type(extra) if not props else None
            if simple is not None:  # {name: string...} (the environment): one pass, nothing queued per value
                bad = next((k for k, v in value.items() if not _TYPES[simple](v)), None)
                if bad is not None:
                    return "%s must be %s" % (_where(path + (bad,)), simple)
                continue
            for key, sub in value.items():
                if key in props:
                    todo.append((sub, props[key], path + (key,)))
                elif extra is False:
                    return "%s has an unexpected field %r" % (_where(path), key)
                elif isinstance(extra, dict):
                    todo.append((sub, extra, path + (key,)))
        elif isinstance(value, list):
            if len(value) < node.get("minItems", 0):
                return "%s needs at least %d item(s)" % (_where(path), node["minItems"])
            items = node.get("items")
            simple = _simple_type(items)
            if simple is not None:  # a list of strings (a directory listing): one pass, nothing queued
                check = _TYPES[simple]
                bad_at = next((i for i, v in enumerate(value) if not check(v)), None)
                if bad_at is not None:
                    return "%s must be %s" % (_where(path + (bad_at,)), simple)
            elif isinstance(items, dict):
                todo.extend((v, items, path + (i,)) for i, v in reversed(list(enumerate(value))))
    return None


def _simple_type(node: Any) -> Optional[str]:
    """``"string"`` for a schema that is exactly ``{"type": "string"}`` (plus annotations), else None: such
    values are checked in a single pass (a crafted snapshot of millions of them must not queue millions of
    work items)."""
    if not isinstance(node, dict) or not isinstance(node.get("type"), str) or node["type"] not in _TYPES:
        return None
    if any(k not in _ANNOTATIONS and k != "type" for k in node):
        return None
    return str(node["type"])


def _resolve(root: Dict[str, Any], ref: str) -> Dict[str, Any]:
    if not ref.startswith("#/$defs/"):
        raise SchemaUnsupported("only local #/$defs/ references are understood, not %r" % ref)
    return root["$defs"][ref[len("#/$defs/"):]]
