"""The interpreter the ``envdoctor`` console script inspects when nothing is active: its own.

``python -m venv v && v/bin/pip install envdoctor torch`` then ``v/bin/envdoctor diagnose`` (``v`` not
activated) must report v's torch, not the frameworks of whatever ``python3`` comes first on PATH; only a
tool installer's environment (pipx, ``uv tool``: they leave a marker file at its root) means python3 on PATH.

Everything here is real: the virtual environments are made by ``python -m venv`` (``--without-pip``, so it
stays fast; envdoctor and its dependencies reach them through a ``.pth`` file, as an editable install's
does), the ``envdoctor`` script is the one pip writes for a console-script entry point, and it runs as its
own process with a different ``python3`` first on PATH. torch's installed metadata is the real wheel's
(``tests/data/wheels/torch-2.14.1.*``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig

import pytest

WHEELS = os.path.join(os.path.dirname(__file__), "data", "wheels")

#: What pip (distlib's launcher template) writes for ``envdoctor = envdoctor.launcher:main``.
CONSOLE_SCRIPT = """#!{python}
# -*- coding: utf-8 -*-
import re
import sys
from envdoctor.launcher import main
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit(main())
"""


def _site_packages(venv: str) -> str:
    return os.path.join(venv, "lib", "python%d.%d" % sys.version_info[:2], "site-packages")


def _make_venv(where: str, with_envdoctor: bool = True) -> str:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", where], check=True, timeout=120)
    if with_envdoctor:
        import click
        import distro
        import packaging

        # The directories this test's own envdoctor and its dependencies come from, as site directories (so
        # the editable install's .pth, which maps envdoctor.recipes, is read too).
        dirs = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
        dirs |= {os.path.dirname(os.path.dirname(os.path.abspath(m.__file__ or ""))) for m in (click, packaging)}
        dirs.add(os.path.dirname(os.path.abspath(distro.__file__ or "")))
        dirs.add(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout (envdoctor/)
        with open(os.path.join(_site_packages(where), "envdoctor-test.pth"), "w") as fh:
            fh.write("import site; list(map(site.addsitedir, %r))\n" % sorted(dirs))
        script = os.path.join(where, "bin", "envdoctor")
        with open(script, "w") as fh:
            fh.write(CONSOLE_SCRIPT.format(python=os.path.join(where, "bin", "python")))
        os.chmod(script, 0o755)
    return where


def _install_torch(venv: str) -> None:
    site = _site_packages(venv)
    os.makedirs(os.path.join(site, "torch-2.14.1.dist-info"))
    os.makedirs(os.path.join(site, "torch"))
    shutil.copy(os.path.join(WHEELS, "torch-2.14.1.METADATA"), os.path.join(site, "torch-2.14.1.dist-info", "METADATA"))
    shutil.copy(os.path.join(WHEELS, "torch-2.14.1.version.py"), os.path.join(site, "torch", "version.py"))


@pytest.fixture(scope="module")
def venvs(tmp_path_factory):
    root = tmp_path_factory.mktemp("interp")
    user = _make_venv(str(root / "v"))
    _install_torch(user)
    other = _make_venv(str(root / "other"), with_envdoctor=False)  # the python3 first on PATH
    return user, other


def _run(script, args, other, **env_extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "CONDA_PREFIX", "ENVDOCTOR_PYTHON", "PYTHONPATH", "PYTHONHOME")}
    env["PATH"] = os.path.join(other, "bin") + os.pathsep + env.get("PATH", os.defpath)
    env.update(env_extra)
    return subprocess.run([script] + list(args), capture_output=True, text=True, env=env, timeout=120)


def _python_facts(report):
    return {f["key"]: f.get("value") for p in report["probes"] for f in p["facts"]
            if f["key"].startswith(("python.", "framework.torch"))}


def test_the_console_script_of_a_plain_venv_inspects_that_venv(venvs):
    user, other = venvs
    r = _run(os.path.join(user, "bin", "envdoctor"), ["diagnose", "--only", "python,frameworks", "--format", "json"],
             other)
    assert r.returncode == 0, r.stderr
    facts = _python_facts(json.loads(r.stdout))
    assert facts["python.executable"].startswith(os.path.join(user, "bin", "python"))
    assert facts["python.chosen"] == {"rule": "own", "reason": "the interpreter envdoctor runs on"}
    assert facts["framework.torch"]["version"] == "2.14.1"
    # The text report says which interpreter and why, and sees v's torch.
    text = " ".join(_run(os.path.join(user, "bin", "envdoctor"), ["diagnose", "--only", "python,frameworks"],
                         other).stdout.split())
    assert "(venv; the interpreter envdoctor runs on)" in text and "PyTorch 2.14.1" in text
    assert "No deep-learning framework" not in text


def test_every_command_makes_the_same_choice(venvs, tmp_path):
    user, other = venvs
    script, exe = os.path.join(user, "bin", "envdoctor"), os.path.join(user, "bin", "python")
    snap = tmp_path / "snap.json"
    assert _run(script, ["snapshot", "-o", str(snap)], other).returncode == 0
    doc = json.loads(snap.read_text())
    assert doc["python"]["executable"].startswith(exe) and doc["python"]["chosen"]["rule"] == "own"
    # check --policy: a policy requiring torch passes this node (it failed when python3 on PATH was inspected).
    policy = tmp_path / "p.toml"
    policy.write_text('schema_version = 1\n[require]\n"framework.torch.version" = ">=2.4"\n'
                      '[findings]\nfail_on = "never"\n')
    r = _run(script, ["check", "--policy", str(policy)], other)
    assert r.returncode == 0, r.stdout + r.stderr
    # advise names v's interpreter in its pip commands.
    r = _run(script, ["advise", "--framework", "torch"], other)
    assert r.returncode == 0 and "pip --python %s" % exe in " ".join(r.stdout.split()).replace("\\ ", ""), r.stdout
    r = _run(script, ["advise", "--framework", "torch", "--format", "json"], other)
    assert json.loads(r.stdout)["interpreter"] == {"executable": json.loads(r.stdout)["interpreter"]["executable"],
                                                   "chosen": {"rule": "own",
                                                              "reason": "the interpreter envdoctor runs on"}}
    assert json.loads(r.stdout)["interpreter"]["executable"].startswith(exe)
    # install: pip installs into v, no new virtual environment.
    r = _run(script, ["install", "pytorch", "--dry-run", "--format", "json"], other)
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    argvs = [s["action"].get("argv") for s in plan["steps"] if isinstance(s.get("action"), dict)]
    assert [exe, "-m", "pip", "install"] == next(a for a in argvs if a and "pip" in a)[:4], argvs
    assert not any(a and a[1:3] == ["-m", "venv"] for a in argvs)


@pytest.mark.parametrize("marker, who", [("pipx_metadata.json", "pipx"), ("uv-receipt.toml", "uv tool")])
def test_a_tool_installer_s_environment_means_python3_on_path(venvs, tmp_path, marker, who):
    """pipx and ``uv tool`` make an environment for envdoctor alone; the user's frameworks are elsewhere."""
    _, other = venvs
    tool = _make_venv(str(tmp_path / "tool"))
    (tmp_path / "tool" / marker).write_text("{}\n" if marker.endswith(".json") else "[tool]\n")
    r = _run(os.path.join(tool, "bin", "envdoctor"), ["diagnose", "--only", "python", "--format", "json"], other)
    assert r.returncode == 0, r.stderr
    facts = _python_facts(json.loads(r.stdout))
    assert facts["python.executable"].startswith(os.path.join(other, "bin", "python"))
    assert facts["python.chosen"]["rule"] == "tool_path" and who in facts["python.chosen"]["reason"]
    # An active environment still wins over the tool rule.
    r = _run(os.path.join(tool, "bin", "envdoctor"), ["diagnose", "--only", "python", "--format", "json"], other,
             VIRTUAL_ENV=venvs[0])
    assert _python_facts(json.loads(r.stdout))["python.chosen"]["rule"] == "virtual_env"
