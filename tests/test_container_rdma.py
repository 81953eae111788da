"""Containers on RDMA hosts (InfiniBand, RoCE, EFA): sysfs inside a container lists the host's RDMA devices, but
libibverbs opens /dev/infiniband/uverbsN for each (rdma-core libibverbs/device.c), so a container started without
those nodes cannot use them: fi_info -p efa answers -61, aws-ofi-nccl fails, NCCL falls back to sockets."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from envdoctor.checks import CheckContext
from envdoctor.checks.containers import container_rdma
from envdoctor.facts import Facts, ok

from .conftest import make_host
from .test_probe_containers import facts_of

EFA_ENV = {"PATH": "/opt/amazon/efa/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
           "LD_LIBRARY_PATH": "/opt/amazon/efa/lib:/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu"}


def _efa_host(nodes: Optional[List[str]], userspace: bool = True, devices: int = 4) -> Any:
    """A p4d-like machine as a container sees it: ``devices`` EFA devices in sysfs (PCI function bound to efa),
    their uverbsN, and /dev/infiniband holding ``nodes`` (None: no /dev/infiniband)."""
    files: Dict[str, str] = {}
    links: Dict[str, str] = {}
    for i in range(devices):
        bdf = "0000:%02x:1b.0" % (0x10 * (i + 1))
        name = "rdmap%ds27" % (16 * (i + 1))
        links["/sys/class/infiniband/%s/device" % name] = "../../../bus/pci/devices/%s" % bdf
        links["/sys/bus/pci/devices/%s/driver" % bdf] = "../../../../bus/pci/drivers/efa"
        files["/sys/class/infiniband/%s/ports/1/link_layer" % name] = "Unspecified\n"
        files["/sys/class/infiniband_verbs/uverbs%d/ibdev" % i] = name + "\n"
    for n in nodes or []:
        files["/dev/infiniband/" + n] = ""
    files["/dev/nvidia0"] = ""
    if userspace:
        files["/opt/amazon/efa/lib/libfabric.so.1"] = ""
        files["/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu/libnccl-net.so"] = ""
    return make_host(files=files, links=links, environ=EFA_ENV)


def _found(host: Any, container: Any = "docker") -> List[Any]:
    facts = facts_of(host)
    rdma = facts.get("container.rdma")
    both = Facts(([rdma] if rdma is not None else []) + [ok("os.container", container, "file:/.dockerenv")])
    return list(container_rdma(CheckContext(both, [])))


def test_efa_devices_without_uverbs_nodes_are_said() -> None:
    host = _efa_host(nodes=None)
    value = facts_of(host).value("container.rdma")
    assert [d["driver"] for d in value["devices"]] == ["efa"] * 4
    assert value["verbs"] == ["uverbs0", "uverbs1", "uverbs2", "uverbs3"] and value["nodes"] == []
    assert [u["soname"] for u in value["userspace"]] == ["libfabric.so.1", "libnccl-net.so"]
    found = _found(host)
    assert [(f.code, f.severity) for f in found] == [("container.rdma_devices_not_passed", "warning")]
    f = found[0]
    assert "4 EFA device(s)" in f.title and "/dev/infiniband/uverbs*" in f.title
    assert "fi_getinfo: -61" in f.detail and "libfabric.so.1" in f.detail
    assert "--device=/dev/infiniband/uverbs3" in f.fix.commands[0]
    assert "vpc.amazonaws.com/efa" in f.fix.text and "k8s-rdma-shared-dev-plugin" in f.fix.text
    # /dev/infiniband there but only rdma_cm in it: still no verbs device
    assert [x.code for x in _found(_efa_host(nodes=["rdma_cm"]))] == ["container.rdma_devices_not_passed"]


def test_quiet_with_nodes_on_a_host_without_rdma_or_outside_a_container() -> None:
    # the nodes passed in (all, or a device plugin's share of them)
    assert _found(_efa_host(nodes=["uverbs%d" % i for i in range(4)] + ["rdma_cm"])) == []
    assert _found(_efa_host(nodes=["uverbs2"])) == []
    # bare metal: a host's own /dev/infiniband is udev's business, not a container's device list
    assert _found(_efa_host(nodes=None), container=None) == []
    # a host without RDMA devices: no fact at all
    assert facts_of(_efa_host(nodes=None, devices=0)).get("container.rdma") is None
    assert _found(_efa_host(nodes=None, devices=0)) == []
    # no RDMA user space in the image: nothing in it would use the devices
    assert _found(_efa_host(nodes=None, userspace=False)) == []


def test_infiniband_hca_is_named_rdma_and_explained() -> None:
    host = make_host(files={"/sys/class/infiniband/mlx5_0/ports/1/link_layer": "InfiniBand\n",
                            "/sys/class/infiniband_verbs/uverbs0/ibdev": "mlx5_0\n",
                            "/usr/lib/x86_64-linux-gnu/libibverbs.so.1": ""},
                     links={"/sys/class/infiniband/mlx5_0/device": "../../../bus/pci/devices/0000:17:00.0",
                            "/sys/bus/pci/devices/0000:17:00.0/driver": "../../../../bus/pci/drivers/mlx5_core"})
    found = _found(host)
    assert len(found) == 1 and "1 RDMA device(s) (mlx5_0 (mlx5_core))" in found[0].title
    assert "libibverbs.so.1" in found[0].detail and "no /dev/infiniband," in found[0].detail
    assert "vpc.amazonaws.com" not in " ".join(found[0].fix.commands)
