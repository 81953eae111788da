"""A plan's checks and actions: one class each, carrying what it does (``describe``), how in sh (``sh``, the
dry-run script) and doing it (``run``, the executor), so the script and the executor cannot drift apart.

Each check is asked both ways on real files in a temporary directory: the shell test run by bash and the
executor's Python must give the same answer, whether the check holds or not."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import typing

import pytest

from envdoctor.install import plan
from envdoctor.install.plan import Check, absent, exists, has_content, has_sha256

BASH = shutil.which("bash")


def test_every_action_class_carries_its_description_shell_and_execution():
    for cls in typing.get_args(plan.Action):
        for method in ("describe", "sh", "run", "to_dict"):
            assert callable(getattr(cls, method, None)), "%s has no %s" % (cls.__name__, method)
    for method in ("describe", "sh", "holds", "to_dict"):
        assert callable(getattr(Check, method, None))


def _cases(tmp_path):
    f = tmp_path / "file.txt"
    f.write_text("cuda 12.4\n", encoding="utf-8")
    (tmp_path / "dir with space").mkdir()
    digest = hashlib.sha256(b"cuda 12.4\n").hexdigest()
    return [
        exists(str(f)), exists(str(tmp_path / "missing")), exists(str(tmp_path / "dir with space")),
        absent(str(f)), absent(str(tmp_path / "missing")),
        has_sha256(str(f), digest), has_sha256(str(f), "0" * 64), has_sha256(str(tmp_path / "missing"), digest),
        has_content(str(f), "cuda 12.4\n"), has_content(str(f), "cuda 12.4"), has_content(str(tmp_path), "x"),
        has_content(str(f), "it's \"quoted\" $HOME `x`\n"),
    ]


@pytest.mark.skipif(BASH is None or shutil.which("sha256sum") is None, reason="bash and sha256sum are needed")
def test_the_shell_test_and_the_executor_answer_every_check_alike(tmp_path):
    answers = []
    for check in _cases(tmp_path):
        shell = subprocess.run([BASH, "-c", check.sh()], timeout=30).returncode == 0
        assert shell == check.holds(), check.describe()
        answers.append(shell)
    assert True in answers and False in answers
