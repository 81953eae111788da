"""The faster per-GPU and per-pair paths of issue 28 (round 5) give what the plain definitions give, on values a
machine or a damaged snapshot can hold: JSON text deeper than the pieces :func:`envdoctor.jsontext.chunks` hands
out, the scrubber's walk, ``Facts.named`` against ``with_prefix``, the pairs' NVLink counts against
``topology._path_label`` and NVML's failure list against the regular expression of GPU keys."""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List

from hypothesis import given, settings
from hypothesis import strategies as st

from envdoctor.facts import Fact, Facts
from envdoctor.host.privacy import Scrubber
from envdoctor.jsontext import CHUNK_DEPTH, chunks, dumps, reference_dumps
from envdoctor.probes import gpu as gpu_probe
from envdoctor.probes import topology

SCALARS = (st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.floats(allow_nan=True)
           | st.text(alphabet=st.characters(codec="utf-8"), max_size=8))
#: Values nested deeper than CHUNK_DEPTH, with tuples and dict subclasses (written as lists and objects).
DOCS = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
                    | st.dictionaries(st.text(max_size=4) | st.integers(-3, 3) | st.booleans() | st.none(), inner,
                                      max_size=4), max_leaves=40)


def _deep(doc: Any, depth: int) -> Any:
    for _ in range(depth):
        doc = {"d": [doc]}
    return doc


@settings(max_examples=300, deadline=None)
@given(DOCS, st.integers(0, CHUNK_DEPTH + 2))
def test_json_text_at_every_depth_is_the_json_modules(doc: Any, depth: int) -> None:
    doc = _deep(doc, depth)
    assert dumps(doc) == reference_dumps(doc)
    assert "".join(chunks(doc)) == dumps(doc)


class _Odd(int):
    pass


def _plain_scrub(scrubber: Scrubber, obj: Any) -> Any:
    """The scrubber's walk as it was written before (every value looked at by isinstance)."""
    if isinstance(obj, str):
        return scrubber.text(obj)
    if isinstance(obj, dict):
        return {scrubber.text(k) if isinstance(k, str) else k: _plain_scrub(scrubber, v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain_scrub(scrubber, v) for v in obj]
    return obj


WORDS = st.sampled_from(["/home/alice/x", "alice", "node7.example.org", "https://u:p@h/x", "GPU-1234abcd-1111-"
                         "2222-3333-444455556666", "plain", "", "/home/alice"])


@settings(max_examples=200, deadline=None)
@given(st.recursive(SCALARS | WORDS | st.integers().map(_Odd), lambda inner: st.lists(inner, max_size=4)
                    | st.tuples(inner, inner) | st.dictionaries(WORDS | st.integers(0, 3), inner, max_size=3),
                    max_leaves=30))
def test_the_scrubbers_walk_is_the_plain_one(value: Any) -> None:
    make = lambda: Scrubber(home="/home/alice", user="alice", hostname="node7.example.org",  # noqa: E731
                            redact_ids=True)
    got = make()(value)
    want = _plain_scrub(make(), value)
    assert json.dumps(got, default=repr) == json.dumps(want, default=repr)
    assert type(got) is type(want)


KEYS = st.sampled_from(["gpu.0.name", "gpu.1.name", "gpu.0.uuid", "gpu.count", "gpu.name", "gpu.2.mig.name",
                        "gpu.x.name", "driver.name", "gpu.12.pci_bus_id", "gpu.", "gpu.3.", "gpuname"])


@given(st.lists(KEYS, max_size=12), st.sampled_from(["gpu.", "gpu.1", "driver."]),
       st.sampled_from(["name", "uuid", "pci_bus_id", "", "count"]))
def test_named_is_with_prefix_filtered_by_the_last_part(keys: List[str], prefix: str, name: str) -> None:
    facts = Facts(Fact(k, n) for n, k in enumerate(keys))
    want = [f for f in facts.with_prefix(prefix) if f.key.rpartition(".")[2] == name]
    assert facts.named(prefix, name) == want
    if name:
        assert want == [f for f in facts.with_prefix(prefix) if f.key.endswith("." + name)]
    facts.add(Fact(prefix + "9." + name, "late"))  # a fact added later is seen
    assert facts.named(prefix, name)[-1].value == "late"


LINK = st.fixed_dictionaries({"link": st.integers(0, 3), "state": st.sampled_from(["active", "sleep", "inactive",
                                                                                   "unknown"]),
                              "version": st.none(), "remote": st.sampled_from([None, "0000:01:00.0", "0000:02:00.0",
                                                                              "0000:03:00.0", "0000:99:00.0"])})


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.none(), st.lists(LINK, max_size=6)), min_size=1, max_size=5),
       st.lists(st.booleans(), min_size=5, max_size=5))
def test_pairs_nvlink_counts_are_path_labels(links: List[Any], has_bus: List[bool]) -> None:
    count = len(links)
    gpus = [{"index": i, "nvlink": links[i]} for i in range(count)]
    buses = {i: "0000:%02d:00.0" % (i + 1) for i in range(count) if has_bus[i]}
    gpu_buses = set(buses.values())
    pairs = topology._pairs({}, gpus, buses, gpu_buses, count)
    for p in pairs:
        a, b = p["a"], p["b"]
        want = topology._path_label(links[a] or [], links[b] or [], buses.get(a, ""), buses.get(b, ""), gpu_buses) \
            if a in buses and b in buses else (0, "")
        assert (p.get("nvlinks", 0), p.get("nvlink_via", "")) == want


@given(st.lists(st.sampled_from(["device.0.name", "device.1.", "device.2.x\n", "device.3.\n", "device.4.a\nb",
                                 "device.\u0663.x", "device.5", "device..x", "device.6a.x", "device.7.x.y",
                                 "device.\u00b2.x", "pair.1.2", "device.8.\nx", "device_count", "device.09.x"]),
                max_size=8))
def test_nvml_failures_find_the_gpus_the_regular_expression_finds(keys: List[str]) -> None:
    data = {k: {"error": "NVML_ERROR_UNKNOWN", "code": 999} for k in keys}
    indexes, fields = gpu_probe.gpu_fields(data)
    assert indexes == {int(m.group(1)) for m in (re.match(r"^device\.(\d+)\.(.+)$", k) for k in data) if m}
    want: Dict[str, List[str]] = {}
    for k in data:
        if k.startswith("device.") and "." in k[7:]:
            number, _, field = k[7:].partition(".")
            want.setdefault(number, []).append(field)
    assert fields == want
