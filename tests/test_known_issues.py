"""known_issues.json and the checks that read it (nccl.known_broken_release, cudnn.known_bad_release).

Facts are written in the probes' own forms: GPU names as NVML reports them, ``topology.nics`` as the topology
probe writes it from /sys/class/infiniband, ``env.nccl`` as the environment probe writes it."""

from typing import Any, Dict, List, Optional

import pytest

from envdoctor.checks import CheckContext
from envdoctor.checks.libraries.known_issues import cudnn_known_issues, dali_known_issues, nccl_known_issues
from envdoctor.facts import Facts, ok
from envdoctor.matrix import known_issues


def _nccl(version: str, names: List[str], nics: Optional[List[Dict[str, Any]]] = None,
          env: Optional[Dict[str, str]] = None, driver: str = "535.129.03") -> List[Any]:
    facts = [ok("gpu.count", len(names), "nvml:device_count"), ok("driver.version", driver, "nvml")]
    facts += [ok("gpu.%d.name" % i, n, "nvml") for i, n in enumerate(names)]
    facts.append(ok("libraries.nccl", [{"path": "/usr/lib/x86_64-linux-gnu/libnccl.so.%s" % version,
                                        "version": version, "kind": "library"}], "derived"))
    if nics is not None:
        facts.append(ok("topology.nics", nics, "dir:/sys/class/infiniband"))
    facts.append(ok("env.nccl", {"variables": {k: {"value": v, "from": "environment"} for k, v in (env or {}).items()},
                                 "conf_files": [], "xml_files": []}, "env:NCCL_*"))
    return list(nccl_known_issues(CheckContext(Facts(facts), [])))


def test_every_row_is_valid_and_sourced() -> None:
    table = known_issues.rows()
    assert table and known_issues.validate(table) == []
    for row in table:
        # a row not confirmed in the vendor's release notes says why in its note (the finding then says so too)
        assert row["source"]["verified"] or "Not verified" in row["source"]["note"]
        assert row["source"]["url"].startswith("https://") and (row["fixed_in"] or row["fixed_by"])


MIXED = ["GeForce GTX 1080 Ti", "GeForce GTX 1080"]


def test_mixed_gpu_models_before_2115_fires_and_names_the_release() -> None:
    found = _nccl("2.1.4", MIXED)
    assert [f.code for f in found] == ["nccl.known_broken_release"]
    assert found[0].severity == "warning" and "2.1.4" in found[0].title and "2.1.15" in found[0].fix.text


@pytest.mark.parametrize("version,names", [("2.1.15", MIXED), ("2.1.4", ["GeForce GTX 1080 Ti"] * 2)])
def test_mixed_gpu_models_quiet_when_fixed_or_one_model(version: str, names: List[str]) -> None:
    assert _nccl(version, names) == []


H100 = ["NVIDIA H100 80GB HBM3"] * 2
ONE = [{"name": "mlx5_0", "pci_bus_id": "0000:19:00.0", "pcie_path": [], "gpus_under_switch": [0]}]


def test_nic_sharing_a_switch_with_one_gpu_on_2181_fires() -> None:
    found = _nccl("2.18.1", H100, nics=ONE)
    assert len(found) == 1 and found[0].severity == "warning" and "mlx5_0" in found[0].detail
    assert "2.18.3" in found[0].fix.text


@pytest.mark.parametrize("env", [{"NCCL_PROTO": "^LL128"}, {"NCCL_IB_PCI_RELAXED_ORDERING": "0"}])
def test_workaround_variable_turns_it_into_information(env: Dict[str, str]) -> None:
    found = _nccl("2.18.1", H100, nics=ONE, env=env)
    assert len(found) == 1 and found[0].severity == "info" and "workaround" in found[0].detail


@pytest.mark.parametrize("version,nics", [
    ("2.18.3", ONE),                                                                  # fixed release
    ("2.18.1", []),                                                                   # no RDMA NIC
    ("2.18.1", [dict(ONE[0], gpus_under_switch=[0, 1])]),                             # two GPUs on the switch
    ("2.18.1", [dict(ONE[0], gpus_under_switch=[])]),                                 # NIC on its own root port
])
def test_nic_condition_quiet(version: str, nics: List[Dict[str, Any]]) -> None:
    assert _nccl(version, H100, nics=nics) == []


def test_old_driver_with_rdma_nic_fires_and_quiet_without_nic() -> None:
    found = _nccl("2.2.13", ["Tesla V100-SXM2-16GB"] * 2, nics=ONE, driver="390.48")
    assert [f.severity for f in found] == ["warning"] and "396.26" in found[0].fix.text
    assert _nccl("2.2.13", ["Tesla V100-SXM2-16GB"] * 2, nics=[], driver="390.48") == []
    assert _nccl("2.2.13", ["Tesla V100-SXM2-16GB"] * 2, nics=ONE, driver="396.26") == []


def _cudnn(version: str, gpu: str, fw: str = "onnxruntime") -> List[Any]:
    path = "/usr/lib/x86_64-linux-gnu/libcudnn.so.%s" % version
    facts = [ok("gpu.count", 1, "nvml"), ok("gpu.0.name", gpu, "nvml"), ok("gpu.0.compute_capability", "7.5", "nvml"),
             ok("framework.%s" % fw, {"version": "1.8.1", "cuda": "11.0", "gpu": True}, "python"),
             ok("linkage.%s" % fw, [{"soname": "libcudnn.so.8", "path": path, "version": version}], "elf"),
             ok("libraries.cudnn", [{"path": path, "version": version, "kind": "library"}], "derived")]
    return list(cudnn_known_issues(CheckContext(Facts(facts), [])))


def test_cudnn_805_on_t4_under_onnxruntime_fires() -> None:
    found = _cudnn("8.0.5", "Tesla T4")
    assert [f.code for f in found] == ["cudnn.known_bad_release"] and "8.0.5" in found[0].title
    assert "8.1.0" in found[0].fix.text


@pytest.mark.parametrize("version,gpu,fw", [("8.1.0", "Tesla T4", "onnxruntime"), ("8.0.5", "Tesla V100-SXM2-16GB",
                                            "onnxruntime"), ("8.0.5", "Tesla T4", "jax")])
def test_cudnn_805_quiet(version: str, gpu: str, fw: str) -> None:
    assert _cudnn(version, gpu, fw) == []


@pytest.mark.parametrize("value,out", [("^LL128", True), ("^ll128,LL", True), ("LL,Simple", True),
                                       ("LL128", False), ("^LL", False), ("", False)])
def test_nccl_proto_excludes(value: str, out: bool) -> None:
    assert known_issues._excludes(value, "LL128") is out


# -- DALI: the installed release (python.gpu_packages, as the gpupackages probe writes it) -------------------------


def _dali(version: str, package: str = "nvidia-dali-cuda120", gpus: int = 1) -> List[Any]:
    site = "/usr/local/lib/python3.8/dist-packages"
    facts = [ok("gpu.count", gpus, "nvml:device_count")]
    facts += [ok("gpu.%d.name" % i, "NVIDIA GeForce RTX 3090", "nvml") for i in range(gpus)]
    facts.append(ok("python.gpu_packages", [{"package": package, "version": version, "location": site,
                                             "metadata": "%s/%s-%s.dist-info" % (site, package.replace("-", "_"),
                                                                                 version)}], "dir:" + site))
    return list(dali_known_issues(CheckContext(Facts(facts), [])))


def test_dali_1230_video_decoder_defect_fixed_in_125_is_said() -> None:
    # NVIDIA/DALI#4709: nvidia-dali-cuda120 1.23.0, fn.experimental.decoders.video, fixed in 1.25
    found = _dali("1.23.0")
    assert [f.code for f in found] == ["dali.known_broken_release"] and found[0].severity == "warning"
    assert "1.23.0" in found[0].title and "1.25.0" in found[0].title
    assert "fn.experimental.decoders.video" in found[0].title
    assert "not confirmed in its release notes" in found[0].detail  # the row is the tracker's word
    assert found[0].fix.commands == ["pip install --upgrade 'nvidia-dali-cuda120>=1.25.0'"]


def test_dali_older_releases_list_every_defect_of_their_release() -> None:
    found = _dali("1.16.0", package="nvidia-dali-cuda110")
    assert len(found) == 1 and "has 6 defects" in found[0].title  # 1.16.1, 1.21.0 and 1.23.0's, one GPU
    assert "fn.decoders.image leaks memory" in found[0].detail and "multi-GPU" not in found[0].detail
    assert "video" not in found[0].title.split("among them:")[0]
    several = _dali("1.16.0", package="nvidia-dali-cuda110", gpus=2)
    assert "has 7 defects" in several[0].title and "2 GPUs in this machine" in several[0].detail


def test_dali_defects_whose_first_release_is_unknown_are_a_hint() -> None:
    """1.16.0 is below the fixed releases of six rows whose notes name no first affected release (the operator may
    be newer than the installed DALI) and below no row with a known range, on one GPU: information, not a warning;
    the 1.19.0-1.25.0 video decoder row (a known range) keeps 1.23.0 a warning."""
    found = _dali("1.16.0", package="nvidia-dali-cuda110")
    assert [f.severity for f in found] == ["info"]
    assert [f.severity for f in _dali("1.23.0")] == ["warning"]
    assert [f.severity for f in _dali("1.16.0", package="nvidia-dali-cuda110", gpus=2)] == ["warning"]


@pytest.mark.parametrize("version,package", [("1.25.0", "nvidia-dali-cuda120"), ("1.30.0", "nvidia-dali-cuda110"),
                                             ("1.23.0", "nvidia-dali-tf-plugin-cuda120")])
def test_dali_quiet_on_a_fixed_release_or_another_distribution(version: str, package: str) -> None:
    assert _dali(version, package=package) == []


def test_dali_built_from_source_is_told_to_rebuild_not_pip_installed() -> None:
    found = _dali("1.24.0.dev0", package="nvidia-dali")
    assert found and found[0].fix.commands == [] and "built from source" in found[0].fix.text


def test_the_gpupackages_probe_lists_an_installed_dali() -> None:
    from envdoctor.probes import run_probes

    from .conftest import make_host

    site = "/usr/local/lib/python3.8/dist-packages"
    host = make_host(files={site + "/nvidia_dali_cuda120-1.23.0.dist-info/METADATA":
                            "Metadata-Version: 2.1\nName: nvidia-dali-cuda120\nVersion: 1.23.0\n",
                            site + "/nvidia_dali_tf_plugin_cuda120-1.23.0.dist-info/METADATA":
                            "Metadata-Version: 2.1\nName: nvidia-dali-tf-plugin-cuda120\nVersion: 1.23.0\n"},
                     python={"executable": "/usr/bin/python3.8", "version": "3.8.10", "implementation": "cpython",
                             "prefix": "/usr", "base_prefix": "/usr", "sys_path": [site]})
    facts = Facts(f for r in run_probes(host, parallel=False, only=("python", "gpupackages")) for f in r.facts)
    assert [e["package"] for e in facts.value("python.gpu_packages")] == ["nvidia-dali-cuda120"]


# -- DALI built from source against the toolkit's nvJPEG (dali.nvjpeg_too_old) -------------------------------------
# The layout of NVIDIA/DALI#1080: DALI's master of July 2019 (0.12.0.dev0) built with cmake against CUDA 10.1 GA and
# pip-installed from its dali/python wheel; libdali_operators.so NEEDS the toolkit's libnvjpeg.so.10 (RPATH
# $ORIGIN), which CUDA 10.1's debs install in /usr/local/cuda-10.1/targets/x86_64-linux/lib (lib64 links there),
# found through LD_LIBRARY_PATH. A DALI wheel links nvJPEG statically (DALI's CMake: libnvjpeg_static.a) and needs
# no libnvjpeg at all.
SITE36 = "/usr/local/lib/python3.6/dist-packages"
CUDA_LIB = "/usr/local/cuda-10.1/targets/x86_64-linux/lib"


def _dali_source_build(nvjpeg: str = "10.1.105", own_copy: bool = False, needs: bool = True) -> List[Any]:
    from envdoctor.checks import run_checks
    from envdoctor.probes import run_probes

    from .conftest import make_host

    info = SITE36 + "/nvidia_dali-0.12.0.dev0.dist-info/"
    ops = SITE36 + "/nvidia/dali/libdali_operators.so"
    lib = (SITE36 + "/nvidia/dali") if own_copy else CUDA_LIB
    host = make_host(files={info + "METADATA": "Metadata-Version: 2.1\nName: nvidia-dali\nVersion: 0.12.0.dev0\n",
                            info + "RECORD": "nvidia/dali/libdali.so,,\nnvidia/dali/libdali_operators.so,,\n",
                            SITE36 + "/nvidia/dali/libdali.so": "", ops: "",
                            lib + "/libnvjpeg.so.%s" % nvjpeg: ""},
                     links={lib + "/libnvjpeg.so.10": "libnvjpeg.so.%s" % nvjpeg,
                            "/usr/local/cuda-10.1/lib64": "targets/x86_64-linux/lib"},
                     dirs={"/usr/local/cuda-10.1/lib64": ["libnvjpeg.so.10", "libnvjpeg.so.%s" % nvjpeg]}
                     if not own_copy else None,
                     environ={"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": "/usr/local/cuda-10.1/lib64"},
                     python={"executable": "/usr/bin/python3.6", "version": "3.6.9", "implementation": "cpython",
                             "prefix": "/usr", "base_prefix": "/usr", "sys_path": [SITE36]})
    host.doc["elf"] = {ops: {"soname": "libdali_operators.so", "needed": ["libdali.so"] + (
        ["libnvjpeg.so.10"] if needs else []) + ["libcudart.so.10.1", "libc.so.6"], "rpath": ["$ORIGIN"],
        "runpath": []}, SITE36 + "/nvidia/dali/libdali.so": {"soname": "libdali.so", "needed": ["libc.so.6"],
                                                             "rpath": ["$ORIGIN"], "runpath": []}}
    facts = Facts(f for r in run_probes(host, parallel=False, only=("python", "gpupackages")) for f in r.facts)
    return [f for f in run_checks(CheckContext(facts, [])) if f.code == "dali.nvjpeg_too_old"]


def test_dali_built_against_cuda_101_ga_nvjpeg_is_said() -> None:
    found = _dali_source_build()
    assert len(found) == 1 and found[0].severity == "warning"
    assert "nvjpeg 10.1.105" in found[0].title and "10.1.168" in found[0].title
    assert CUDA_LIB + "/libnvjpeg.so.10.1.105" in found[0].title and "use_batched_decode" in found[0].title
    assert "LD_LIBRARY_PATH" in found[0].detail and "10.1.168" in found[0].fix.text


def test_dali_quiet_with_update_1s_nvjpeg_its_own_copy_or_none_linked() -> None:
    assert _dali_source_build(nvjpeg="10.1.168") == []
    assert _dali_source_build(nvjpeg="10.2.1.89") == []
    assert _dali_source_build(own_copy=True) == []  # a copy inside the package is the package's own
    assert _dali_source_build(needs=False) == []  # nvJPEG linked statically, as DALI's wheels link it
