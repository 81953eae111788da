"""A CUDA toolkit whose package puts it on PATH through /etc/profile.d, in a session whose PATH lacks it
(cuda.toolkit_not_on_path).

Machine: tests/corpus/b24-pop-os-2104-system76-cuda-latest-112-in-usr-lib-cuda-nvcc-not-on-path-until-relogin
(system76/docs#765: Pop!_OS 21.04, `apt install system76-cuda-latest` puts CUDA 11.2 in /usr/lib/cuda-11.2 behind the
/usr/lib/cuda alternative, and /etc/profile.d/system76-cuda.sh adds /usr/lib/cuda/bin to PATH; `nvcc -V` was 'command
not found' until the reporter rebooted). The variants change only the session's PATH or remove the login script."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from envdoctor.checks import CheckContext, run_checks
from envdoctor.host.base import file_filter
from envdoctor.host.snapshot import SnapshotHost
from envdoctor.probes.cuda import keep_path_lines

from .conftest import corpus_snapshot, probe_facts

CASE = "b24-pop-os-2104-system76-cuda-latest-112-in-usr-lib-cuda-nvcc-not-on-path-until-relogin"
CODE = "cuda.toolkit_not_on_path"
SCRIPT = "/etc/profile.d/system76-cuda.sh"


def _findings(path: Optional[str] = None, drop_script: bool = False) -> List[Any]:
    doc: Dict[str, Any] = corpus_snapshot(CASE)
    if path is not None:
        doc["environ"]["PATH"] = path
    if drop_script:
        del doc["files"][SCRIPT]
    return [f for f in run_checks(CheckContext(probe_facts(SnapshotHost(doc)), [])) if f.code == CODE]


def test_a_toolkit_put_on_path_only_at_login_is_named_with_the_script_and_what_to_do() -> None:
    (f,) = _findings()
    assert f.severity == "warning"
    assert "/usr/lib/cuda" in f.title and "11.2" in f.title
    assert SCRIPT in f.detail and "/usr/lib/cuda/bin" in f.detail
    assert ". %s" % SCRIPT in f.fix.commands


def test_quiet_once_the_session_has_it_or_without_a_login_script() -> None:
    assert _findings(path="/usr/lib/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin") == []
    assert _findings(drop_script=True) == []  # a toolkit nothing puts on PATH is not judged


def test_a_snapshot_keeps_only_the_path_lines_of_a_login_script() -> None:
    keep = file_filter(SCRIPT)
    assert keep is keep_path_lines
    text = 'export API_TOKEN=hunter2\nexport PATH="/usr/lib/cuda/bin:$PATH"\n'
    assert keep(text) == 'export PATH="/usr/lib/cuda/bin:$PATH"\n'
