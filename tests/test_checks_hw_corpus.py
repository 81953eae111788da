"""Checks the real-world corpus showed missing or crashing in the hardware layers (issue 11): every soname
shape a framework dlopens, the device nodes CUDA needs, GPUs the kernel driver failed to initialise."""

from __future__ import annotations

import pytest

from envdoctor.checks.libraries import _pip_fix_for
from envdoctor.facts import Facts, ok


@pytest.mark.parametrize("soname,major", [
    ("libcudnn.so", "8"),              # the unversioned development link PaddlePaddle dlopens: its own cuDNN's
    ("libcudnn.so.8", "8"),
    ("libcudnn.so.9.1.0", "9"),
    ("libcudnn.so.x", "8"),            # garbled: the framework's own cuDNN decides
    ("libcudnn.so.", "8"),
])
def test_cudnn_fix_never_crashes_on_a_soname_shape(soname: str, major: str) -> None:
    facts = Facts([ok("framework.paddle", {"version": "2.5.1.post116", "cuda": "11.6", "cudnn": "8.4.0",
                                           "build": "cuda"}, "file:paddle/version/__init__.py")])
    fix = _pip_fix_for(facts, "paddle", soname)
    assert fix.commands and fix.commands[0].endswith("'nvidia-cudnn-cu11>=%s,<%d'" % (major, int(major) + 1))


def test_cudnn_fix_without_any_version_names_no_made_up_major() -> None:
    facts = Facts([ok("framework.paddle", {"version": "2.5.1", "build": "cuda"}, "file:paddle/version/__init__.py")])
    fix = _pip_fix_for(facts, "paddle", "libcudnn.so")
    assert not fix.commands and "libcudnn.so" in fix.text


@pytest.mark.parametrize("soname", ["libcudnn", "libcudnn_ops_infer.so.8", "libcublasLt.so", "libnvinfer.so.so",
                                    "", ".so.", "libfoo.so.99999999999999999999"])
def test_a_fix_is_written_for_any_soname(soname: str) -> None:
    facts = Facts([ok("framework.paddle", {"version": "2.5.1", "cuda": "11.6", "build": "cuda"}, "file:x")])
    assert _pip_fix_for(facts, "paddle", soname).text
