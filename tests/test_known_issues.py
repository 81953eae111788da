"""known_issues.json and the checks that read it (nccl.known_broken_release, cudnn.known_bad_release).

Facts are written in the probes' own forms: GPU names as NVML reports them, ``topology.nics`` as the topology
probe writes it from /sys/class/infiniband, ``env.nccl`` as the environment probe writes it."""

from typing import Any, Dict, List, Optional

import pytest

from envdoctor.checks import CheckContext
from envdoctor.checks.libraries.known_issues import cudnn_known_issues, nccl_known_issues
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
        assert row["source"]["verified"] and row["source"]["url"].startswith("https://")
        assert row["fixed_in"] or row["fixed_by"]


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
