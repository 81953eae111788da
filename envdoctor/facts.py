"""Facts: what the probes learned, each with where it came from.

A fact is one answer ("driver.version" = "550.54.15") plus its ``source``
(``file:/sys/module/nvidia/version``, ``nvml:system.driver_version``,
``command:nvidia-smi ...``, ``env:CUDA_HOME``, ``derived``) and a status:

* ``ok``: the value is known;
* ``unknown``: it could not be learned, ``reason`` says why;
* ``not_supported``: the hardware or driver does not offer it (not an error);
* ``timed_out``: asking took too long.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple, Union

STATUSES = ("ok", "unknown", "not_supported", "timed_out")


class Fact:
    """One answer with its evidence (a plain class: cheaper to define than a dataclass, see report.py)."""

    __slots__ = ("key", "value", "source", "status", "reason", "label")

    def __init__(self, key: str, value: Any = None, source: str = "", status: str = "ok", reason: str = "",
                 label: str = "") -> None:
        self.key = key
        self.value = value
        self.source = source
        self.status = status
        self.reason = reason
        self.label = label

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Fact):
            return NotImplemented
        return all(getattr(self, a) == getattr(other, a) for a in self.__slots__)

    def __repr__(self) -> str:
        return "Fact(%r, %r, status=%r)" % (self.key, self.value, self.status)

    @property
    def known(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {"key": self.key, "value": self.value, "status": self.status, "source": self.source}
        if self.label:
            d["label"] = self.label
        if self.reason:
            d["reason"] = self.reason
        return d

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> Fact:
        return cls(key=d["key"], value=d.get("value"), source=d.get("source", ""), status=d.get("status", "ok"),
                   reason=d.get("reason", ""), label=d.get("label", ""))


def ok(key: str, value: Any, source: str, label: str = "") -> Fact:
    return Fact(key, value, source, "ok", "", label)


def unknown(key: str, reason: str, source: str = "", label: str = "") -> Fact:
    return Fact(key, None, source, "unknown", reason, label)


NOT_SUPPORTED_DEFAULT = "not supported by this GPU or driver"


def not_supported(key: str, source: str, label: str = "", reason: str = "") -> Fact:
    return Fact(key, None, source, "not_supported", reason or NOT_SUPPORTED_DEFAULT, label)


def timed_out(key: str, reason: str, source: str = "", label: str = "") -> Fact:
    return Fact(key, None, source, "timed_out", reason, label)


def _by_last_part(facts: List[Fact]) -> Dict[str, List[Fact]]:
    out: Dict[str, List[Fact]] = {}
    for f in facts:
        out.setdefault(f.key.rpartition(".")[2], []).append(f)
    return out


class Facts:
    """All facts of one run, looked up by key."""

    def __init__(self, facts: Iterable[Fact] = ()) -> None:
        self._facts: Dict[str, Fact] = {}
        #: What checks derive from the whole set (``derived``), forgotten when a fact is added.
        self._derived: Dict[str, Any] = {}
        for f in facts:
            self.add(f)

    def add(self, fact: Fact) -> None:
        self._facts[fact.key] = fact
        if self._derived:
            self._derived.clear()

    def derived(self, name: str, compute: Callable[[Facts], Any]) -> Any:
        """``compute(self)``, worked out once for these facts (several checks walking every fact for the same
        thing, such as the GPUs' indexes, pay for one walk)."""
        if name not in self._derived:
            self._derived[name] = compute(self)
        return self._derived[name]

    def get(self, key: str) -> Optional[Fact]:
        return self._facts.get(key)

    def value(self, key: str, default: Any = None) -> Any:
        f = self._facts.get(key)
        return f.value if f is not None and f.status == "ok" else default

    # Typed views: a check asks for the shape it needs and gets an empty one when the fact is
    # missing, unknown or (from a garbled snapshot) of another shape, so no check crashes on it.
    def text(self, key: str) -> Optional[str]:
        v = self.value(key)
        return v if isinstance(v, str) and v else None

    def mapping(self, key: str) -> Dict[str, Any]:
        v = self.value(key)
        return v if isinstance(v, dict) else {}

    def items(self, key: str) -> List[Any]:
        v = self.value(key)
        return v if isinstance(v, list) else []

    def count(self, key: str, most: int) -> Optional[int]:
        """A count between 0 and ``most``; None for anything else (a bool, a negative or absurd number),
        so a garbled count can never size a loop or a list."""
        v = self.value(key)
        return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= most else None

    def strings(self, key: str) -> List[str]:
        return [x for x in self.items(key) if isinstance(x, str)]

    def with_prefix(self, prefix: Union[str, Tuple[str, ...]]) -> List[Fact]:
        """The facts whose key starts with ``prefix`` (or with any of several), in the order they were found."""
        return [f for k, f in self._facts.items() if k.startswith(prefix)]

    def named(self, prefix: str, name: str) -> List[Fact]:
        """The facts whose key starts with ``prefix`` and ends with the part ``name`` (``"gpu."``, ``"name"``: every
        GPU's model, ``gpu.N.name``), in the order they were found: :meth:`with_prefix` filtered by the last part,
        from one walk of the facts per prefix (on a 64-GPU board several checks each want one field of every
        GPU's 44)."""
        by_name = self.derived("facts.named:" + prefix, lambda facts: _by_last_part(facts.with_prefix(prefix)))
        return list(by_name.get(name, ()))

    def __iter__(self) -> Iterator[Fact]:
        return iter(self._facts.values())

    def __len__(self) -> int:
        return len(self._facts)

    def __contains__(self, key: object) -> bool:
        return key in self._facts
