"""cuDNN's pieces come from one release: the shim (libcudnn.so.9) opens its sub-libraries by soname, and a copy of
another release that the loader finds first is mixed into it (CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH, 'undefined
symbol: cudnnGetLibConfig'). Whether that happens is the loader's rule: a real x86_64 nvidia-cudnn-cu12 wheel's
libraries carry DT_RUNPATH $ORIGIN, so dlopen from the shim finds the wheel's own sub-libraries before the ld.so
cache.

The ELF records below are what ``readelf -d`` prints for
nvidia_cudnn_cu12-9.10.2.21-py3-none-manylinux_2_27_x86_64.whl (the wheel torch 2.8.0+cu128 pins; read 2026-11-30):
libcudnn.so.9 RUNPATH [$ORIGIN], libcudnn_graph.so.9 and libcudnn_ops.so.9 RUNPATH
[$ORIGIN:$ORIGIN/../../cublas/lib:$ORIGIN/../../nvrtc/lib]. A shim without RUNPATH is what cuDNN 8's libraries and
the aarch64 cuDNN 9 wheels before pytorch/builder#1859 record ("readelf -d libcudnn_graph.so.9 | grep -i runpath
returns nothing, which is not the case for x86_64"). The files' contents are stand-ins (no GPU library runs here);
the wheel's release is the one ``torch_host`` installs (9.1.0.70), the system cuDNN (9.0.0, older, or 9.1.1, newer)
is in Debian's /usr/lib/x86_64-linux-gnu, listed by the loader cache.
"""

from __future__ import annotations

import envdoctor.probes.linkage  # noqa: F401 - registers the linkage probe
from envdoctor.checks.closure import library_closure

from .test_checks_libraries import LIB, _with_gpu, torch_host
from .test_probe_frameworks import SITE

WHEEL = SITE + "/nvidia/cudnn/lib"
SYSTEM = "/usr/lib/x86_64-linux-gnu"
PARTS = ("libcudnn_graph.so.9", "libcudnn_ops.so.9", "libcudnn_cnn.so.9", "libcudnn_adv.so.9",
         "libcudnn_engines_precompiled.so.9", "libcudnn_engines_runtime_compiled.so.9", "libcudnn_heuristic.so.9")
LIBC = ["libdl.so.2", "librt.so.1", "libpthread.so.0", "libstdc++.so.6", "libm.so.6", "libgcc_s.so.1", "libc.so.6"]
SUB_RUNPATH = ["$ORIGIN:$ORIGIN/../../cublas/lib:$ORIGIN/../../nvrtc/lib"]


def cudnn_host(shim_runpath=True, system=True, system_version="9.0.0"):
    host = torch_host()
    doc = host.doc
    # torch 2.8's libtorch_cuda.so carries DT_RUNPATH (not inherited by what it loads), as torch wheels have since
    # 1.13 (pytorch/builder#1150)
    doc["elf"][LIB + "/libtorch_cuda.so"].update(rpath=[], runpath=doc["elf"][LIB + "/libtorch_cuda.so"]["rpath"])
    doc["elf"][WHEEL + "/libcudnn.so.9"] = {"soname": "libcudnn.so.9", "needed": LIBC, "rpath": [],
                                            "runpath": ["$ORIGIN"] if shim_runpath else []}
    for name in PARTS:
        doc["files"]["%s/%s" % (WHEEL, name)] = {"text": ""}
        doc["dirs"][WHEEL]["entries"].append(name)
        doc["elf"]["%s/%s" % (WHEEL, name)] = {"soname": name, "needed": ["libz.so.1"] + LIBC, "rpath": [],
                                               "runpath": SUB_RUNPATH}
    cache = ""
    if system:
        d = doc["dirs"].setdefault(SYSTEM, {"entries": []})
        for name in ("libcudnn.so.9",) + PARTS:
            real = name + system_version[1:]
            d["entries"] += [name, real]
            doc["files"]["%s/%s" % (SYSTEM, real)] = {"text": ""}
            doc["links"]["%s/%s" % (SYSTEM, name)] = {"target": real}
            doc["elf"]["%s/%s" % (SYSTEM, real)] = {"soname": name, "needed": LIBC, "rpath": [], "runpath": []}
            cache += "\t%s (libc6,x86-64) => %s/%s\n" % (name, SYSTEM, name)
    for c in doc["commands"]:
        if c["argv"] == ["/sbin/ldconfig", "-p"]:
            c["stdout"] = "%d libs found in cache `/etc/ld.so.cache'\n%s\tlibc.so.6 (libc6,x86-64) => " \
                          "/lib/x86_64-linux-gnu/libc.so.6\n" % (cache.count("\n") + 1, cache)
    assert LIB + "/libtorch_cuda.so" in doc["elf"]
    return type(host)(doc)


def run(host, fn):
    """The findings on a machine with a GPU (what cuDNN opens at run time is judged only there): an RTX 3060."""
    return {f.code: f for f in fn(_with_gpu(host, "8.6", "NVIDIA GeForce RTX 3060"))}


def links(host):
    from .conftest import probe_facts
    return {lk["soname"]: lk for lk in probe_facts(host).value("linkage.torch.closure")["links"]}


def test_a_real_cudnn_9_wheel_opens_its_own_sub_libraries_beside_an_older_system_cudnn():
    # RUNPATH $ORIGIN on the shim: dlopen("libcudnn_graph.so.9") finds the wheel's copy before the ld.so cache
    host = cudnn_host()
    graph = links(host)["libcudnn_graph.so.9"]
    assert graph["how"] == "dlopen" and graph["via"] == "RUNPATH" and graph["path"] == WHEEL + "/libcudnn_graph.so.9"
    assert run(host, library_closure) == {}


def test_a_real_cudnn_9_wheel_without_any_system_cudnn_is_quiet():
    # the healthy torch 2.8 machine: nothing unsearched, nothing missing
    assert run(cudnn_host(system=False), library_closure) == {}


def test_a_shim_without_runpath_takes_the_older_system_sub_libraries_and_says_so():
    f = run(cudnn_host(shim_runpath=False), library_closure)["linkage.older_than_shipped"]
    assert f.severity == "error"
    assert "/libcudnn_" in f.title and SYSTEM in f.title and "9.0.0" in f.title and "9.1.0.70" in f.title
    assert WHEEL + "/libcudnn_" in f.title
    assert "one release" in f.detail and "SUBLIBRARY_VERSION_MISMATCH" in f.detail
    assert f.fix.commands == ["export LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" % WHEEL]


def test_a_shim_without_runpath_and_no_other_cudnn_still_cannot_find_its_sub_libraries():
    f = run(cudnn_host(shim_runpath=False, system=False), library_closure)["linkage.missing"]
    assert WHEEL in f.title and "does not search" in f.title


def test_a_shim_without_runpath_taking_a_newer_system_release_is_a_warning_that_says_why():
    f = run(cudnn_host(shim_runpath=False, system_version="9.1.1"), library_closure)["linkage.shadowed"]
    assert f.severity == "warning" and "9.1.1" in f.title and SYSTEM in f.title and "one release" in f.detail
