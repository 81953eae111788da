"""The Python probe: which interpreter, which kind of environment, how many packages."""

from __future__ import annotations

from envdoctor.facts import Facts
from envdoctor.probes import ProbeContext
from envdoctor.probes.python_env import parse_pyvenv_cfg, probe_python

from .conftest import make_host


def facts_of(host) -> Facts:
    return Facts(probe_python(ProbeContext(host)))


# pyvenv.cfg of this project's own dev venv (/work/main/.venv/pyvenv.cfg, made by `python -m venv` of a
# pyenv 3.11.7), with /root and /work/main replaced by the test's paths.
VENV_CFG = """home = /home/ana/.pyenv/versions/3.11.7/bin
include-system-site-packages = false
version = 3.11.7
executable = /home/ana/.pyenv/versions/3.11.7/bin/python3.11
command = /home/ana/.pyenv/versions/3.11.7/bin/python3 -m venv /home/ana/proj/.venv
"""

# pyvenv.cfg written by `uv venv` (uv 0.9.4), as pasted in a public uv bug report; only `home` is changed
# to this test's conda base.
UV_CFG = """home = /opt/conda/bin
implementation = CPython
uv = 0.9.4
version_info = 3.13.5
include-system-site-packages = false
"""


def test_venv_is_recognised_from_prefix_and_pyvenv_cfg():
    site = "/home/ana/proj/.venv/lib/python3.11/site-packages"
    host = make_host(
        files={"/home/ana/proj/.venv/pyvenv.cfg": VENV_CFG,
               site + "/torch-2.4.0+cu121.dist-info/METADATA": "Name: torch\n",
               site + "/numpy-1.26.4.dist-info/METADATA": "Name: numpy\n"},
        python={"executable": "/home/ana/proj/.venv/bin/python", "version": "3.11.7", "implementation": "cpython",
                "prefix": "/home/ana/proj/.venv", "base_prefix": "/home/ana/.pyenv/versions/3.11.7",
                "sys_path": ["/home/ana/.pyenv/versions/3.11.7/lib/python311.zip", site]})
    f = facts_of(host)
    assert f.value("python.version") == "3.11.7"
    assert f.value("python.executable") == "/home/ana/proj/.venv/bin/python"
    env = f.value("python.environment")
    assert env["kind"] == "venv" and env["home"] == "/home/ana/.pyenv/versions/3.11.7/bin"
    assert env["system_site_packages"] is False and env["creator"] == "venv"
    assert f.get("python.environment").source == "file:/home/ana/proj/.venv/pyvenv.cfg"
    assert f.value("python.pip_packages_count") == 2


def test_uv_venv_on_top_of_a_conda_base_keeps_both_facts():
    host = make_host(
        files={"/srv/app/.venv/pyvenv.cfg": UV_CFG, "/opt/conda/conda-meta/history": ""},
        python={"executable": "/srv/app/.venv/bin/python", "version": "3.13.5", "implementation": "cpython",
                "prefix": "/srv/app/.venv", "base_prefix": "/opt/conda", "sys_path": []})
    env = facts_of(host).value("python.environment")
    assert env["kind"] == "venv" and env["creator"] == "uv 0.9.4"
    assert env["base_kind"] == "conda" and env["base_conda_env"] == "base"


def test_conda_env_name_comes_from_the_envs_directory():
    host = make_host(
        files={"/home/ana/miniconda3/envs/dl/conda-meta/history": ""},
        environ={"PATH": "/usr/bin", "CONDA_DEFAULT_ENV": "dl"},
        python={"executable": "/home/ana/miniconda3/envs/dl/bin/python", "version": "3.10.14",
                "implementation": "cpython", "prefix": "/home/ana/miniconda3/envs/dl",
                "base_prefix": "/home/ana/miniconda3/envs/dl", "sys_path": []})
    env = facts_of(host).value("python.environment")
    assert env["kind"] == "conda" and env["name"] == "dl" and env["conda_active"] == "dl"


def test_system_python():
    host = make_host()  # conftest's default: /usr/bin/python3, prefix == base_prefix == /usr
    f = facts_of(host)
    assert f.value("python.environment")["kind"] == "system"
    assert f.value("python.implementation") == "cpython"
    assert f.value("python.pip_packages_count") == 0


def test_user_site_torch_shadowing_the_venv_one_is_reported():
    user = "/home/ana/.local/lib/python3.10/site-packages"
    venv = "/home/ana/venv/lib/python3.10/site-packages"
    host = make_host(
        files={user + "/torch-1.13.1.dist-info/METADATA": "Name: torch\n",
               venv + "/torch-2.4.0+cu121.dist-info/METADATA": "Name: torch\n"},
        environ={"PATH": "/usr/bin", "PYTHONPATH": "/home/ana/.local/lib/python3.10/site-packages"},
        python={"executable": "/home/ana/venv/bin/python", "version": "3.10.12", "implementation": "cpython",
                "prefix": "/home/ana/venv", "base_prefix": "/usr", "sys_path": [user, venv]})
    f = facts_of(host)
    assert f.value("python.shadowed_packages") == {"torch": [user + " (1.13.1)", venv + " (2.4.0+cu121)"]}
    assert f.value("python.pythonpath") == user
    assert f.value("python.pip_packages_count") == 1  # the first one wins, as on import


def test_interpreter_that_does_not_answer_is_unknown_with_the_reason():
    host = make_host(python={"executable": "/opt/py/bin/python3", "version": "", "implementation": "",
                             "prefix": "", "base_prefix": "", "sys_path": [], "error": "unusable",
                             "message": "/opt/py/bin/python3 -I -c ...: timed out after 10.0s"})
    f = facts_of(host).get("python.version")
    assert f.status == "unknown" and "timed out" in f.reason and "/opt/py/bin/python3" in f.reason


def test_pyvenv_cfg_parser_tolerates_junk_lines():
    assert parse_pyvenv_cfg("garbage\nHome = /x\n# c = d\n") == {"home": "/x"}
