"""cuDNN / NCCL / TensorRT copies and which one the dynamic loader picks."""

from __future__ import annotations

from envdoctor.facts import Facts
from envdoctor.probes import run_probes
from envdoctor.probes.libraries import parse_header_version, parse_ldconfig, resolve_soname

from .conftest import make_host

PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SITE = "/opt/venv/lib/python3.10/site-packages"
PIP_CUDNN_LIB = SITE + "/nvidia/cudnn/lib"

# `ldconfig -p | grep libcudnn` after installing NVIDIA's cuDNN 9 debs on Ubuntu 24.04,
# github.com/ultrasev/stream-whisper issue #28 (first lines kept; header line as ldconfig prints it).
# An excerpt of a real cache in glibc's format; as in tests/machines, the count header says how many
# lines are kept (a count above the lines is how envdoctor recognises cut-off output).
LDCONFIG_CUDNN9 = """5 libs found in cache `/etc/ld.so.cache'
\tlibcudnn_ops.so.9 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcudnn_ops.so.9
\tlibcudnn_ops.so (libc6,x86-64) => /lib/x86_64-linux-gnu/libcudnn_ops.so
\tlibcudnn.so.9 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcudnn.so.9
\tlibcudnn.so (libc6,x86-64) => /lib/x86_64-linux-gnu/libcudnn.so
\tlibc.so.6 (libc6,x86-64, OS ABI: Linux 3.2.0) => /lib/x86_64-linux-gnu/libc.so.6
"""

# cudnn_version.h of cuDNN 8.5.0 (the three defines, as shown by Select-String in a public detectron2
# setup note) and cudnn.h of cuDNN 5.1.10 (`grep CUDNN_MAJOR -A 2 /usr/local/cuda/include/cudnn.h`).
CUDNN_VERSION_H_8_5 = """#ifndef CUDNN_VERSION_H_
#define CUDNN_VERSION_H_

#define CUDNN_MAJOR 8
#define CUDNN_MINOR 5
#define CUDNN_PATCHLEVEL 0

#define CUDNN_VERSION (CUDNN_MAJOR * 1000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL)

#endif /* CUDNN_VERSION_H */
"""
CUDNN_H_5_1 = """#define CUDNN_MAJOR      5
#define CUDNN_MINOR      1
#define CUDNN_PATCHLEVEL 10
--
#define CUDNN_VERSION    (CUDNN_MAJOR * 1000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL)

#include "driver_types.h"
"""
# NvInferVersion.h of TensorRT 10.7.0 (NVIDIA's header, GitHub code search "#define NV_TENSORRT_MAJOR").
NVINFER_VERSION_H = """#ifndef NV_INFER_VERSION_H
#define NV_INFER_VERSION_H

#define NV_TENSORRT_MAJOR 10 //!< TensorRT major version.
#define NV_TENSORRT_MINOR 7  //!< TensorRT minor version.
#define NV_TENSORRT_PATCH 0  //!< TensorRT patch version.
#define NV_TENSORRT_BUILD 23  //!< TensorRT build number.
"""
# nccl.h's version block (NVIDIA/nccl src/nccl.h.in, as generated for 2.28.0).
NCCL_H = "#define NCCL_MAJOR 2\n#define NCCL_MINOR 28\n#define NCCL_PATCH 0\n#define NCCL_SUFFIX \"\"\n"


def lib_facts(host) -> Facts:
    results = run_probes(host, only=["cuda", "libraries"], parallel=False)
    assert all(r.status == "ok" for r in results), [r.error for r in results]
    return Facts(f for r in results for f in r.facts)


def shadowing_host(ld_library_path: str):
    """cuDNN 8 and 9.0 tarballs on LD_LIBRARY_PATH, pip cuDNN 9.1 in a venv, NVIDIA's cuDNN 9 debs in the cache."""
    return make_host(
        files={"/opt/cudnn/lib/libcudnn.so.8.9.7": "", "/opt/cudnn9/lib/libcudnn.so.9.0.0": "",
               PIP_CUDNN_LIB + "/libcudnn.so.9": "", "/lib/x86_64-linux-gnu/libcudnn.so.9.1.1": "",
               "/sbin/ldconfig": ""},
        dirs={"/opt/cudnn/lib": ["libcudnn.so.8"], "/opt/cudnn9/lib": ["libcudnn.so.9"],
              "/lib/x86_64-linux-gnu": ["libcudnn.so.9", "libcudnn_ops.so.9", "libcudnn.so", "libcudnn_ops.so",
                                        "libc.so.6"],
              SITE: ["nvidia_cudnn_cu12-9.1.0.70.dist-info"]},
        links={"/opt/cudnn/lib/libcudnn.so.8": "libcudnn.so.8.9.7",
               "/opt/cudnn9/lib/libcudnn.so.9": "libcudnn.so.9.0.0",
               "/lib/x86_64-linux-gnu/libcudnn.so.9": "libcudnn.so.9.1.1"},
        commands=[{"argv": ["/sbin/ldconfig", "-p"], "stdout": LDCONFIG_CUDNN9}],
        environ={"PATH": PATH, "LD_LIBRARY_PATH": ld_library_path},
        python={"executable": "/opt/venv/bin/python", "version": "3.10.12", "implementation": "cpython",
                "prefix": "/opt/venv", "base_prefix": "/usr", "sys_path": [SITE]})


def test_ld_library_path_cudnn8_is_what_the_loader_picks_and_pip_cudnn9_is_listed():
    f = lib_facts(shadowing_host("/opt/cudnn/lib"))
    choice = f.value("libraries.loader_choice")
    assert choice["libcudnn.so.8"]["path"] == "/opt/cudnn/lib/libcudnn.so.8"
    assert choice["libcudnn.so.8"]["via"] == "LD_LIBRARY_PATH"
    assert choice["libcudnn.so.8"]["version"] == "8.9.7"
    # libcudnn.so.9: the cache copy wins for a program without RUNPATH; the pip copy is not on its path
    assert choice["libcudnn.so.9"]["via"] == "ldconfig cache"
    assert choice["libcudnn.so.9"]["version"] == "9.1.1"
    copies = f.value("libraries.cudnn")
    assert copies[0]["path"] == "/opt/cudnn/lib/libcudnn.so.8"  # loader order: LD_LIBRARY_PATH first
    pip = [c for c in copies if c["found_by"] == "pip wheel nvidia-cudnn-cu12" and c["kind"] == "library"]
    assert pip and pip[0]["version"] == "9.1.0.70" and pip[0]["path"] == PIP_CUDNN_LIB + "/libcudnn.so.9"


def test_ld_library_path_shadows_a_frameworks_runpath():
    # torch's RUNPATH points at the pip wheel; LD_LIBRARY_PATH is searched before RUNPATH, so 9.0.0 wins.
    host = shadowing_host("/opt/cudnn/lib:/opt/cudnn9/lib")
    got = resolve_soname(host, "libcudnn.so.9", runpath=[PIP_CUDNN_LIB])
    assert got["path"] == "/opt/cudnn9/lib/libcudnn.so.9" and got["version"] == "9.0.0"
    assert [o["path"] for o in got["others"]] == [PIP_CUDNN_LIB + "/libcudnn.so.9",
                                                  "/lib/x86_64-linux-gnu/libcudnn.so.9"]
    # without LD_LIBRARY_PATH the RUNPATH copy wins over the cache
    got = resolve_soname(host, "libcudnn.so.9", runpath=[PIP_CUDNN_LIB], ld_library_path=[])
    assert got["via"] == "RUNPATH"
    assert resolve_soname(host, "libcudnn.so.7", ld_library_path=[])["path"] is None


def test_headers_nccl_tensorrt_and_packages():
    host = make_host(files={"/usr/include/x86_64-linux-gnu/cudnn_version.h": CUDNN_VERSION_H_8_5,
                            "/usr/local/cuda-8.0/include/cudnn.h": CUDNN_H_5_1,
                            "/usr/local/cuda-8.0/version.txt": "CUDA Version 8.0.61\n",
                            "/usr/include/nccl.h": NCCL_H,
                            "/usr/include/x86_64-linux-gnu/NvInferVersion.h": NVINFER_VERSION_H,
                            "/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.0": "",
                            "/var/lib/dpkg/status": "Package: libnccl2\nStatus: install ok installed\n"
                                                    "Version: 2.28.0-1+cuda12.9\n"},
                     dirs={"/usr/lib/x86_64-linux-gnu": ["libnccl.so.2"]},
                     links={"/usr/lib/x86_64-linux-gnu/libnccl.so.2": "libnccl.so.2.28.0"})
    f = lib_facts(host)
    cudnn = {c["path"]: c["version"] for c in f.value("libraries.cudnn")}
    assert cudnn == {"/usr/include/x86_64-linux-gnu/cudnn_version.h": "8.5.0",
                     "/usr/local/cuda-8.0/include/cudnn.h": "5.1.10"}
    nccl = f.value("libraries.nccl")
    assert [c["kind"] for c in nccl] == ["library", "header", "package"]
    assert [c["version"] for c in nccl] == ["2.28.0", "2.28.0", "2.28.0"]
    assert f.value("libraries.loader_choice")["libnccl.so.2"]["via"] == "default dir"
    assert f.value("libraries.tensorrt")[0]["version"] == "10.7.0"
    # no ldconfig on this machine: said so, and the rest is still reported
    assert f.get("libraries.ld_cache").status == "unknown"


def test_hung_ldconfig_is_timed_out():
    host = make_host(files={"/sbin/ldconfig": ""},
                     commands=[{"argv": ["/sbin/ldconfig", "-p"], "timed_out": True, "returncode": None}])
    f = lib_facts(host)
    assert f.get("libraries.ld_cache").status == "timed_out"
    assert f.value("libraries.cudnn") == []


def test_parsers():
    assert parse_ldconfig(LDCONFIG_CUDNN9)[2] == ("libcudnn.so.9", "libc6,x86-64",
                                                  "/lib/x86_64-linux-gnu/libcudnn.so.9")
    assert parse_header_version(NVINFER_VERSION_H, ("NV_TENSORRT_MAJOR", "NV_TENSORRT_MINOR",
                                                    "NV_TENSORRT_PATCH")) == "10.7.0"
    assert parse_header_version("/* truncated */", ("CUDNN_MAJOR", "CUDNN_MINOR")) is None


def test_the_loader_cache_is_read_once_per_diagnose():
    """The libraries, linkage and dlopen probes all need `ldconfig -p`: on the live H100 capture (torch, JAX,
    CuPy) it used to run three times per diagnose; the report is the same with one run."""
    import os

    from envdoctor.host.snapshot import SnapshotHost, load_snapshot
    from envdoctor.report import diagnose

    snap = os.path.join(os.path.dirname(os.path.abspath(__file__)), "live", "h100-ubuntu2404-container",
                        "snapshot.json.gz")
    host = SnapshotHost(load_snapshot(snap), "h100")
    asked = []
    run = host.run

    def counting(argv, timeout=None):
        asked.append(list(argv))
        return run(argv, timeout)

    host.run = counting  # type: ignore[method-assign]
    report = diagnose(host)
    assert sum(1 for a in asked if a[-1:] == ["-p"] and a[0].endswith("ldconfig")) == 1
    facts = {f.key: f.value for f in report.facts}
    assert facts["libraries.ld_cache"]["entries"] > 0
