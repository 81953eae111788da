"""Torch7's Lua rock trees (probe ``lua``): cutorch's compute capability floor (compat.rock-arch) and cudnn.torch's
own cuDNN bounds (libraries.rock-cudnn).

The machines are the B86h corpus cases' (their trees laid out as torch/distro's install.sh lays them out, ffi.lua an
excerpt of soumith/cudnn.torch master's, the R5 bindings). The R6 excerpt below is soumith/cudnn.torch branch R6's
ffi.lua (b76500e, 2017-05-30) lines 1615-1646, its library load and version check. GPUs are NVML's answers as the
cases record them (no GPU runs here)."""

from __future__ import annotations

import copy

from envdoctor.checks import CheckContext
from envdoctor.checks.libraries.rock_cudnn import rock_cudnn
from envdoctor.facts import Facts, ok

from .conftest import corpus_snapshot, snapshot_findings

C1060 = "b86h-ubuntu1404-4x-tesla-c1060-cc13-driver34093-cuda65-torch7-cutorch-build-fails-needs-cc20"
R5 = "b86h-ubuntu1604-gtx1080-driver37539-cuda8061-cudnn6020-torch7-cudnn-torch-r5-bindings-need-cudnn5"
FFI = "/home/zadran/torch/install/share/lua/5.1/cudnn/ffi.lua"

R6_FFI = """local CUDNN_PATH = os.getenv('CUDNN_PATH')
if CUDNN_PATH then
    print('Found Environment variable CUDNN_PATH = ' .. CUDNN_PATH)
    cudnn.C = ffi.load(CUDNN_PATH)
else
    local libnames = {'libcudnn.so.6', 'libcudnn.6.dylib', 'cudnn64_6.dll'}
    local ok = false
    for i=1,#libnames do
        ok = pcall(function () cudnn.C = ffi.load(libnames[i]) end)
        if ok then break; end
    end
end
cudnn.version = tonumber(cudnn.C.cudnnGetVersion())
if cudnn.version < 6002 then
  error('These bindings are for version 6002 or above, '
        .. 'while the loaded CuDNN is version: ' .. cudnn.version
           .. '  \\nAre you using an older or newer version of CuDNN?')
end
"""


def _codes(doc, *codes):
    return [f for f in snapshot_findings(doc) if f.code in codes]


def _set_cc(doc, cc):
    for key, entry in doc["nvml"]["data"].items():
        if key.endswith(".compute_capability"):
            entry["value"] = list(cc)


def test_gpu_below_cutorch_floor_while_its_build_fails_is_an_error_naming_the_capability():
    found = _codes(corpus_snapshot(C1060), "gpu.too_old_for_framework")
    assert [f.severity for f in found] == ["error"]
    assert "Tesla C1060" in found[0].title and "1.3" in found[0].title and "2.0" in found[0].title
    assert "being built" in found[0].detail and "CPU" in found[0].fix.text


def test_cutorch_floor_quiet_on_a_fermi_gpu_and_without_cutorch():
    doc = corpus_snapshot(C1060)
    _set_cc(doc, (2, 0))
    assert _codes(doc, "gpu.too_old_for_framework") == []
    doc = corpus_snapshot(C1060)  # a Torch7 used on the CPU: no cutorch installed, none being built
    doc["dirs"] = {k: v for k, v in doc["dirs"].items() if "/pkg" not in k}
    top = doc["dirs"]["/home/lran/torch"]
    top["entries"] = [e for e in top["entries"] if e != "pkg"]
    for k in [k for k in doc["files"] if "/pkg/" in k]:
        del doc["files"][k]
    assert _codes(doc, "gpu.too_old_for_framework") == []


def test_installed_cutorch_on_an_old_gpu_is_an_error():
    doc = corpus_snapshot(R5)
    _set_cc(doc, (1, 3))
    found = _codes(doc, "gpu.too_old_for_framework")
    assert len(found) == 1 and "installed in /home/zadran/torch/install" in found[0].detail


def test_r5_bindings_loading_cudnn6_by_cudnn_path_is_a_major_mismatch():
    found = _codes(corpus_snapshot(R5), "cudnn.major_mismatch", "cudnn.framework_cannot_load")
    assert [(f.code, f.severity) for f in found] == [("cudnn.major_mismatch", "error")]
    assert "6.0.20" in found[0].title and "5005 <= version < 6000" in found[0].title
    assert "6020" in found[0].detail and "CUDNN_PATH" in found[0].detail
    assert any("cudnn.torch/R6/cudnn-scm-1.rockspec" in str(c) for c in found[0].fix.commands)


def test_r6_bindings_accept_cudnn6_quiet():
    doc = corpus_snapshot(R5)
    doc["files"][FFI] = dict(doc["files"][FFI], text=R6_FFI)
    assert _codes(doc, "cudnn.major_mismatch", "cudnn.framework_cannot_load") == []


def test_r5_bindings_without_cudnn_path_find_no_libcudnn5():
    doc = corpus_snapshot(R5)
    doc["environ"] = {k: v for k, v in doc["environ"].items() if k != "CUDNN_PATH"}
    found = _codes(doc, "cudnn.major_mismatch", "cudnn.framework_cannot_load")
    assert [f.code for f in found] == ["cudnn.framework_cannot_load"] and "libcudnn.so.5" in found[0].title


def test_garbled_ffi_lua_is_never_a_crash():
    doc = corpus_snapshot(R5)
    for junk in ("", "cudnn.version < ", "\x00\xff" * 40, "local libnames = {'libcudnn.so.'}"):
        d = copy.deepcopy(doc)
        d["files"][FFI] = dict(d["files"][FFI], text=junk)
        assert _codes(d, "cudnn.major_mismatch") == []


def _bindings(version, lo=5005, hi=6000):
    # the probe's reading of master's ffi.lua (the R5 case's) with the loader giving a file named libcudnn.so.<v>
    tree = {"prefix": "/home/zadran/torch/install", "installed": ["cudnn"], "checkout": None, "building": [],
            "cudnn_bindings": {"path": FFI, "libnames": ["libcudnn.so.5"], "min": lo, "max": hi,
                               "cudnn_path": True,
                               "loaded": {"path": "/usr/local/cuda/lib64/libcudnn.so", "via": "LD_LIBRARY_PATH",
                                          "resolved": "/usr/local/cuda/lib64/libcudnn.so." + version,
                                          "version": version}}}
    facts = Facts([ok("lua.trees", [tree], "derived", "Lua rock trees")])
    return [f.code for f in rock_cudnn(CheckContext(facts, []))]


def test_only_the_major_known_is_judged_when_every_release_of_it_is_refused():
    assert _bindings("6") == ["cudnn.major_mismatch"]
    assert _bindings("4") == ["cudnn.major_mismatch"]
    assert _bindings("5") == []  # 5.0.x is below 5005, 5.1 is not: cannot tell
    assert _bindings("5.1.10") == []
    assert _bindings("5.0.4") == ["cudnn.major_mismatch"]
    assert _bindings("7.0.5", lo=7000, hi=None) == []
    assert _bindings("garbage") == []
