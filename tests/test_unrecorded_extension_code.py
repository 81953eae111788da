"""GPU code of Python extension modules whose distribution has no wheel ``RECORD``: an ``.egg`` directory on
``sys.path`` (``python setup.py install`` through ``easy-install.pth``), a legacy ``.egg-info`` (pip's
``installed-files.txt``; ``setup.py develop``'s folder in a source tree a ``.pth`` names), in site-packages or the
user site. Their fat binaries are judged as a wheel's extension's are (``compat.program-arch``).

Fixtures:
- The corpus machine rebuilt from princeton-vl/DROID-SLAM#150: droid_backends 0.0.0 and lietorch 0.2 built by
  ``setup.py install`` with nvcc -gencode for compute_60 ... compute_86 (SASS sm_60-sm_86, no PTX) into eggs
  listed in easy-install.pth, on an H100 (compute capability 9.0) with torch 2.4.0+cu121.
- The miniature layouts are setuptools' own: ``EGG-INFO/native_libs.txt`` lists every native file of the egg
  relative to its root (setuptools/command/bdist_egg.py, ``bdist_egg.run``); ``installed-files.txt`` of a legacy
  pip install lists the files relative to the ``.egg-info`` folder; ``top_level.txt`` names the import packages.
"""

from __future__ import annotations

from typing import Any, Dict, List

from envdoctor.host.base import Distribution
from envdoctor.probes.staticcuda import candidates_once, unrecorded_modules

from .conftest import corpus_snapshot, make_host, snapshot_findings

DROID = "b51-slurm-h100-node-driver550-conda-pip-torch240-cu121-droid-slam-extensions-built-sm60-to-sm86-no-sm90"
SITE = "/home/user/miniconda3/envs/droidenv/lib/python3.10/site-packages"
DROID_SO = SITE + "/droid_backends-0.0.0-py3.10-linux-x86_64.egg/droid_backends.cpython-310-x86_64-linux-gnu.so"
LIE_SO = SITE + "/lietorch-0.2-py3.10-linux-x86_64.egg/lietorch_backends.cpython-310-x86_64-linux-gnu.so"


def _arch_findings(doc: Dict[str, Any]) -> List[Any]:
    return [f for f in snapshot_findings(doc) if f.code == "gpu.arch_not_in_build"]


def test_egg_extensions_without_the_gpus_architecture_are_errors_naming_package_archs_and_gpu() -> None:
    found = _arch_findings(corpus_snapshot(DROID))
    assert [f.severity for f in found] == ["error", "error"]
    by_package = {("droid_backends" if "droid_backends 0.0.0" in f.title else "lietorch"): f for f in found}
    assert set(by_package) == {"droid_backends", "lietorch"}
    for f in found:
        assert "NVIDIA H100 80GB HBM3 (sm_90, compute capability 9.0)" in f.title
        assert "sm_60, sm_61, sm_70, sm_75, sm_80, sm_86" in f.title
        assert "no kernel image is available" in f.detail
        assert "compute_90,code=sm_90" in f.fix.text
    assert DROID_SO in by_package["droid_backends"].title and "Python package droid_backends 0.0.0" in \
        by_package["droid_backends"].title
    assert LIE_SO in by_package["lietorch"].title and "Python package lietorch 0.2" in by_package["lietorch"].title


def test_egg_extensions_rebuilt_with_sm90_are_quiet() -> None:
    doc = corpus_snapshot(DROID)
    for path in (DROID_SO, LIE_SO):
        doc["fatbin"][path]["sass"].append("sm_90")
    assert _arch_findings(doc) == []


def test_egg_extensions_with_ptx_the_gpu_can_jit_are_quiet() -> None:
    doc = corpus_snapshot(DROID)
    for path in (DROID_SO, LIE_SO):
        doc["fatbin"][path]["ptx"] = ["compute_86"]
    assert _arch_findings(doc) == []


def test_an_egg_not_on_sys_path_is_not_read() -> None:
    # easy-install.pth no longer names the eggs: nothing imports them, so their code is not this GPU's problem
    doc = corpus_snapshot(DROID)
    doc["python"]["sys_path"] = [p for p in doc["python"]["sys_path"] if not p.endswith(".egg")]
    assert _arch_findings(doc) == []


USER = "/home/u/.local/lib/python3.10/site-packages"
SRC = "/home/u/src/roi"


def test_modules_of_every_layout_without_a_record_are_candidates() -> None:
    egg = USER + "/ext-1.0-py3.10-linux-x86_64.egg"
    host = make_host(files={
        # an egg in the user site: native_libs.txt names a module in a sub-package too
        egg + "/EGG-INFO/PKG-INFO": "Name: ext\nVersion: 1.0\n",
        egg + "/EGG-INFO/native_libs.txt": "ext_cuda.cpython-310-x86_64-linux-gnu.so\next/ops/_C.so\n",
        egg + "/EGG-INFO/top_level.txt": "ext\next_cuda\n",
        egg + "/ext_cuda.cpython-310-x86_64-linux-gnu.so": "",
        egg + "/ext/ops/_C.so": "",
        egg + "/ext/__init__.py": "",
        # a legacy pip install: installed-files.txt, relative to the folder
        USER + "/mmcv-0.2.10-py3.10.egg-info/installed-files.txt": "../mmcv/_ext.cpython-310-x86_64-linux-gnu.so\n"
                                                                  "../mmcv/__init__.py\n",
        USER + "/mmcv/_ext.cpython-310-x86_64-linux-gnu.so": "",
        # setup.py develop: the .egg-info in the source tree a .pth puts on sys.path, the module built in place
        SRC + "/roi_align.egg-info/PKG-INFO": "Metadata-Version: 2.1\nName: roi_align\nVersion: 0.0.1\n",
        SRC + "/roi_align.egg-info/top_level.txt": "roi_align_cuda\n",
        SRC + "/roi_align_cuda.cpython-310-x86_64-linux-gnu.so": "",
        # metadata listing nothing: counted, not searched
        USER + "/bare-2.0-py3.10.egg-info/PKG-INFO": "Name: bare\nVersion: 2.0\n",
    }, python={"executable": "/usr/bin/python3", "version": "3.10.12", "implementation": "cpython",
               "prefix": "/usr", "base_prefix": "/usr", "sys_path": [USER, egg, SRC]})
    candidates, unlisted, complete = candidates_once(host)
    got = sorted((d.key, d.version, p) for d, p in candidates)
    assert got == [("ext", "1.0", egg + "/ext/ops/_C.so"),
                   ("ext", "1.0", egg + "/ext_cuda.cpython-310-x86_64-linux-gnu.so"),
                   ("mmcv", "0.2.10", USER + "/mmcv/_ext.cpython-310-x86_64-linux-gnu.so"),
                   ("roi-align", "0.0.1", SRC + "/roi_align_cuda.cpython-310-x86_64-linux-gnu.so")]
    assert (unlisted, complete) == (1, True)


def test_hostile_lists_stay_inside_the_egg_and_bounded() -> None:
    egg = "/site/x-1-py3.egg"
    lines = ["/etc/evil.so", "../outside.so"] + ["m%d.so" % i for i in range(40)]
    host = make_host(files={egg + "/EGG-INFO/native_libs.txt": "\n".join(lines) + "\n"})
    got = unrecorded_modules(host, Distribution("x", "1", egg + "/EGG-INFO", egg))
    assert got is not None and len(got) == 16 and all(p.startswith(egg + "/m") for p in got)
    # a distribution whose metadata is neither an egg's nor an .egg-info: nothing to say
    assert unrecorded_modules(host, Distribution("y", "1", "/site/y-1.data", "/site")) is None
    # installed-files.txt naming files outside its site: not this distribution's modules
    host = make_host(files={"/site/z-1.egg-info/installed-files.txt": "../../../../usr/lib/libz.so\n../z/_c.so\n",
                            "/site/z/_c.so": ""})
    assert unrecorded_modules(host, Distribution("z", "1", "/site/z-1.egg-info", "/site")) == ["/site/z/_c.so"]


# -- development installs (setup.py develop: the checkout on sys.path, extension modules built in place) ----------
# The corpus machine rebuilt from mit-han-lab/bevfusion#12: BEVFusion's operators built by `python setup.py develop`
# with -gencode for sm_75/sm_80/sm_86 only (no PTX), in the checkout an .egg-link and easy-install.pth put on
# sys.path, on a Tesla V100 (compute capability 7.0); and its healthy twin (sm_86 operators on an RTX A6000).
BEV = "b68-ubuntu1804-tesla-v100-driver46032-torch1100-cu111-bevfusion-ops-gencode-without-sm70"
BEV_OK = ("healthy-b68-ubuntu1804-rtx-a6000-driver46519-cuda113-nvcc-conda-pytorch1101-cudatoolkit1131-"
          "bevfusion-ops-with-sm86-camera-eval-runs")
BEV_POOL = "/home/user/bevfusion/mmdet3d/ops/bev_pool/bev_pool_ext.cpython-38-x86_64-linux-gnu.so"
BEV_VOXEL = "/home/user/bevfusion/mmdet3d/ops/voxel/voxel_layer.cpython-38-x86_64-linux-gnu.so"


def test_develop_checkout_operators_without_the_gpus_architecture_are_errors() -> None:
    found = _arch_findings(corpus_snapshot(BEV))
    assert [f.severity for f in found] == ["error", "error"]
    titles = " ".join(f.title for f in found)
    assert "bev_pool_ext" in titles and "voxel_layer" in titles
    for f in found:
        assert "compute capability 7.0" in f.title and "sm_75, sm_80, sm_86" in f.title
        assert "compute_70,code=sm_70" in f.fix.text


def test_develop_checkout_operators_with_the_gpus_architecture_are_quiet() -> None:
    doc = corpus_snapshot(BEV)
    for path in (BEV_POOL, BEV_VOXEL):
        doc["fatbin"][path]["sass"].append("sm_70")
    assert _arch_findings(doc) == []
    assert _arch_findings(corpus_snapshot(BEV_OK)) == []


def test_develop_checkout_not_on_sys_path_is_not_read() -> None:
    doc = corpus_snapshot(BEV)
    doc["python"]["sys_path"] = [p for p in doc["python"]["sys_path"] if p != "/home/user/bevfusion"]
    assert _arch_findings(doc) == []


def test_develop_install_modules_are_found_in_the_package_tree_and_bounded() -> None:
    src = "/home/u/proj"
    files = {
        src + "/proj.egg-info/PKG-INFO": "Metadata-Version: 2.1\nName: proj\nVersion: 0.1\n",
        src + "/pkg/__init__.py": "",
        src + "/pkg/ops/a/a_ext.cpython-310-x86_64-linux-gnu.so": "",
        src + "/pkg/_top.so": "",
        # not imported: build trees, hidden folders, folders that are no package
        src + "/build/lib.linux-x86_64-3.10/pkg/ops/a/a_ext.cpython-310-x86_64-linux-gnu.so": "",
        src + "/pkg/.git/x.so": "",
        src + "/tools/t.so": "",
    }
    files.update({src + "/pkg/many/m%02d.so" % i: "" for i in range(30)})
    host = make_host(files=files)
    dist = Distribution("proj", "0.1", src + "/proj.egg-info", src)
    got = unrecorded_modules(host, dist)
    assert got is not None and len(got) == 16
    assert src + "/pkg/_top.so" in got and all(p.startswith(src + "/pkg/") and "/." not in p for p in got)
    # top_level.txt, when written, names the packages searched (and the depth reaches the nested operator)
    files[src + "/proj.egg-info/top_level.txt"] = "pkg2\n"
    files[src + "/pkg2/x/y/z/w_ext.so"] = ""
    got = unrecorded_modules(make_host(files=files), dist)
    assert got == [src + "/pkg2/x/y/z/w_ext.so"]
    # a versioned .egg-info (setup.py install) is no development install: only installed-files.txt/top_level.txt
    versioned = Distribution("proj", "0.1", src + "/proj-0.1-py3.10.egg-info", src)
    assert unrecorded_modules(make_host(files={src + "/proj-0.1-py3.10.egg-info/PKG-INFO": "Name: proj\n",
                                               src + "/pkg/__init__.py": "", src + "/pkg/a.so": ""}),
                              versioned) is None
