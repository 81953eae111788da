"""Compiled extension modules of packages installed without a wheel's RECORD (``python setup.py install``: an ``.egg``
directory beside site-packages' packages, or an ``.egg-info`` folder), which declare no requirement on the framework:
their CUDA libraries are resolved as a process that imported torch resolves them (``cuda.framework_cannot_load``).

The machine replayed is the corpus case rebuilt from NVIDIA/apex#86 (apex built by ``setup.py install --cuda_ext``
into ``apex-0.1-py3.5-linux-x86_64.egg``, its ``fused_adam_cuda`` linking ``libcudart.so.9.1`` of a CUDA 9.1 runfile
install, LD_LIBRARY_PATH naming ``/usr/local/cuda/lib``); the layouts of ``legacy_extension_files`` are setuptools'
(an egg's ``EGG-INFO/``, ``top_level.txt``, pip's ``installed-files.txt`` in a legacy ``.egg-info``)."""

from __future__ import annotations

from envdoctor.host.base import Distribution
from envdoctor.probes.linkage import legacy_extension_files

from .conftest import corpus_snapshot, make_host, snapshot_findings

APEX = "b32-ubuntu1604-driver39087-cuda91-runfile-ld-library-path-cuda-lib-apex-fused-adam-cuda-libcudart91-not-found"
SITE = "/usr/local/lib/python3.5/dist-packages"


def test_an_egg_extension_whose_cuda_runtime_the_loader_cannot_find_is_an_error_naming_where_it_lies():
    found = [f for f in snapshot_findings(corpus_snapshot(APEX)) if f.code == "cuda.framework_cannot_load"]
    assert len(found) == 1 and found[0].severity == "error"
    assert found[0].title == "apex 0.1 needs libcudart.so.9.1, which neither the loader nor torch 1.0.0 provides"
    assert "fused_adam_cuda" in found[0].detail and "/usr/local/cuda/lib64/libcudart.so.9.1" in found[0].detail
    assert found[0].fix.commands == [
        "export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"]


def test_quiet_once_the_toolkit_lib64_is_on_the_loader_path():
    doc = corpus_snapshot(APEX)
    doc["environ"]["LD_LIBRARY_PATH"] = "/usr/local/cuda/lib64:/usr/local/cuda/lib"
    assert [f for f in snapshot_findings(doc) if f.code == "cuda.framework_cannot_load"] == []


def test_legacy_installs_modules_are_listed_from_their_own_records():
    egg = SITE + "/apex-0.1-py3.5-linux-x86_64.egg"
    host = make_host(files={
        egg + "/EGG-INFO/PKG-INFO": "Metadata-Version: 1.0\nName: apex\nVersion: 0.1\n",
        egg + "/EGG-INFO/top_level.txt": "amp_C\napex\nfused_adam_cuda\n",
        egg + "/fused_adam_cuda.cpython-35m-x86_64-linux-gnu.so": "",
        egg + "/amp_C.cpython-35m-x86_64-linux-gnu.so": "",
        egg + "/apex/__init__.py": "",
        # a distutils/pip legacy install: pip's installed-files.txt lists the module, relative to the folder
        SITE + "/mmcv-0.2.10.egg-info/installed-files.txt": "../mmcv/_ext.cpython-35m-x86_64-linux-gnu.so\n"
                                                         "../mmcv/__init__.py\n",
        SITE + "/mmcv/_ext.cpython-35m-x86_64-linux-gnu.so": "",
        # a setup.py install without pip: top_level.txt names the module beside it
        SITE + "/roi_align-0.0.1.egg-info/top_level.txt": "roi_align_cuda\n",
        SITE + "/roi_align_cuda.cpython-35m-x86_64-linux-gnu.so": "",
        # a wheel-installed package is RECORD's business, not this
        SITE + "/numpy-1.16.0.dist-info/RECORD": "",
    })
    dists = [Distribution("mmcv", "0.2.10", SITE + "/mmcv-0.2.10.egg-info", SITE),
             Distribution("roi_align", "0.0.1", SITE + "/roi_align-0.0.1.egg-info", SITE),
             Distribution("numpy", "1.16.0", SITE + "/numpy-1.16.0.dist-info", SITE)]
    got = {(d.key, d.version, p.rsplit("/", 1)[-1]) for d, p in legacy_extension_files(host, SITE, dists, [])}
    assert got == {("apex", "0.1", "fused_adam_cuda.cpython-35m-x86_64-linux-gnu.so"),
                   ("apex", "0.1", "amp_C.cpython-35m-x86_64-linux-gnu.so"),
                   ("mmcv", "0.2.10", "_ext.cpython-35m-x86_64-linux-gnu.so"),
                   ("roi-align", "0.0.1", "roi_align_cuda.cpython-35m-x86_64-linux-gnu.so")}
    # packages judged elsewhere (the known extension packages, those requiring torch) are skipped
    assert {d.key for d, _ in legacy_extension_files(host, SITE, dists, ["apex", "mmcv"])} == {"roi-align"}


def test_one_reader_serves_the_linkage_and_the_gpu_code_probes():
    """The linkage probe's legacy modules are exactly those the GPU-code probe reads for the same distributions
    (one reader: ``staticcuda.unrecorded_modules``): an egg's ``native_libs.txt`` naming a module in a sub-package,
    and an ``.egg-info`` whose ``installed-files.txt`` is empty (an interrupted pip) falling back to
    ``top_level.txt``."""
    from envdoctor.probes.staticcuda import unrecorded_modules

    egg = SITE + "/ops-1.0-py3.5-linux-x86_64.egg"
    host = make_host(files={
        egg + "/EGG-INFO/PKG-INFO": "Metadata-Version: 1.0\nName: ops\nVersion: 1.0\n",
        egg + "/EGG-INFO/native_libs.txt": "ops/cuda/_C.so\n",
        egg + "/ops/cuda/_C.so": "",
        SITE + "/roi_align-0.0.1.egg-info/installed-files.txt": "",
        SITE + "/roi_align-0.0.1.egg-info/top_level.txt": "roi_align_cuda\n",
        SITE + "/roi_align_cuda.cpython-35m-x86_64-linux-gnu.so": "",
    })
    roi = Distribution("roi_align", "0.0.1", SITE + "/roi_align-0.0.1.egg-info", SITE)
    got = [p for _d, p in legacy_extension_files(host, SITE, [roi], [])]
    assert got == [SITE + "/roi_align_cuda.cpython-35m-x86_64-linux-gnu.so", egg + "/ops/cuda/_C.so"]
    assert got == (unrecorded_modules(host, roi) or []) + (
        unrecorded_modules(host, Distribution("ops", "1.0", egg + "/EGG-INFO", egg)) or [])


def test_a_framework_distribution_is_told_by_the_frameworks_own_patterns():
    """linkage skips a framework's own distribution (its builds are judged elsewhere) by the patterns
    ``frameworks.of_distribution`` matches with, as the anchored ``^(?:...)$`` it used to compile did."""
    from envdoctor.probes.linkage import _framework_key

    assert _framework_key("torch") and _framework_key("tensorflow-gpu") and _framework_key("cupy-cuda12x")
    assert _framework_key("torch\n")  # as "$" matched before a final newline
    assert not _framework_key("cuquantum-cu12") and not _framework_key("torchx") and not _framework_key("xtorch")
