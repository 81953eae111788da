"""torch releases before 2.0 are offered the way PyTorch itself installed them with pip.

PyTorch's previous-versions page (https://pytorch.org/get-started/previous-versions/, source
https://github.com/pytorch/pytorch.github.io/blob/04862e376ea686ba351674864400db1d93113979/_get_started/previous-versions.md)
gives, for Linux wheels:

* 2.0.0 and later: ``pip install torch==2.0.1+cu118 ... --index-url https://download.pytorch.org/whl/cu118``;
* 1.11.0 to 1.13.1: ``--extra-index-url https://download.pytorch.org/whl/cu113`` (beside PyPI);
* 1.2.0 to 1.10.x: ``pip install torch==1.7.1+cu110 ... -f https://download.pytorch.org/whl/torch_stable.html``
  (1.10.1: the per-CUDA ``-f https://download.pytorch.org/whl/cu111/torch_stable.html``), the PyPI build
  with no ``+cuNNN`` (``pip install torch==1.2.0`` for CUDA 10.0);
* 1.0.x and 1.1.0: no pip command, "Download and install wheel from
  https://download.pytorch.org/whl/cu100/torch_stable.html": those wheels carry no local version tag.

envdoctor suggested ``--index-url https://download.pytorch.org/whl/cu100`` for all of them."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from typing import Dict, List

import pytest
from packaging.version import Version

from envdoctor import matrix
from envdoctor.advise import torch_candidates
from envdoctor.matrix.frameworks import torch_release, validate_torch
from envdoctor.recipes import Request, load_recipe, parse_target

from .loopback import Server
from .test_install_plans import _wheel
from .test_recipes_frameworks import machine_facts

WHL = "https://download.pytorch.org/whl"
PY = "/opt/venvs/old/bin/python"


def vendor_form(release: str) -> str:
    """The form of the previous-versions page's pip line for this release (module docstring), typed here
    from the page rather than read from the matrix, so a wrong row fails."""
    v = Version(release)
    if v >= Version("2.0"):
        return "index-url"
    if v >= Version("1.11"):
        return "extra-index-url"
    if v >= Version("1.2"):
        return "find-links"
    return "find-links only"


def expected_options(release: str, tag: str, base: str = WHL) -> List[str]:
    form = vendor_form(release)
    if form == "index-url":
        return ["--index-url", "%s/%s" % (base, tag)]
    if form == "extra-index-url":
        return ["--extra-index-url", "%s/%s" % (base, tag)]
    page = ["-f", "%s/%s/torch_stable.html" % (base, tag)]
    return page if form == "find-links" else ["--no-index"] + page


def test_every_torch_build_is_offered_in_the_form_pytorch_gave_for_its_release():
    seen = set()
    for cand in torch_candidates():
        words = shlex.split(cand.command)
        assert words[:3] == ["pip", "install", "torch==%s.*" % cand.release], cand.command
        assert words[3:] == expected_options(cand.release, cand.variant), (cand.release, cand.command)
        seen.add(vendor_form(cand.release))
    assert seen == {"index-url", "extra-index-url", "find-links", "find-links only"}


def test_every_release_before_2_0_names_its_pip_form_and_where_it_comes_from():
    rows = matrix.load("torch")
    for row in rows:
        if Version(row["version"]) < Version("2.0"):
            assert row["pip"]["source"].startswith("https://pytorch.org/get-started/previous-versions/"), row
    broken = [dict(r) for r in rows]
    del broken[0]["pip"]
    assert any("before 2.0 needs 'pip'" in p for p in validate_torch(broken))


def test_advise_for_an_old_machine_prints_a_line_pip_can_follow():
    r = subprocess.run([sys.executable, "-m", "envdoctor", "advise", "--driver", "418.67", "--gpu", "Tesla V100",
                        "--python-version", "3.7", "--framework", "torch", "--format", "json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    import json

    torch = json.loads(r.stdout)["frameworks"][0]
    assert Version(torch["release"]) < Version("1.11"), torch  # CUDA 10.1 is the newest this driver runs
    assert torch["command"].endswith(" -f %s/%s/torch_stable.html" % (WHL, torch["variant"])), torch
    assert "--index-url" not in torch["command"]


@pytest.mark.parametrize("release,cuda,mirror", [
    ("1.7", "11.0", None), ("1.1", "9.0", None), ("1.13", "11.6", None), ("2.0", "11.8", None),
    ("1.7", "11.0", "https://mirror.example/pytorch/whl"),
])
def test_install_plans_old_releases_in_the_vendors_form(release, cuda, mirror):
    facts = machine_facts("525.60.13", 12000, [[7, 0]], ["Tesla V100-SXM2-16GB"])
    plan = load_recipe("pytorch").plan(Request("pytorch", release, "pip", python=PY, mirror=mirror,
                                               options={"cuda": cuda}), parse_target("ubuntu22.04"), facts)
    argv = next(s.action.argv for s in plan.steps if s.id == "pip-install")
    tag = "cu" + cuda.replace(".", "")
    assert argv[:5] == [PY, "-m", "pip", "install", "torch==%s.*" % release]
    assert argv[5:] == expected_options(release, tag, (mirror or WHL).rstrip("/")), argv


def test_the_cpu_build_of_an_old_release_comes_from_its_find_links_page():
    facts = machine_facts("525.60.13", 12000, [[7, 0]], ["Tesla V100-SXM2-16GB"])
    plan = load_recipe("pytorch").plan(Request("pytorch", "1.7", "pip", python=PY, options={"cuda": "cpu"}),
                                       parse_target("ubuntu22.04"), facts)
    argv = next(s.action.argv for s in plan.steps if s.id == "pip-install")
    assert argv[5:] == ["-f", WHL + "/cpu/torch_stable.html"]


def test_a_compat_fix_for_an_old_release_uses_its_form():
    from envdoctor.checks.compat import _torch_pip

    row = torch_release("1.6")
    var = next(v for v in row["variants"] if v["tag"] == "cu101")
    assert _torch_pip("1.6", var) == "-f %s/cu101/torch_stable.html" % WHL


# -- the suggested lines, followed by pip ------------------------------------------------------------------
def _page(files: Dict[str, bytes]) -> bytes:
    return ("<!DOCTYPE html><html><body>" + "".join('<a href="%s">%s</a><br>' % (f.replace("+", "%2B"), f)
                                                   for f in files) + "</body></html>").encode()


def _torch(version: str) -> bytes:
    return _wheel("torch", version, {"torch/__init__.py": "__version__ = %r\n" % version})


@pytest.fixture(scope="module")
def wheel_server():
    """PyPI (``/pypi/``: the builds without a local version, as PyPI holds them) and download.pytorch.org
    (``/whl/``: +cuNNN wheels on per-CUDA find-links pages before 1.11 and on per-CUDA indexes after; 1.1.0's
    CUDA 9.0 wheel without a local version, its own file)."""
    pypi = {"torch-1.1.0-py3-none-any.whl": _wheel("torch", "1.1.0", {"torch/__init__.py": "cuda = 'pypi'\n"}),
            "torch-1.7.1-py3-none-any.whl": _torch("1.7.1"),
            "torch-1.13.1-py3-none-any.whl": _torch("1.13.1")}
    cu90 = {"torch-1.1.0-py3-none-any.whl": _wheel("torch", "1.1.0", {"torch/__init__.py": "cuda = '9.0'\n"})}
    cu110 = {"torch-1.7.0+cu110-py3-none-any.whl": _torch("1.7.0+cu110"),
             "torch-1.7.1+cu110-py3-none-any.whl": _torch("1.7.1+cu110")}
    cu116 = {"torch-1.13.1+cu116-py3-none-any.whl": _torch("1.13.1+cu116")}
    files = {"/pypi/torch/": _page(pypi), "/whl/cu90/torch_stable.html": _page(cu90),
             "/whl/cu110/torch_stable.html": _page(cu110), "/whl/cu116/torch/": _page(cu116)}
    for folder, wheels in (("/pypi/torch/", pypi), ("/whl/cu90/", cu90), ("/whl/cu110/", cu110),
                           ("/whl/cu116/torch/", cu116)):
        files.update({folder + name: data for name, data in wheels.items()})
    srv = Server(files, lifetime=600)
    yield srv
    srv.close()


@pytest.mark.parametrize("release,tag,want", [
    ("1.7", "cu110", "torch-1.7.1+cu110-py3-none-any.whl"),    # not PyPI's 1.7.1 (CUDA 10.2)
    ("1.13", "cu116", "torch-1.13.1+cu116-py3-none-any.whl"),  # not PyPI's 1.13.1 (CUDA 11.7)
    ("1.1", "cu90", "torch-1.1.0-py3-none-any.whl"),           # the cu90 file, not PyPI's of the same name
])
def test_pip_following_the_suggested_line_gets_that_cuda_build(wheel_server, tmp_path, release, tag, want):
    cand = next(c for c in torch_candidates() if c.release == release and c.variant == tag)
    args = [a.replace(WHL, wheel_server.url + "/whl") for a in shlex.split(cand.command)[2:]]
    env = dict(os.environ, PIP_INDEX_URL=wheel_server.url + "/pypi", PIP_CONFIG_FILE=os.devnull,
               PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_CACHE_DIR="1")
    env.pop("PIP_FIND_LINKS", None)
    env.pop("PIP_EXTRA_INDEX_URL", None)
    dest = tmp_path / "got"
    r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-d", str(dest)] + args,
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert os.listdir(str(dest)) == [want], r.stdout
    if release == "1.1":  # the same file name on both: which one came is in the file
        import zipfile

        with zipfile.ZipFile(str(dest / want)) as z:
            assert z.read("torch/__init__.py").decode() == "cuda = '9.0'\n"
