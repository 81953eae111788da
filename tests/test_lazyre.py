"""Regular expressions compiled on first use (``envdoctor.lazyre``): each answers as ``re.compile`` would, every
one envdoctor declares compiles (a typo would otherwise surface only on the machine whose output first reaches
it), and planning an install line imports none of what only carrying a plan out needs."""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import subprocess
import sys

import pytest

import envdoctor
from envdoctor import lazyre

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_a_lazy_pattern_answers_as_the_compiled_one():
    text = "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\nnvidia 0000:3b:00.0: BAR 1"
    for pattern, flags in ((r"Xid \(PCI:(?P<bus>[0-9a-f:.]+)\): (\d+)", 0), (r"^nvidia", re.M), (r"bar (\d)", re.I)):
        lazy, eager = lazyre.compile(pattern, flags), re.compile(pattern, flags)
        assert lazy.search(text).groups() == eager.search(text).groups()  # type: ignore[union-attr]
        assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in eager.finditer(text)]
        assert lazy.findall(text) == eager.findall(text)
        assert lazy.sub("<x>", text) == eager.sub("<x>", text)
        assert lazy.split(text) == eager.split(text)
        assert (lazy.pattern, lazy.flags, lazy.groups, lazy.groupindex) == \
               (eager.pattern, eager.flags, eager.groups, eager.groupindex)
        assert lazy.match(text) is None and eager.match(text) is None
        assert bool(lazy.fullmatch("nvidia")) == bool(eager.fullmatch("nvidia"))


def test_nothing_is_compiled_before_first_use_and_a_bad_pattern_fails_there():
    bad = lazyre.compile(r"(unclosed")  # no error yet: nothing compiled
    with pytest.raises(re.error):
        bad.search("x")
    good = lazyre.compile(r"\d+")
    assert "search" not in vars(good)
    assert good.search("a 42").group() == "42"  # type: ignore[union-attr]
    assert "search" in vars(good)  # kept: the next use is the compiled pattern's own method


def _lazy_patterns():
    found = []
    for info in pkgutil.walk_packages(envdoctor.__path__, "envdoctor."):
        if info.name.startswith(("envdoctor.recipes", "envdoctor.__main__")):
            continue
        try:
            module = importlib.import_module(info.name)
        except ModuleNotFoundError as exc:
            if (exc.name or "").split(".")[0] == "envdoctor":
                raise
            continue  # an optional extra's module (the MCP server needs the SDK, Python 3.10+): not installed here
        for name, value in vars(module).items():
            values = value.values() if isinstance(value, dict) else value if isinstance(value, tuple) else [value]
            for v in values:
                for item in (v if isinstance(v, tuple) else (v,)):
                    if isinstance(item, lazyre._Pattern):
                        found.append(("%s.%s" % (info.name, name), item))
    return found


def test_every_lazy_pattern_envdoctor_declares_compiles():
    found = _lazy_patterns()
    assert len(found) > 100  # the probes', checks' and scrubber's patterns
    for where, pattern in found:
        try:
            pattern.pattern  # noqa: B018 - the first use compiles it
        except re.error as exc:  # pragma: no cover - the failure this test is for
            pytest.fail("%s does not compile: %s" % (where, exc))


def test_planning_an_install_line_leaves_the_executors_imports_alone():
    """``diagnose`` plans the driver's install line on a machine with an NVIDIA driver: the planner, not the
    downloader's hashing and sockets, the extractor's tarfile or urllib (imported when a plan is carried out)."""
    names = ("hashlib", "socket", "tarfile", "shutil", "queue", "urllib.parse", "envdoctor.install.download",
             "envdoctor.install.extract")
    show = "print(' '.join(m for m in %r if m in sys.modules))\n" % (names,)
    code = ("import sys\n"
            "from envdoctor.checks.suggest import preload_planner\n"
            "preload_planner()\n"
            "assert 'envdoctor.install.plan' in sys.modules\n" + show)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    # what this Python's own standard library brings with the modules any run imports (Python 3.8's argparse
    # imports shutil; 3.11's does not) is not the planner's doing
    stdlib = subprocess.run([sys.executable, "-c", "import sys, argparse, json, dataclasses, typing\n" + show],
                            capture_output=True, text=True, timeout=60)
    assert stdlib.returncode == 0, stdlib.stderr
    assert set(out.stdout.split()) - set(stdlib.stdout.split()) == set()
