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


#: tests/corpus/b39-ubuntu1404-gtx970-cuda70-theano-under-sudo-path-lacks-usr-local-cuda-bin-nvcc-not-found
#: (dnouri/kfkd-tutorial#15): CUDA 7.0 in /usr/local/cuda-7.0, the user's ~/.bashrc adds /usr/local/cuda/bin to PATH
#: as NVIDIA's post-install steps say, and the program runs under sudo, whose PATH is sudoers' secure_path.
SUDO_CASE = "b39-ubuntu1404-gtx970-cuda70-theano-under-sudo-path-lacks-usr-local-cuda-bin-nvcc-not-found"
SECURE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _user_findings(environ: Dict[str, Optional[str]], drop: Optional[str] = None) -> List[Any]:
    doc: Dict[str, Any] = corpus_snapshot(SUDO_CASE)
    for k, v in environ.items():
        if v is None:
            doc["environ"].pop(k, None)
        else:
            doc["environ"][k] = v
    if drop:
        del doc["files"][drop]
    return [f for f in run_checks(CheckContext(probe_facts(SnapshotHost(doc)), [])) if f.code == CODE]


def test_a_sudo_session_without_the_users_bashrc_path_is_named_with_sudo_and_the_file() -> None:
    (f,) = _user_findings({})
    assert f.severity == "warning"
    assert "/usr/local/cuda" in f.title and "7.0" in f.title
    assert "/home/ubgpu/.bashrc" in f.detail and "sudo" in f.detail and "secure_path" in f.detail
    assert any("sudo env" in c for c in f.fix.commands)


def test_sudo_with_home_set_to_roots_still_reads_the_invoking_users_bashrc() -> None:
    (f,) = _user_findings({"HOME": "/root"})
    assert "/home/ubgpu/.bashrc" in f.detail


def test_a_session_that_did_not_read_the_users_bashrc_without_sudo_names_the_file() -> None:
    (f,) = _user_findings({k: None for k in ("SUDO_USER", "SUDO_UID", "SUDO_GID", "SUDO_COMMAND")})
    assert f.severity == "warning" and "sudo" not in f.detail
    assert "/home/ubgpu/.bashrc" in f.detail and "export PATH=/usr/local/cuda/bin:$PATH" in f.fix.commands


def test_quiet_when_the_session_has_the_users_path_or_no_startup_file_names_it() -> None:
    assert _user_findings({"PATH": "/usr/local/cuda/bin:" + SECURE_PATH}) == []
    assert _user_findings({}, drop="/home/ubgpu/.bashrc") == []


def test_a_snapshot_keeps_only_the_path_lines_of_a_users_startup_file() -> None:
    for path in ("/home/ana/.bashrc", "/root/.profile", "/home/ana/.zshrc"):
        assert file_filter(path) is keep_path_lines
    assert file_filter("/home/ana/notes.txt") is not keep_path_lines
