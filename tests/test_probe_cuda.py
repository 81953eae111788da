"""The CUDA toolkits probe, run on miniature machines built from real files and outputs."""

from __future__ import annotations

from envdoctor.facts import Facts
from envdoctor.probes import run_probes
from envdoctor.probes.cuda import parse_dpkg_status, parse_nvcc_version, upstream_version

from .conftest import make_host

PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# `cat /usr/local/cuda-11.5/version.json` from a public Ubuntu setup log (GitHub code search,
# "cat /usr/local/cuda-11.5/version.json"), first entries kept verbatim.
VERSION_JSON_11_5 = """{
   "cuda" : {
      "name" : "CUDA SDK",
      "version" : "11.5.2"
   },
   "cuda_cudart" : {
      "name" : "CUDA Runtime (cudart)",
      "version" : "11.5.117"
   },
   "cuda_nvcc" : {
      "name" : "CUDA NVCC",
      "version" : "11.5.119"
   }
}
"""

# Its nvcc, same log; also github.com/feuyeux/hello-ai toolkit/cuda.version.md.
NVCC_11_5 = """nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2021 NVIDIA Corporation
Built on Thu_Nov_18_09:45:30_PST_2021
Cuda compilation tools, release 11.5, V11.5.119
Build cuda_11.5.r11.5/compiler.30672275_0
"""

# `cat /usr/local/cuda/version.txt` on CUDA 10.2 (quoted in many READMEs, e.g. a PaddlePaddle inference guide).
VERSION_TXT_10_2 = "CUDA Version 10.2.89\n"

# This very machine (Debian 12, /usr/local/cuda-13.0 assembled from pip wheels, no version.json):
# `ls /usr/local/cuda-13.0/dist-info` and `nvcc --version`.
CUDA13_DIST_INFO = [
    "nvidia_cuda_cccl-13.0.85.dist-info", "nvidia_cuda_crt-13.0.88.dist-info",
    "nvidia_cuda_culibos-13.0.85.dist-info", "nvidia_cuda_cupti-13.0.85.dist-info",
    "nvidia_cuda_cuxxfilt-13.0.85.dist-info", "nvidia_cuda_nvcc-13.0.88.dist-info",
    "nvidia_cuda_profiler_api-13.0.85.dist-info", "nvidia_cuda_runtime-13.0.96.dist-info",
    "nvidia_nvtx-13.0.85.dist-info", "nvidia_nvvm-13.0.88.dist-info",
]
NVCC_13_0 = """nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2025 NVIDIA Corporation
Built on Wed_Aug_20_01:58:59_PM_PDT_2025
Cuda compilation tools, release 13.0, V13.0.88
Build cuda_13.0.r13.0/compiler.36424714_0
"""


def cuda_facts(host) -> Facts:
    results = run_probes(host, only=["cuda"], parallel=False)
    assert results[0].status == "ok", results[0].error
    return Facts(results[0].facts)


def toolkit(facts: Facts, path: str):
    matches = [t for t in facts.value("cuda.toolkits") if t["path"] == path]
    assert len(matches) == 1, facts.value("cuda.toolkits")
    return matches[0]


def test_this_machines_pip_assembled_cuda_13():
    host = make_host(
        files={"/usr/local/bin/nvcc": '#!/bin/sh\nexec /usr/local/cuda-13.0/bin/nvcc "$@"\n',
               "/usr/local/cuda-13.0/bin/nvcc": "", "/usr/local/cuda-13.0/lib/libcudart.so.13": ""},
        dirs={"/usr/local/cuda-13.0/dist-info": CUDA13_DIST_INFO, "/usr/local/cuda-13.0/lib64": ["libcudart.so.13"],
              "/usr/local": ["cuda"]},
        links={"/usr/local/cuda": "/usr/local/cuda-13.0", "/usr/local/cuda-13.0/lib64": "lib"},
        commands=[{"argv": ["/usr/local/bin/nvcc", "--version"], "stdout": NVCC_13_0}],
        environ={"PATH": PATH})
    f = cuda_facts(host)
    tk = toolkit(f, "/usr/local/cuda-13.0")
    assert tk["kind"] == "pip-assembled"
    assert tk["version"] == "13.0.96" and tk["release"] == "13.0"
    assert "nvidia_cuda_runtime-13.0.96.dist-info" in tk["source"]
    assert tk["nvcc"] is True and tk["cudart"] == "13"
    assert f.value("cuda.default_symlink")["resolved"] == "/usr/local/cuda-13.0"
    assert f.value("cuda.default_symlink")["version"] == "13.0.96"
    nvcc = f.value("cuda.nvcc")
    assert nvcc["version"] == "13.0.88" and nvcc["release"] == "13.0"
    # /usr/local/bin/nvcc is a wrapper script: not a toolkit of its own, tied to 13.0 by version
    assert nvcc["toolkit"] == "/usr/local/cuda-13.0"
    assert [t["path"] for t in f.value("cuda.toolkits")] == ["/usr/local/cuda-13.0"]


def test_old_toolkit_with_version_txt():
    host = make_host(files={"/usr/local/cuda-10.2/version.txt": VERSION_TXT_10_2,
                            "/usr/local/cuda-10.2/bin/nvcc": "",
                            "/usr/local/cuda-10.2/lib64/libcudart.so.10.2.89": "",
                            "/usr/local/cuda-10.2/lib64/libcudart.so.10.2": ""})
    tk = toolkit(cuda_facts(host), "/usr/local/cuda-10.2")
    assert tk["version"] == "10.2.89" and tk["kind"] == "system"
    assert tk["source"] == "file:/usr/local/cuda-10.2/version.txt"
    assert tk["cudart"] == "10.2.89"


def test_two_toolkits_symlink_at_one_cuda_home_at_the_other():
    host = make_host(
        files={"/usr/local/cuda-11.5/version.json": VERSION_JSON_11_5, "/usr/local/cuda-11.5/bin/nvcc": "",
               "/usr/local/cuda-10.2/version.txt": VERSION_TXT_10_2, "/usr/local/cuda-10.2/bin/nvcc": ""},
        links={"/usr/local/cuda": "/usr/local/cuda-11.5"},
        commands=[{"argv": ["/usr/local/cuda-10.2/bin/nvcc", "--version"],
                   "stdout": NVCC_11_5.replace("11.5", "10.2").replace("V10.2.119", "V10.2.89")}],
        environ={"PATH": "/usr/local/cuda-10.2/bin:" + PATH, "CUDA_HOME": "/usr/local/cuda-10.2"})
    f = cuda_facts(host)
    assert sorted(t["path"] for t in f.value("cuda.toolkits")) == ["/usr/local/cuda-10.2", "/usr/local/cuda-11.5"]
    assert f.value("cuda.default_symlink")["version"] == "11.5.2"
    home = f.value("cuda.home")
    assert home["var"] == "CUDA_HOME" and home["version"] == "10.2.89"
    assert f.value("cuda.nvcc")["toolkit"] == "/usr/local/cuda-10.2"
    assert toolkit(f, "/usr/local/cuda-11.5")["source"] == "file:/usr/local/cuda-11.5/version.json"


def test_garbled_version_json_is_unknown_with_reason_not_a_crash():
    host = make_host(files={"/usr/local/cuda-12.4/version.json": '{\n   "cuda" : {\n      "name" : "CUDA SDK",\n'})
    tk = toolkit(cuda_facts(host), "/usr/local/cuda-12.4")
    assert tk["version"] is None
    assert "version.json is garbled" in tk["reason"]


def test_hung_nvcc_is_a_timed_out_fact():
    host = make_host(files={"/usr/local/cuda-11.5/version.json": VERSION_JSON_11_5,
                            "/usr/local/cuda-11.5/bin/nvcc": ""},
                     commands=[{"argv": ["/usr/local/cuda-11.5/bin/nvcc", "--version"], "timed_out": True,
                                "returncode": None, "duration": 15.0}],
                     environ={"PATH": "/usr/local/cuda-11.5/bin:" + PATH})
    f = cuda_facts(host)
    assert f.get("cuda.nvcc").status == "timed_out"
    assert "hung" in f.get("cuda.nvcc").reason
    assert toolkit(f, "/usr/local/cuda-11.5")["version"] == "11.5.2"  # the rest still reported


def test_conda_cudatoolkit_11_8():
    # conda-meta file names are name-version-build.json (the defaults channel's cudatoolkit 11.8.0 build).
    host = make_host(dirs={"/home/u/miniconda3/envs/tf/conda-meta": [
        "cudatoolkit-11.8.0-h6a678d5_0.json", "cudnn-8.9.2.26-cuda11_0.json", "python-3.10.14-h955ad1f_1.json",
        "history"]},
        files={"/home/u/.conda/environments.txt": "/home/u/miniconda3\n/home/u/miniconda3/envs/tf\n"},
        environ={"PATH": PATH, "HOME": "/home/u", "CONDA_PREFIX": "/home/u/miniconda3/envs/tf"})
    f = cuda_facts(host)
    envs = {e["prefix"]: e for e in f.value("cuda.conda")}
    tf = envs["/home/u/miniconda3/envs/tf"]
    assert tf["cuda_version"] == "11.8.0" and tf["found_by"] == "env:CONDA_PREFIX"
    assert [p["name"] for p in tf["packages"]] == ["cudatoolkit"]
    assert envs["/home/u/miniconda3"]["cuda_version"] is None
    tk = toolkit(f, "/home/u/miniconda3/envs/tf")
    assert tk["kind"] == "conda" and tk["version"] == "11.8.0" and tk["nvcc"] is False


def test_pip_wheels_only():
    # The CUDA wheels torch 2.4.0+cu121 pins (its METADATA Requires-Dist), and CUDA 13's unsuffixed runtime.
    site = "/usr/lib/python3/dist-packages"
    host = make_host(dirs={site: ["nvidia_cuda_runtime_cu12-12.1.105.dist-info",
                                  "nvidia_cudnn_cu12-9.1.0.70.dist-info", "nvidia_ml_py-12.535.161.dist-info",
                                  "torch-2.4.0+cu121.dist-info"],
                           "/opt/venv/site": ["nvidia_cuda_runtime-13.0.96.dist-info"]},
                     python={"executable": "/usr/bin/python3", "version": "3.10.12", "implementation": "cpython",
                             "prefix": "/usr", "base_prefix": "/usr", "sys_path": [site, "/opt/venv/site"]})
    f = cuda_facts(host)
    wheels = {w["name"]: w for w in f.value("cuda.pip_wheels")}
    assert set(wheels) == {"nvidia-cuda-runtime-cu12", "nvidia-cudnn-cu12", "nvidia-cuda-runtime"}
    assert wheels["nvidia-cuda-runtime-cu12"]["version"] == "12.1.105"
    assert wheels["nvidia-cuda-runtime-cu12"]["cuda_major"] == 12
    assert wheels["nvidia-cuda-runtime"]["cuda_major"] == 13
    assert f.value("cuda.toolkits") == []
    assert f.value("cuda.default_symlink") is None and f.value("cuda.nvcc") is None


def test_forward_compat_and_ld_library_path():
    host = make_host(files={"/usr/local/cuda-12.4/version.json": VERSION_JSON_11_5.replace("11.5.2", "12.4.1"),
                            "/usr/local/cuda-12.4/compat/libcuda.so.550.54.15": "",
                            "/usr/local/cuda-12.4/compat/libcuda.so.1": ""},
                     environ={"PATH": PATH, "LD_LIBRARY_PATH": "/usr/local/cuda-12.4/compat::/opt/cudnn8/lib"})
    f = cuda_facts(host)
    assert f.value("cuda.forward_compat") == [{"path": "/usr/local/cuda-12.4/compat/libcuda.so.550.54.15",
                                               "driver_version": "550.54.15",
                                                   "real": "/usr/local/cuda-12.4/compat/libcuda.so.550.54.15",
                                                   "toolkit": "/usr/local/cuda-12.4"}]
    assert f.value("cuda.ld_library_path") == ["/usr/local/cuda-12.4/compat", "/opt/cudnn8/lib"]


# A dpkg status file: the gcc-12 stanza copied from this machine's /var/lib/dpkg/status (Debian 12), and
# NVIDIA-repo stanzas with the names/versions of their apt Packages index (cuda-cudart-12-6 12.6.68-1).
DPKG_STATUS = """Package: gcc-12
Status: install ok installed
Priority: optional
Section: devel
Installed-Size: 68236
Maintainer: Debian GCC Maintainers <debian-gcc@lists.debian.org>
Architecture: amd64
Version: 12.2.0-14+deb12u1
Description: GNU C compiler
 This is the GNU C compiler, a fairly portable optimizing compiler for C.

Package: cuda-cudart-12-6
Status: install ok installed
Architecture: amd64
Version: 12.6.68-1
Provides: libcudart.so.12 (= 12.6.68)
Description: CUDA Runtime native Libraries

Package: cuda-toolkit-12-6
Status: install ok installed
Architecture: amd64
Version: 12.6.3-1
Description: CUDA Toolkit 12.6 meta-package

Package: libcudnn8
Status: deinstall ok config-files
Architecture: amd64
Version: 8.9.7.29-1+cuda12.2
"""


def test_dpkg_packages_are_kept_and_tied_to_the_toolkit():
    pkgs = parse_dpkg_status(DPKG_STATUS)
    assert [(p["name"], p["version"]) for p in pkgs] == [("cuda-cudart-12-6", "12.6.68-1"),
                                                        ("cuda-toolkit-12-6", "12.6.3-1")]
    host = make_host(files={"/var/lib/dpkg/status": DPKG_STATUS,
                            "/usr/local/cuda-12.6/version.json": VERSION_JSON_11_5.replace("11.5.2", "12.6.3")})
    f = cuda_facts(host)
    assert f.get("cuda.packages").source == "file:/var/lib/dpkg/status"
    assert toolkit(f, "/usr/local/cuda-12.6")["package"] == "cuda-toolkit-12-6 12.6.3-1"


def test_rpm_packages_when_there_is_no_dpkg():
    out = "cuda-toolkit-12-4 12.4.1-1\nbash 5.1.8-9.el9\nlibcudnn9-cuda-12 9.1.0.70-1\n"
    host = make_host(files={"/usr/bin/rpm": ""},
                     commands=[{"argv": ["/usr/bin/rpm", "-qa", "--qf", "%{NAME} %{VERSION}-%{RELEASE}\n"],
                                "stdout": out}])
    f = cuda_facts(host)
    names = [p["name"] for p in f.value("cuda.packages")]
    assert names == ["cuda-toolkit-12-4", "libcudnn9-cuda-12"]
    tk = toolkit(f, "/usr/local/cuda-12.4")
    assert tk["kind"] == "distro" and "missing" in tk["reason"]


def test_no_package_database_is_unknown():
    f = cuda_facts(make_host())
    assert f.get("cuda.packages").status == "unknown"


def test_parsers():
    assert parse_nvcc_version(NVCC_11_5) == ("11.5", "11.5.119")
    assert parse_nvcc_version("garbage") is None
    assert upstream_version("1:11.5.1-1ubuntu1") == "11.5.1"
    assert upstream_version("8.9.7.29-1+cuda12.2") == "8.9.7.29"


def test_dpkg_scan_finds_packages_wherever_the_name_sits():
    # First line of the file, no space after "Package:", names only in Depends/Description lines
    # (not packages), and a last stanza without a trailing newline.
    text = ("Package: libcudnn9-cuda-12\nStatus: install ok installed\nVersion: 9.1.0.70-1\n\n"
            "Package: python3-foo\nStatus: install ok installed\nDepends: cuda-runtime-12-4, libnccl2\n"
            "Description: mentions tensorrt and cublas\n\n"
            "Package:libnccl2\nStatus: install ok installed\nVersion: 2.21.5-1+cuda12.4\n\n"
            "Package: libcublas-12-4\nStatus: install ok installed\nVersion: 12.4.5.8-1")
    assert [(p["name"], p["version"]) for p in parse_dpkg_status(text)] == [
        ("libcublas-12-4", "12.4.5.8-1"), ("libcudnn9-cuda-12", "9.1.0.70-1"), ("libnccl2", "2.21.5-1+cuda12.4")]
    assert parse_dpkg_status("Package: bash\nStatus: install ok installed\nVersion: 5.2\n") == []
