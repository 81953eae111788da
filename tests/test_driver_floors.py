"""Driver floors that applications state for themselves (matrix area ``driver_floors``; probe ``apps``; check
``compat.driver-floors``).

The layouts are the real ones: a conda environment of RAPIDS 21.12 (conda-meta records named
``<name>-<version>-<build>.json``, builds ``cuda_11_py38_...`` / ``cuda11_...`` as rapidsai's channel names them,
RSN 11's example); Ollama as its install script lays it out (``/usr/local/bin/ollama``, runners in
``/usr/lib/ollama/cuda_v12``), ``ollama --version`` printing "ollama version is X". NVML is a stand-in (no GPU
here): the GPU's compute capability is given as a fact.
"""

from __future__ import annotations

import pytest

from envdoctor import matrix
from envdoctor.checks import CheckContext
from envdoctor.checks.compat.driver_floors import driver_floors
from envdoctor.facts import Facts, ok
from envdoctor.matrix import ffmpeg, floors
from envdoctor.probes.apps import (
    bundled_ffmpeg_headers,
    find_floor_packages,
    find_nv_codec_headers,
    find_ollama,
    find_optix_packages,
    find_rapids,
    packaged_nv_codec_headers,
)

from .conftest import make_host

ENV = "/home/user/miniconda3/envs/rapids-21.12"


def rapids_host(release="21.12.02", build="cuda_11_py38_g06540b9b37_0"):
    meta = ENV + "/conda-meta/"
    return make_host(files={meta + "cudf-%s-%s.json" % (release, build): "{}",
                            meta + "cudatoolkit-11.0.221-h6bb024c_0.json": "{}",
                            meta + "python-3.8.12-h12debd9_0_cpython.json": "{}"},
                     environ={"CONDA_PREFIX": ENV, "HOME": "/home/user", "PATH": "/usr/bin:/bin"})


def ollama_host(version="0.30.1"):
    return make_host(files={"/usr/local/bin/ollama": "", "/usr/lib/ollama/cuda_v12/libggml-cuda.so": "",
                            "/usr/lib/ollama/cuda_v13/libggml-cuda.so": ""},
                     commands=[{"argv": ["/usr/local/bin/ollama", "--version"],
                                "stdout": "ollama version is %s\n" % version}],
                     environ={"PATH": "/usr/local/bin:/usr/bin:/bin"})


def judge(host, driver, cc=None):
    facts = [ok("driver.version", driver, "test", "driver"), ok("apps.rapids", find_rapids(host), "test", "r"),
             find_ollama(host)]
    if cc:
        facts += [ok("gpu.0.compute_capability", cc, "test", "cc"), ok("gpu.0.name", "NVIDIA GeForce GTX 1080 Ti",
                                                                            "test", "name")]
    return driver_floors(CheckContext(Facts(facts), []))


def test_every_row_is_well_formed_and_sourced():
    rows = matrix.load("driver_floors")
    assert floors.validate(rows) == []
    assert all(r["source"]["verified"] and r["source"]["quotes"] for r in rows)


def test_rapids_cuda11_below_rsn11_floor_fires():
    found = judge(rapids_host(), "450.51.06")
    assert [f.code for f in found] == ["driver.too_old_for_framework"]
    assert found[0].severity == "error"
    text = found[0].title + found[0].detail
    assert "450.51.06" in text and "450.80.02" in text and "RAPIDS 21.12" in text


@pytest.mark.parametrize("driver,release", [("450.80.02", "21.12.02"), ("460.91.03", "21.12.02"),
                                            ("450.51.06", "21.10.01")])
def test_rapids_quiet_at_or_above_the_floor_or_before_rsn11(driver, release):
    assert judge(rapids_host(release=release), driver) == []


def test_rapids_cuda12_platform_table():
    host = rapids_host(release="26.02.00", build="cuda12_py312_260204_abc_0")
    assert [f.code for f in judge(host, "525.147.05")] == ["driver.too_old_for_framework"]
    assert judge(host, "535.288.01") == []


def test_ollama_is_found_with_its_version_and_runners():
    value = find_ollama(ollama_host()).value
    assert value == {"path": "/usr/local/bin/ollama", "version": "0.30.1", "libdir": "/usr/lib/ollama",
                     "runners": ["cuda_v12", "cuda_v13"]}
    assert find_ollama(make_host(files={"/etc/os-release": ""})).value is None


def test_ollama_pascal_needs_570_from_0_30():
    found = judge(ollama_host("0.30.1"), "550.163.01", cc="6.1")
    assert [(f.code, f.severity) for f in found] == [("driver.too_old_for_framework", "warning")]
    assert "550.163.01" in found[0].title and "570" in found[0].title


@pytest.mark.parametrize("version,driver,cc", [("0.13.0", "550.163.01", "6.1"),  # its docs: 531 and newer
                                               ("0.30.1", "550.163.01", "7.5"),
                                               ("0.30.1", "570.195.03", "6.1")])
def test_ollama_quiet_where_its_docs_are_met(version, driver, cc):
    assert judge(ollama_host(version), driver, cc=cc) == []


def test_ollama_older_than_its_own_floor():
    found = judge(ollama_host("0.13.0"), "525.147.05", cc="8.6")
    assert found and "531" in found[0].title


# -- GPU floors: generations a release dropped (the same data's min_cc rows; check compat.gpu-floors) ---------------
# TensorRT as its tarball lays it out (TensorRT-8.6.1.6/lib/libnvinfer.so.8 -> libnvinfer.so.8.6.1, the lib
# directory on LD_LIBRARY_PATH as its install guide says) and as pip installs it (tensorrt-X.dist-info); the GPU is a
# stand-in fact (no GPU here).

def _gpu_facts(host, cc, name):
    from envdoctor.facts import ok as fact

    from .conftest import probe_facts
    facts = probe_facts(host)
    for f in (fact("gpu.count", 1, "test"), fact("gpu.0.name", name, "test"),
              fact("gpu.0.compute_capability", cc, "test")):
        facts.add(f)
    return facts


def trt_tarball_host(version="8.6.1.6"):
    lib = "/opt/TensorRT-%s/lib" % version
    real = "libnvinfer.so.%s" % ".".join(version.split(".")[:3])
    host = make_host(files={lib + "/" + real: "", "/sbin/ldconfig": ""},
                     environ={"LD_LIBRARY_PATH": lib, "PATH": "/usr/bin:/bin"},
                     commands=[{"argv": ["/sbin/ldconfig", "-p"], "stdout": "1 libs found in cache "
                                "`/etc/ld.so.cache'\n\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6\n"}])
    host.doc["links"][lib + "/libnvinfer.so.8"] = {"target": real}
    host.doc["dirs"][lib]["entries"].append("libnvinfer.so.8")
    return type(host)(host.doc)


def trt_pip_host(version):
    from .test_probe_frameworks import site_host
    return site_host({"tensorrt-%s.dist-info/METADATA" % version: "Name: tensorrt\nVersion: %s\n" % version,
                      "tensorrt/__init__.py": ""})


def gpu_floor_findings(host, cc, name):
    from envdoctor.checks.compat.driver_floors import gpu_floors
    return gpu_floors(CheckContext(_gpu_facts(host, cc, name), []))


def test_every_gpu_floor_row_is_checked_for_its_shape():
    rows = [r for r in matrix.load("driver_floors") if "min_cc" in r]
    assert {r["product"] for r in rows} == {"rapids", "tensorrt"}
    bad = [dict(rows[0], supported_by=rows[0]["releases"].lstrip(">=")), dict(rows[0], min_cc="sm_50"),
           dict(rows[0], min_driver="535")]
    assert floors.validate(bad) == ["row 0: supported_by '8.6' is inside the row's own releases",
                                    "row 1: min_cc 'sm_50' is not a compute capability",
                                    "row 2: needs exactly one of min_driver and min_cc"]


def test_tensorrt_86_tarball_on_kepler_is_an_error_naming_85():
    found = gpu_floor_findings(trt_tarball_host(), "3.7", "Tesla K80")
    assert [(f.code, f.severity) for f in found] == [("gpu.arch_not_in_build", "error")]
    assert "Tesla K80" in found[0].title and "sm_37" in found[0].title and "TensorRT 8.6.1" in found[0].title
    assert "the last TensorRT release that supports sm_37 is 8.5" in found[0].title
    assert "8.5" in found[0].fix.text


@pytest.mark.parametrize("host,cc", [(trt_tarball_host(), "7.5"), (trt_tarball_host("8.5.3.1"), "3.7"),
                                     (trt_pip_host("10.4.0"), "7.0"), (trt_pip_host("10.6.0"), "8.6")])
def test_tensorrt_quiet_on_a_gpu_its_release_supports(host, cc):
    assert gpu_floor_findings(host, cc, "NVIDIA GPU") == []


def test_tensorrt_10_pip_names_the_release_for_each_generation():
    volta = gpu_floor_findings(trt_pip_host("10.6.0"), "7.0", "Tesla V100-SXM2-16GB")
    assert len(volta) == 1 and "needs compute capability 7.5" in volta[0].title
    assert "the last TensorRT release that supports sm_70 is 10.4" in volta[0].title
    pascal = gpu_floor_findings(trt_pip_host("10.6.0"), "6.0", "Tesla P100-PCIE-16GB")
    assert len(pascal) == 1 and "TensorRT still supports sm_60 in release 8.6" in pascal[0].title


def test_rapids_2402_on_pascal_is_an_error_naming_2312():
    host = rapids_host(release="24.02.02", build="cuda12_py310_240223_g48d3a6d5be_0")
    found = gpu_floor_findings(host, "6.0", "Tesla P100-PCIE-16GB")
    assert [(f.code, f.severity) for f in found] == [("gpu.arch_not_in_build", "error")]
    assert "sm_60" in found[0].title and "RAPIDS 24.02" in found[0].title and "23.12" in found[0].title
    assert found[0].fix.commands == ["conda install -c rapidsai -c conda-forge -c nvidia 'rapids=23.12'"]


@pytest.mark.parametrize("release,build,cc", [("23.12.01", "cuda12_py310_231208_abc_0", "6.0"),
                                              ("24.02.02", "cuda12_py310_240223_abc_0", "7.0"),
                                              ("26.02.00", "cuda12_py312_260204_abc_0", "7.0")])
def test_rapids_quiet_where_its_release_supports_the_gpu(release, build, cc):
    assert gpu_floor_findings(rapids_host(release=release, build=build), cc, "NVIDIA GPU") == []


def test_rapids_cuda13_packages_on_volta_point_to_the_cuda12_ones():
    found = gpu_floor_findings(rapids_host(release="26.02.00", build="cuda13_py312_260204_abc_0"), "7.0",
                               "Tesla V100-SXM2-32GB")
    assert len(found) == 1 and "needs compute capability 7.5" in found[0].title
    assert "CUDA 12 packages" in found[0].title and "CUDA 12 packages" in found[0].fix.text


# -- GPU ceilings: generations newer than a release (the same data's new_cc rows; 'Unsupported SM') ------------------

def test_every_gpu_ceiling_row_is_checked_for_its_shape():
    rows = [r for r in matrix.load("driver_floors") if "new_cc" in r]
    assert rows and {r["product"] for r in rows} == {"tensorrt"}
    assert all(r["source"]["verified"] and r["source"]["quotes"] for r in rows)
    bad = [dict(rows[0], supported_from="7.0"), dict(rows[0], new_cc="sm_86"), dict(rows[0], min_cc="8.6"),
           dict(rows[0], supported_from="seven")]
    assert floors.validate(bad) == ["row 0: supported_from '7.0' is inside the row's own releases",
                                    "row 1: new_cc 'sm_86' is not a version specifier",
                                    "row 2: a GPU ceiling takes no min_driver, min_cc, cc or cuda_major",
                                    "row 3: supported_from 'seven' is not a release"]


@pytest.mark.parametrize("host,cc,name,release,first", [
    (trt_tarball_host("8.2.1.8"), "8.9", "NVIDIA GeForce RTX 4090", "8.2.1", "8.5"),
    (trt_tarball_host("7.0.0.11"), "8.6", "NVIDIA RTX A6000", "7.0.0", "7.2"),
    (trt_tarball_host("8.4.1.5"), "9.0", "NVIDIA H100 80GB HBM3", "8.4.1", "8.5"),
    (trt_pip_host("10.7.0"), "12.0", "NVIDIA GeForce RTX 5090", "10.7.0", "10.8"),
    (trt_tarball_host("8.2.1.8"), "12.0", "NVIDIA GeForce RTX 5090", "8.2.1", "10.8"),
])
def test_tensorrt_older_than_the_gpu_is_an_error_naming_the_first_release(host, cc, name, release, first):
    found = gpu_floor_findings(host, cc, name)
    assert [(f.code, f.severity) for f in found] == [("gpu.arch_not_in_build", "error")]
    sm = "sm_" + cc.replace(".", "")
    assert name in found[0].title and sm in found[0].title and "TensorRT %s" % release in found[0].title
    assert "newer than the release" in found[0].title
    assert "TensorRT supports %s from release %s" % (sm, first) in found[0].title
    assert "Unsupported SM" in found[0].detail
    assert found[0].fix.text.startswith("Install TensorRT %s or newer" % first)


@pytest.mark.parametrize("host,cc", [(trt_tarball_host("8.5.3.1"), "8.9"), (trt_tarball_host("7.2.3.4"), "8.6"),
                                     (trt_tarball_host("8.6.1.6"), "9.0"), (trt_pip_host("10.8.0"), "12.0"),
                                     (trt_pip_host("10.8.0"), "10.0"), (trt_tarball_host("8.2.1.8"), "8.6"),
                                     (trt_tarball_host("8.2.1.8"), "8.7"), (trt_tarball_host("7.0.0.11"), "7.5")])
def test_tensorrt_quiet_on_a_gpu_no_newer_than_its_release(host, cc):
    assert gpu_floor_findings(host, cc, "NVIDIA GPU") == []


# nv-codec-headers as their Makefile installs them: ffnvcodec.pc from ffnvcodec.pc.in, prefix /usr/local.
FFNVCODEC_PC = """prefix=/usr/local
includedir=${prefix}/include

Name: ffnvcodec
Description: FFmpeg version of Nvidia Codec SDK headers
Version: %s
Requires:
Conflicts:
Libs:
Cflags: -I${includedir}
"""


def nvcodec_judge(version, driver, where="/usr/local/lib/pkgconfig", environ=None):
    host = make_host(files={where + "/ffnvcodec.pc": FFNVCODEC_PC % version, "/usr/local/bin/ffmpeg": ""},
                     environ=environ or {"PATH": "/usr/local/bin:/usr/bin:/bin"})
    facts = [ok("driver.version", driver, "test", "driver"),
             ok("apps.nv_codec_headers", find_nv_codec_headers(host), "test", "h")]
    return driver_floors(CheckContext(Facts(facts), []))


@pytest.mark.parametrize("version,driver,floor", [("9.0.18.0", "415.27", "418.30"),
                                                  ("13.0.19.0", "550.163.01", "570.0"),
                                                  ("12.2.72.0", "545.29.06", "550.54.14")])
def test_nv_codec_headers_newer_than_the_driver_fires(version, driver, floor):
    found = nvcodec_judge(version, driver)
    assert [(f.code, f.severity) for f in found] == [("driver.too_old_for_framework", "warning")]
    text = found[0].title + found[0].detail
    assert floor in found[0].title and driver in text and "NVENC API " + ".".join(version.split(".")[:2]) in text
    assert "/usr/local/lib/pkgconfig/ffnvcodec.pc" in text and "rebuild FFmpeg" in text


@pytest.mark.parametrize("version,driver", [("9.0.18.0", "418.30"), ("12.2.72.0", "550.163.01"),
                                            ("13.0.19.0", "570.86.10"), ("8.2.15.12", "415.27"),
                                            ("99.0.1.0", "410.48")])
def test_nv_codec_headers_quiet_when_the_driver_meets_their_floor_or_no_floor_is_known(version, driver):
    assert nvcodec_judge(version, driver) == []


def test_nv_codec_headers_found_on_pkg_config_path_and_not_another_projects_pc():
    host = make_host(files={"/opt/ff/lib/pkgconfig/ffnvcodec.pc": FFNVCODEC_PC % "11.1.5.3",
                            "/usr/lib/pkgconfig/ffnvcodec.pc": "Name: other\nVersion: 1.0\n"},
                     environ={"PKG_CONFIG_PATH": "/opt/ff/lib/pkgconfig"})
    assert find_nv_codec_headers(host) == [{"path": "/opt/ff/lib/pkgconfig/ffnvcodec.pc", "version": "11.1.5.3"}]



# A dpkg status file with a Jellyfin FFmpeg package (fields in dpkg's order; other packages around it).
JELLYFIN_STATUS = """Package: libc6
Status: install ok installed
Architecture: amd64
Version: 2.35-0ubuntu3.8

Package: %s
Status: install ok installed
Priority: optional
Section: video
Maintainer: Jellyfin Packaging Team <packaging@jellyfin.org>
Architecture: %s
Version: %s
Description: Tools for transcoding, streaming and playing of multimedia files

"""


def jellyfin_judge(version, driver, name="jellyfin-ffmpeg6", arch="amd64"):
    host = make_host(files={"/var/lib/dpkg/status": JELLYFIN_STATUS % (name, arch, version),
                            "/usr/lib/jellyfin-ffmpeg/ffmpeg": ""})
    facts = [ok("driver.version", driver, "test", "driver"),
             ok("apps.nv_codec_headers", packaged_nv_codec_headers(host), "test", "h")]
    return driver_floors(CheckContext(Facts(facts), []))


@pytest.mark.parametrize("name,version,driver,headers,floor", [
    ("jellyfin-ffmpeg6", "6.0-4-jammy", "470.182.03", "12.0.16.0", "520.56.06"),
    ("jellyfin-ffmpeg6", "6.0.1-8-bookworm", "515.105.01", "12.0.16.1", "520.56.06"),
    ("jellyfin-ffmpeg5", "5.1.2-5-focal", "460.91.03", "11.1.5.2", "470.57.02")])
def test_jellyfin_ffmpeg_release_pins_nv_codec_headers_newer_than_the_driver(name, version, driver, headers, floor):
    found = jellyfin_judge(version, driver, name)
    assert [(f.code, f.severity) for f in found] == [("driver.too_old_for_framework", "warning")]
    text = found[0].title + found[0].detail
    assert floor in found[0].title and driver in text and "%s %s" % (name, version) in found[0].title
    assert "nv-codec-headers %s" % headers in text and "install a release of %s" % name in text


@pytest.mark.parametrize("version,driver,arch", [
    ("6.0-4-jammy", "525.125.06", "amd64"),  # the driver meets NVENC API 12.0
    ("5.1.2-4-bullseye", "470.182.03", "amd64"),  # 11.1.5.1: 470.57.02
    ("7.1.1-1-noble", "470.182.03", "amd64"),  # a release whose build files were not read: not judged
    ("6.0-4-jammy", "470.182.03", "arm64")])  # jellyfin-ffmpeg builds NVENC for amd64 only
def test_jellyfin_ffmpeg_quiet_when_the_driver_meets_the_floor_or_the_release_is_unknown(version, driver, arch):
    assert jellyfin_judge(version, driver, arch=arch) == []


def test_jellyfin_ffmpeg_table_reads_package_versions():
    assert ffmpeg.nv_codec_headers("jellyfin-ffmpeg", "6.0-1") == "12.0.16.0"
    assert ffmpeg.nv_codec_headers("jellyfin-ffmpeg", "6.0.1-2-jammy") == "12.0.16.0"
    assert ffmpeg.nv_codec_headers("jellyfin-ffmpeg", "6.0.1-3-jammy") == "12.0.16.1"
    assert ffmpeg.nv_codec_headers("jellyfin-ffmpeg", "4.4.1-1-focal") == "11.0.10.1"
    assert ffmpeg.nv_codec_headers("jellyfin-ffmpeg", "4.3.0-1") is None
    assert ffmpeg.nv_codec_headers("jellyfin-ffmpeg", "not-a-version") is None
    assert ffmpeg.nv_codec_headers("another-ffmpeg", "6.0-1") is None


# QNAP's package registry as QTS writes it (one INI section per QPKG; the sections of the jellyfin-qnap package and
# of QNAP's NVIDIA GPU driver package, as tests/corpus/b88c-qnap-... records them), and the first lines of the
# bundled FFmpeg's `-version`: jellyfin-ffmpeg's builds configure with --extra-version=Jellyfin (debian/rules,
# builder/build.sh) and ffbuild/version.sh prints the VERSION file's release with it appended ("6.0.1-Jellyfin").
QPKG_CONF = """[NVIDIA_GPU_DRV]
Name = NVIDIA_GPU_DRV
Display_Name = NVIDIA GPU Driver
Version = 515.48.07
Enable = TRUE
Install_Path = /share/CACHEDEV1_DATA/.qpkg/NVIDIA_GPU_DRV
Shell = /share/CACHEDEV1_DATA/.qpkg/NVIDIA_GPU_DRV/nvidia.sh

[jellyfin]
Name = jellyfin
Display_Name = jellyfin
Version = %s
Enable = TRUE
Install_Path = /share/CACHEDEV1_DATA/.qpkg/jellyfin
Shell = /share/CACHEDEV1_DATA/.qpkg/jellyfin/jellyfin.sh
"""
QPKG_FFMPEG = "/share/CACHEDEV1_DATA/.qpkg/jellyfin/jellyfin-ffmpeg/ffmpeg"
FFMPEG_VERSION = """ffmpeg version %s Copyright (c) 2000-2023 the FFmpeg developers
built with gcc 12 (Debian 12.2.0-14)
configuration: --prefix=/usr/lib/jellyfin-ffmpeg --target-os=linux --extra-version=Jellyfin --enable-ffnvcodec
"""


def qpkg_host(banner, conf=None, returncode=0):
    return make_host(files={"/etc/config/qpkg.conf": QPKG_CONF % "10.9.2" if conf is None else conf,
                            QPKG_FFMPEG: "", "/share/CACHEDEV1_DATA/.qpkg/jellyfin/jellyfin-ffmpeg/ffprobe": "",
                            "/share/CACHEDEV1_DATA/.qpkg/NVIDIA_GPU_DRV/usr/bin/nvidia-smi": ""},
                     commands=[{"argv": [QPKG_FFMPEG, "-version"], "stdout": FFMPEG_VERSION % banner,
                                "returncode": returncode}])


def qpkg_judge(banner, driver, **kw):
    facts = [ok("driver.version", driver, "test", "driver"),
             ok("apps.nv_codec_headers", bundled_ffmpeg_headers(qpkg_host(banner, **kw)), "test", "h")]
    return driver_floors(CheckContext(Facts(facts), []))


def test_nas_package_jellyfin_ffmpeg_newer_than_the_driver_fires():
    found = qpkg_judge("6.0.1-Jellyfin", "515.48.07")
    assert [(f.code, f.severity) for f in found] == [("driver.too_old_for_framework", "warning")]
    title = found[0].title
    assert "515.48.07" in title and "520.56.06" in title and "jellyfin-ffmpeg 6.0.1" in title
    assert QPKG_FFMPEG in title and "NVENC API 12.0" in title


@pytest.mark.parametrize("banner,driver", [
    ("6.0.1-Jellyfin", "525.116.04"),  # the driver meets NVENC API 12.0's floor
    ("7.0.2-Jellyfin", "515.48.07"),   # revisions beyond the table's last row: not every 7.0.2 build is known
    ("4.4.2-0ubuntu0.22.04.1", "390.157"),  # a distribution's FFmpeg: no build family the table knows
    ("n6.1.1", "470.57.02")])  # a build from FFmpeg's own tag, no extra version
def test_nas_package_ffmpeg_quiet_when_the_floor_is_met_or_its_build_unknown(banner, driver):
    assert qpkg_judge(banner, driver) == []


def test_nas_package_ffmpeg_that_fails_or_a_garbled_registry_says_nothing():
    assert bundled_ffmpeg_headers(qpkg_host("6.0.1-Jellyfin", returncode=1)) == []
    assert bundled_ffmpeg_headers(qpkg_host("6.0.1-Jellyfin", conf="[jellyfin\nInstall_Path = relative/x\n\x00")) == []
    # a registry naming a folder without an FFmpeg: nothing is run
    assert bundled_ffmpeg_headers(make_host(files={"/etc/config/qpkg.conf": QPKG_CONF % "10.9.2"})) == []


def test_ffmpeg_table_maps_a_release_without_its_revision():
    # 6.0.1-1/-2 were built against 12.0.16.0, -3 on against 12.0.16.1: one API level, 12.0
    assert ffmpeg.release_nv_codec_headers("jellyfin-ffmpeg", "6.0.1") == "12.0"
    assert ffmpeg.release_nv_codec_headers("jellyfin-ffmpeg", "6.0") == "12.0.16.0"
    # 5.0.1-1 to -4 were built against 11.0.10.1, -5 on against 11.1.5.1: the lower API level
    assert ffmpeg.release_nv_codec_headers("jellyfin-ffmpeg", "5.0.1") == "11.0"
    assert ffmpeg.release_nv_codec_headers("jellyfin-ffmpeg", "7.0.2") is None
    assert ffmpeg.release_nv_codec_headers("jellyfin-ffmpeg", "4.2") is None
    assert ffmpeg.release_nv_codec_headers("jellyfin-ffmpeg", "six") is None
    assert ffmpeg.release_nv_codec_headers("another-ffmpeg", "6.0.1") is None


def test_ffmpeg_table_validator_catches_overlaps_and_bad_releases():
    row = {"package": "jellyfin-ffmpeg", "first": "6.0-1", "until": "6.0.1-3", "nv_codec_headers": "12.0.16.0"}
    assert ffmpeg._validate([row]) == []
    assert "overlap" in " ".join(ffmpeg._validate([row, dict(row, first="6.0-4", until="7.0-1")]))
    assert ffmpeg._validate([dict(row, until="5.0-1")])  # until before first
    assert ffmpeg._validate([dict(row, nv_codec_headers="twelve")])
    assert ffmpeg._validate([dict(row, package="ffmpeg")])


SITE = "/usr/local/lib/python3.8/dist-packages"


def nvisii_judge(version, driver):
    # nvisii from pip: its wheel's METADATA in dist-packages (1.x.70: the R435 wheel, .71 R450, .72 R460)
    host = make_host(files={SITE + "/nvisii-%s.dist-info/METADATA" % version: "Name: nvisii\nVersion: %s\n" % version,
                            SITE + "/nvisii/__init__.py": ""},
                     python={"executable": "/usr/bin/python3", "version": "3.8.10", "implementation": "cpython",
                             "prefix": "/usr", "base_prefix": "/usr", "sys_path": [SITE]})
    facts = [ok("driver.version", driver, "test", "driver"),
             ok("apps.optix_packages", find_optix_packages(host), "test", "o")]
    return driver_floors(CheckContext(Facts(facts), []))


@pytest.mark.parametrize("version,driver,branch", [("1.0.70", "418.56", "435"), ("1.1.72", "450.102.04", "460"),
                                                   ("1.0.71", "440.33.01", "450")])
def test_nvisii_wheel_for_a_newer_driver_branch_fires(version, driver, branch):
    found = nvisii_judge(version, driver)
    assert [f.code for f in found] == ["driver.too_old_for_framework"]
    assert found[0].severity == "error"
    assert "NVISII %s" % version in found[0].title and "branch %s or newer" % branch in found[0].title
    assert "OptiX 7" in found[0].detail and driver in found[0].detail


@pytest.mark.parametrize("version,driver", [("1.0.70", "435.21"), ("1.0.71", "450.51.06"), ("1.1.72", "470.82.01"),
                                            ("1.2.0", "418.56")])
def test_nvisii_quiet_on_its_branch_or_a_release_without_a_stated_floor(version, driver):
    assert nvisii_judge(version, driver) == []


VENV_SITE = "/home/user/newton/.venv/lib/python3.11/site-packages"


def warp_judge(version, driver):
    # warp-lang as its wheel installs it (warp/ beside warp_lang-<version>.dist-info; the version's +cu11/+cu13 label
    # is the GitHub Releases builds', PyPI's and nightlies' carry none), in a uv venv as newton-physics/newton#174's
    host = make_host(files={VENV_SITE + "/warp_lang-%s.dist-info/METADATA" % version:
                            "Metadata-Version: 2.1\nName: warp-lang\nVersion: %s\n" % version,
                            VENV_SITE + "/warp/__init__.py": "from warp.context import init\n"},
                     python={"executable": "/home/user/newton/.venv/bin/python", "version": "3.11.12",
                             "implementation": "cpython", "prefix": "/home/user/newton/.venv",
                             "base_prefix": "/usr", "sys_path": [VENV_SITE]})
    pkgs = find_floor_packages(host)
    facts = [ok("driver.version", driver, "test", "driver"), ok("apps.floor_packages", pkgs, "test", "w")]
    return pkgs, driver_floors(CheckContext(Facts(facts), []))


@pytest.mark.parametrize("version,major", [("1.8.0.dev20250522", "12"), ("1.8.0", "12"), ("1.8.0+cu11", "11"),
                                           ("1.10.0+cu13", "13"), ("1.2.3", "11"), ("1.3.0+cu12", "12")])
def test_warp_build_cuda_major_from_its_label_or_its_release_default(version, major):
    pkgs, _ = warp_judge(version, "580.65.06")
    assert [(p["name"], p["version"], p["cuda_major"]) for p in pkgs] == [("Warp", version, major)]


def test_warp_on_a_driver_below_cuda_12_3_warns_of_graph_capture_module_loading():
    # the thread's machine: Warp 1.8.0 nightly (CUDA 12.8 build) on R535 (CUDA 12.2): error 900 during capture
    _, found = warp_judge("1.8.0.dev20250522", "535.183.01")
    assert [(f.code, f.severity) for f in found] == [("driver.too_old_for_framework", "warning")]
    assert "Warp 1.8.0.dev20250522" in found[0].title and "545.23.06" in found[0].title
    assert "graph capture" in found[0].title and "error 900" in found[0].detail
    assert "github.com/NVIDIA/warp" in found[0].source["url"]


@pytest.mark.parametrize("version,driver,floor", [("1.8.0", "520.61.05", "525.60.13"),
                                                  ("1.10.0+cu13", "575.57.08", "580"),
                                                  ("1.8.0+cu11", "465.19.01", "470")])
def test_warp_below_its_builds_cuda_floor_errs_once(version, driver, floor):
    # below the build's own floor Warp finds no usable CUDA device: that one finding, not the feature's as well
    _, found = warp_judge(version, driver)
    assert [(f.code, f.severity) for f in found] == [("driver.too_old_for_framework", "error")]
    assert floor in found[0].title and "Insufficient CUDA driver version" in found[0].detail


@pytest.mark.parametrize("version,driver", [("1.8.0.dev20250522", "545.23.06"), ("1.8.0", "570.124.06"),
                                            ("1.10.0+cu13", "580.65.06"), ("1.2.3", "535.183.01")])
def test_warp_quiet_on_a_driver_at_its_floors_or_a_release_without_them(version, driver):
    assert warp_judge(version, driver)[1] == []


def test_warp_with_a_garbled_version_or_driver_is_quiet():
    assert warp_judge("not-a-version", "535.183.01")[1] == []
    facts = [ok("driver.version", "garbled", "test", "d"),
             ok("apps.floor_packages", [{"package": "warp-lang", "name": "Warp", "version": "1.8.0"}, "x", None],
                "test", "w")]
    assert driver_floors(CheckContext(Facts(facts), [])) == []


BUNDLE = "/home/user/Meshroom-2020.1.0-av2.3.0-centos7-cuda10.2"


def bundle_facts(driver, cuda, files):
    from envdoctor.probes.cuda import find_bundled_cudart

    host = make_host(files=files, environ={"HOME": "/home/user", "PWD": "/home/user",
                                           "PATH": "/usr/local/bin:/usr/bin:/bin"})
    return [ok("driver.version", driver, "test", "driver"), ok("driver.cuda_version", cuda, "test", "cuda"),
            ok("cuda.bundled_cudart", find_bundled_cudart(host), "test", "b")]


def test_a_bundle_carrying_a_newer_cuda_runtime_than_the_driver_runs():
    # an unpacked release tarball: its executables in <part>/bin, its CUDA 10.2 runtime in <part>/lib
    from envdoctor.checks import run_checks

    files = {BUNDLE + "/aliceVision/lib/libcudart.so.10.2.89": "", BUNDLE + "/aliceVision/bin/aliceVision_x": "",
             BUNDLE + "/Meshroom": ""}
    found = [f for f in run_checks(CheckContext(Facts(bundle_facts("418.126.02", "10.1", files)), []))
             if f.code.startswith("driver.too_old")]
    assert [f.code for f in found] == ["driver.too_old_for_framework"]
    assert "CUDA 10.2" in found[0].title and BUNDLE + "/aliceVision" in found[0].title
    assert "440.33" in found[0].title


def test_a_bundle_quiet_on_a_driver_that_runs_its_runtime_and_toolkits_and_conda_are_not_bundles():
    from envdoctor.checks import run_checks

    files = {BUNDLE + "/aliceVision/lib/libcudart.so.10.2.89": ""}
    quiet = run_checks(CheckContext(Facts(bundle_facts("440.33.01", "10.2", files)), []))
    assert not [f for f in quiet if f.code.startswith("driver.too_old")]
    # a CUDA toolkit and a conda prefix in the home folder carry libcudart too: their own probes judge them
    others = {"/home/user/cuda-10.2/lib64/libcudart.so.10.2.89": "", "/home/user/cuda-10.2/bin/nvcc": "",
              "/home/user/miniconda3/lib/libcudart.so.10.2.89": "", "/home/user/miniconda3/conda-meta/history": ""}
    facts = bundle_facts("418.126.02", "10.1", others)
    assert facts[-1].value == []


def test_a_home_folder_full_of_folders_costs_a_bounded_number_of_questions():
    """Thousands of data folders in the home folder: the search for bundles asks at most BUNDLE_QUESTIONS
    questions (listings), looks at most BUNDLE_ENTRIES entries of each, and finds what lies within them."""
    from envdoctor.probes import cuda

    files = {"/home/user/data%04d/part%02d/file.bin" % (i, j): "" for i in range(200) for j in range(60)}
    files[BUNDLE + "/aliceVision/lib/libcudart.so.10.2.89"] = ""
    host = make_host(files=files, environ={"HOME": "/home/user"})
    asked = []
    listing = host.list_dir

    def counted(path):
        asked.append(path)
        return listing(path)

    host.list_dir = counted
    found = cuda.find_bundled_cudart(host)
    assert 0 < len(asked) <= cuda.BUNDLE_QUESTIONS
    # the bundle sorts after the 200 data folders: past the entries looked at, so not found (bounded, said so here)
    assert found == []
    few = {BUNDLE + "/aliceVision/lib/libcudart.so.10.2.89": "", "/home/user/notes/a.txt": ""}
    assert [b["release"] for b in cuda.find_bundled_cudart(make_host(files=few, environ={"HOME": "/home/user"}))] \
        == ["10.2"]


def test_a_snapshot_keeps_the_jellyfin_stanza_but_cuda_packages_do_not_list_it():
    from envdoctor.probes.cuda import keep_cuda_stanzas, parse_dpkg_status
    text = JELLYFIN_STATUS % ("jellyfin-ffmpeg6", "amd64", "6.0-4-jammy")
    kept = keep_cuda_stanzas(text)
    assert "Package: jellyfin-ffmpeg6" in kept and "Version: 6.0-4-jammy" in kept and "libc6" not in kept
    assert parse_dpkg_status(text) == []
