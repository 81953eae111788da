"""GPU code of Python extension modules built in place by an editable install (PEP 660: ``pip install -e``), which
the wheel's ``RECORD`` does not list: the ``.pth`` path or setuptools finder the RECORD does list leads to the source
tree, whose modules are judged as a wheel's are (``compat.program-arch``).

Fixtures:
- The corpus machine rebuilt from IDEA-Research/Grounded-SAM-2#127: ``pip install --no-build-isolation -e
  grounding_dino`` built ``groundingdino._C`` in place with -gencode for compute_70/75/80/86 only (SASS sm_70-sm_86,
  no PTX; the flags quoted in IDEA-Research/Grounded-SAM-2#71) on an H100 (compute capability 9.0); site-packages
  holds the dist-info (``direct_url.json`` ``"editable": true``) and ``__editable__.groundingdino-0.1.0.pth`` with the
  checkout's path, as setuptools' lax/static editable mode writes it (setuptools/command/editable_wheel.py,
  ``_StaticPth``).
- The finder layout is setuptools' strict/finder mode: ``__editable__.<name>-<version>.pth`` holds an ``import``
  line and ``__editable___<name>_<version>_finder.py`` a ``MAPPING`` of each top-level package to its folder, as
  ``_finder_template`` renders it (setuptools 65.5.0: ``MAPPING = {...}``; setuptools 80.9.0:
  ``MAPPING: dict[str, str] = {...}``, both read from the released wheels' editable_wheel.py).
"""

from __future__ import annotations

from typing import Any, Dict, List

from envdoctor.host.base import Distribution
from envdoctor.probes.record import editable_files, keep_libraries
from envdoctor.probes.staticcuda import candidates_once, editable_modules

from .conftest import corpus_snapshot, make_host, snapshot_findings

GSAM = ("b87h-ubuntu2204-h100-driver550-conda-pip-torch230-cu121-grounded-sam2-groundingdino-ms-deform-attn-"
        "built-sm70-to-sm86-no-sm90")
GSAM_SITE = "/home/user/miniconda3/envs/gsam2/lib/python3.10/site-packages"
GSAM_SO = "/home/user/Grounded-SAM-2/grounding_dino/groundingdino/_C.cpython-310-x86_64-linux-gnu.so"


def _arch_findings(doc: Dict[str, Any]) -> List[Any]:
    return [f for f in snapshot_findings(doc) if f.code == "gpu.arch_not_in_build"]


def test_editable_install_module_without_the_gpus_architecture_is_an_error_naming_it() -> None:
    found = _arch_findings(corpus_snapshot(GSAM))
    assert [f.severity for f in found] == ["error"]
    f = found[0]
    assert "NVIDIA H100 80GB HBM3 (sm_90, compute capability 9.0)" in f.title
    assert GSAM_SO in f.title and "Python package groundingdino 0.1.0" in f.title
    assert "sm_70, sm_75, sm_80, sm_86" in f.title and "no kernel image is available" in f.detail
    # the fix says where the architecture goes when setup.py passes its own -gencode flags
    assert "compute_90,code=sm_90" in f.fix.text and 'extra_compile_args["nvcc"]' in f.fix.text


def test_editable_install_module_with_sm90_or_jittable_ptx_is_quiet() -> None:
    doc = corpus_snapshot(GSAM)
    doc["fatbin"][GSAM_SO]["sass"].append("sm_90")
    assert _arch_findings(doc) == []
    doc = corpus_snapshot(GSAM)
    doc["fatbin"][GSAM_SO]["ptx"] = ["compute_86"]
    assert not [f for f in snapshot_findings(doc) if f.severity == "error"]


def test_a_pth_path_of_an_install_that_is_not_editable_is_not_followed() -> None:
    # the same .pth under another name, and direct_url.json without "editable": not an editable install
    doc = corpus_snapshot(GSAM)
    files = doc["files"]
    pth = files.pop(GSAM_SITE + "/__editable__.groundingdino-0.1.0.pth")
    files[GSAM_SITE + "/groundingdino.pth"] = pth
    record = GSAM_SITE + "/groundingdino-0.1.0.dist-info/RECORD"
    files[record]["text"] = files[record]["text"].replace("__editable__.groundingdino-0.1.0.pth", "groundingdino.pth")
    files[GSAM_SITE + "/groundingdino-0.1.0.dist-info/direct_url.json"] = {
        "text": '{"dir_info": {}, "url": "file:///home/user/Grounded-SAM-2/grounding_dino"}'}
    assert _arch_findings(doc) == []
    # with "editable": true (hatchling's, flit's or pdm's .pth name) it is followed again
    files[GSAM_SITE + "/groundingdino-0.1.0.dist-info/direct_url.json"] = {
        "text": '{"dir_info": {"editable": true}, "url": "file:///home/user/Grounded-SAM-2/grounding_dino"}'}
    assert len(_arch_findings(doc)) == 1


SITE = "/home/u/venv/lib/python3.12/site-packages"
SRC = "/home/u/src/mmcv"
PY = {"executable": "/home/u/venv/bin/python", "version": "3.12.3", "implementation": "cpython",
      "prefix": "/home/u/venv", "base_prefix": "/usr", "sys_path": [SITE]}
INFO = SITE + "/mmcv_lite-2.1.0.dist-info"
FINDER = "__editable___mmcv_lite_2_1_0_finder"
RECORD = ("__editable__.mmcv_lite-2.1.0.pth,sha256=a,83\n%s.py,sha256=b,9000\n"
          "mmcv_lite-2.1.0.dist-info/METADATA,sha256=c,500\nmmcv_lite-2.1.0.dist-info/RECORD,,\n" % FINDER)


def _finder_host(mapping_line: str, extra: Dict[str, str]) -> Any:
    files = {
        INFO + "/METADATA": "Metadata-Version: 2.1\nName: mmcv-lite\nVersion: 2.1.0\n",
        INFO + "/RECORD": RECORD,
        INFO + "/direct_url.json": '{"dir_info": {"editable": true}, "url": "file:///home/u/src/mmcv"}',
        SITE + "/__editable__.mmcv_lite-2.1.0.pth": "import %s; %s.install()" % (FINDER, FINDER),
        SITE + "/%s.py" % FINDER: "import sys\nfrom pathlib import Path\n\n%s\nNAMESPACES = {}\n" % mapping_line,
    }
    files.update(extra)
    return make_host(files=files, python=PY)


def test_setuptools_finder_mapping_leads_to_the_modules_built_in_place() -> None:
    extra = {SRC + "/mmcv_lite/__init__.py": "", SRC + "/mmcv_lite/ops/_ext.cpython-312-x86_64-linux-gnu.so": "",
             SRC + "/mmcv_lite/build/junk.so": "", SRC + "/other/x.so": ""}
    for line in ("MAPPING = {'mmcv_lite': '%s/mmcv_lite'}" % SRC,  # setuptools 65.5.0
                 "MAPPING: dict[str, str] = {'mmcv_lite': '%s/mmcv_lite'}" % SRC):  # setuptools 80.9.0
        candidates, _unlisted, _complete = candidates_once(_finder_host(line, extra))
        assert [(d.key, p) for d, p in candidates] == [
            ("mmcv-lite", SRC + "/mmcv_lite/ops/_ext.cpython-312-x86_64-linux-gnu.so")]


def test_hostile_editable_files_are_passed_over() -> None:
    extra = {SRC + "/mmcv_lite/_ext.so": ""}
    for line in ("MAPPING = {'mmcv_lite': __import__('os').getcwd()}", "MAPPING = [1, 2]", "MAPPING = {",
                 "MAPPING = {'a': 'relative/path', 1: '/x'}", "MAPPING = " + "{" * 500 + "}" * 500):
        assert candidates_once(_finder_host(line, extra))[0] == []
    dist = Distribution("mmcv_lite", "2.1.0", INFO, SITE)
    # a .pth of comments, imports, missing folders and the site itself; garbled direct_url.json
    host = make_host(files={INFO + "/direct_url.json": "{not json", SITE + "/p.pth":
                            "# comment\nimport os\n/nowhere\n.\n\n", SRC + "/mmcv_lite/_ext.so": ""}, python=PY)
    assert editable_modules(host, dist, ["p.pth"]) == []
    assert editable_modules(host, dist, []) == []
    # a .pth path reached only when the install is editable
    host = make_host(files={INFO + "/direct_url.json": '{"dir_info": {"editable": true}}',
                            SITE + "/p.pth": SRC + "\n", SRC + "/mmcv_lite/_ext.so": ""}, python=PY)
    assert editable_modules(host, dist, ["p.pth"]) == [SRC + "/mmcv_lite/_ext.so"]


def test_a_snapshot_keeps_the_record_lines_of_editable_files() -> None:
    kept = keep_libraries(RECORD + "pkg/_C.so,h,1\n")
    assert kept == ("__editable__.mmcv_lite-2.1.0.pth,sha256=a,83\n%s.py,sha256=b,9000\npkg/_C.so,h,1\n" % FINDER)
    assert editable_files(kept) == ["__editable__.mmcv_lite-2.1.0.pth", FINDER + ".py"]
    # a .pth below the top of the site directory or a quoted path is no editable file
    assert editable_files('a/b.pth,,\n"x,y.pth",,\n') == []
