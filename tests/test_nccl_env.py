"""NCCL's own override variables (matrix/data/nccl_env.json): read as NCCL reads them, judged by
``nccl.topology_file_override``; the catalog walked entry by entry."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from envdoctor import matrix
from envdoctor.checks import CheckContext
from envdoctor.checks.environment import nccl_topology_override
from envdoctor.facts import Facts, ok
from envdoctor.matrix import nccl_env
from envdoctor.probes import run_probes

from .conftest import make_host

PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# Azure's NCv4 topology file as Azure's HPC image install script writes it to /opt/microsoft/ncv4/topo.xml (search-index
# file id 16621140258: 'Place NCv4 topology and graph files under /opt/microsoft/ncv4'), first two of its four GPUs;
# the <pci> tags' attributes wrapped onto a second line (XML allows it; NCCL's parser and ours read them alike).
NCV4_TOPO = """<system version="1">
  <cpu numaid="0" affinity="00000000,00000000,00ffffff" arch="x86_64" vendor="AuthenticAMD" familyid="175" modelid="1">
    <pci busid="0001:00:00.0" class="0x030200" vendor="0x10de" device="0x20b5"
         subsystem_vendor="0x10de" subsystem_device="0x1533" link_speed="" link_width="0">
      <gpu dev="0" sm="80" rank="0" gdr="1">
        <nvlink target="0002:00:00.0" count="12" tclass="0x030200"/>
      </gpu>
    </pci>
    <nic>
      <net name="eth0" dev="0" speed="100000" port="0" latency="0.000000" guid="0x0" maxconn="65536" gdr="0"/>
    </nic>
  </cpu>
  <cpu numaid="1" affinity="00000000,0000ffff,ff000000" arch="x86_64" vendor="AuthenticAMD" familyid="175" modelid="1">
    <pci busid="0002:00:00.0" class="0x030200" vendor="0x10de" device="0x20b5"
         subsystem_vendor="0x10de" subsystem_device="0x1533" link_speed="" link_width="0">
      <gpu dev="1" sm="80" rank="1" gdr="1">
        <nvlink target="0001:00:00.0" count="12" tclass="0x030200"/>
      </gpu>
    </pci>
  </cpu>
</system>
"""


def env_nccl(files: Dict[str, str], environ: Optional[Dict[str, str]] = None) -> Any:
    host = make_host(files=files, environ=dict({"PATH": PATH}, **(environ or {})))
    results = run_probes(host, only=["environment"], parallel=False)
    assert results[0].status == "ok", results[0].error
    return Facts(results[0].facts).value("env.nccl")


def judge(value: Any, buses: List[str]) -> List[Any]:
    facts = Facts([ok("env.nccl", value, "env:NCCL_*"),
                   ok("gpu.pci_devices", [{"bus_id": b, "device_id": "10de:20b5", "driver": "nvidia"} for b in buses],
                      "dir:/sys/bus/pci/devices")])
    return list(nccl_topology_override(CheckContext(facts, [])))


def test_the_catalog_rows_are_read_from_nccl_source_and_each_is_read_from_the_machine():
    table = nccl_env.rows()
    assert table and not matrix.validators()["nccl_env"](table)
    for row in table:
        assert row["source"]["url"].startswith("https://github.com/NVIDIA/nccl/blob/v2.30.7-1/src/")
        # each catalogued variable is picked up from the environment and from /etc/nccl.conf
        value = "/tmp/x.xml" if row["value"] == "path" else "1"
        assert env_nccl({}, {row["name"]: value})["variables"][row["name"]] == {"value": value, "from": "environment"}
        got = env_nccl({"/etc/nccl.conf": "%s=%s\n" % (row["name"], value)})["variables"][row["name"]]
        assert got == {"value": value, "from": "/etc/nccl.conf"}
        # judged by a documented code (or by none: dump files change nothing)
        assert row["judged_by"] is None or row["class"] != "dump"


def test_conf_files_are_read_in_nccls_order_and_never_override():
    # initEnv: the environment, then $NCCL_CONF_FILE (else ~/.nccl.conf), then /etc/nccl.conf; setenv(.., 0)
    files = {"/home/u/.nccl.conf": "# site\nNCCL_TOPO_FILE=/home/u/topo.xml\n",
             "/etc/nccl.conf": "NCCL_TOPO_FILE=/etc/topo.xml\nNCCL_GRAPH_FILE=/etc/graph.xml\n"}
    v = env_nccl(files, {"HOME": "/home/u"})["variables"]
    assert v["NCCL_TOPO_FILE"] == {"value": "/home/u/topo.xml", "from": "/home/u/.nccl.conf"}
    assert v["NCCL_GRAPH_FILE"] == {"value": "/etc/graph.xml", "from": "/etc/nccl.conf"}
    v = env_nccl(dict(files, **{"/opt/nccl.conf": "NCCL_TOPO_FILE=/opt/t.xml\n"}),
                 {"HOME": "/home/u", "NCCL_CONF_FILE": "/opt/nccl.conf", "NCCL_GRAPH_FILE": "/g.xml"})["variables"]
    assert v["NCCL_TOPO_FILE"]["from"] == "/opt/nccl.conf" and v["NCCL_GRAPH_FILE"]["from"] == "environment"
    assert env_nccl({}) == {"variables": {}, "conf_files": [], "xml_files": []}


def test_a_graph_file_is_said_with_where_it_was_set():
    # NVIDIA/nccl#1240: NCCL_GRAPH_FILE=/opt/microsoft/ncv4/graph.xml from the image's configuration
    value = env_nccl({"/etc/nccl.conf": "NCCL_GRAPH_FILE=/opt/microsoft/ncv4/graph.xml\n",
                      "/opt/microsoft/ncv4/graph.xml": '<graphs version="1">\n</graphs>\n'})
    found = judge(value, ["0001:00:00.0", "0002:00:00.0"])
    assert [f.code for f in found] == ["nccl.topology_file_override"] and found[0].severity == "warning"
    assert "NCCL_GRAPH_FILE=/opt/microsoft/ncv4/graph.xml" in found[0].title and "/etc/nccl.conf" in found[0].title
    assert found[0].fix.commands == ["sudo sed -i '/^NCCL_GRAPH_FILE=/d' /etc/nccl.conf"]
    # set in the environment: unset it
    found = judge(env_nccl({}, {"NCCL_GRAPH_FILE": "/tmp/g.xml"}), [])
    assert found[0].fix.commands == ["unset NCCL_GRAPH_FILE"]


def test_a_topology_file_is_judged_by_the_gpus_it_describes():
    files = {"/etc/nccl.conf": "NCCL_TOPO_FILE=/opt/microsoft/ncv4/topo.xml\n",
             "/opt/microsoft/ncv4/topo.xml": NCV4_TOPO}
    value = env_nccl(files)
    assert value["xml_files"][0]["gpu_bus_ids"] == ["0001:00:00.0", "0002:00:00.0"]
    # on the VM it describes: quiet
    assert judge(value, ["0001:00:00.0", "0002:00:00.0"]) == []
    # on another machine: its GPUs are elsewhere
    found = judge(value, ["0000:07:00.0", "0000:0b:00.0"])
    assert len(found) == 1 and "NCCL_TOPO_FILE=/opt/microsoft/ncv4/topo.xml" in found[0].title
    assert "0001:00:00.0" in found[0].title
    # a file NCCL cannot open, or whose GPUs are unknown: nothing to compare, nothing said
    assert judge(env_nccl({"/etc/nccl.conf": "NCCL_TOPO_FILE=/nowhere.xml\n"}), ["0000:07:00.0"]) == []
    assert judge(value, []) == []


def test_nccls_default_topology_file_is_judged_too():
    value = env_nccl({"/var/run/nvidia-topologyd/virtualTopology.xml": NCV4_TOPO})
    assert value["xml_files"][0]["variable"] is None
    found = judge(value, ["0000:07:00.0", "0000:0b:00.0"])
    assert len(found) == 1 and "default topology file" in found[0].title
    assert found[0].fix.commands == ["sudo mv /var/run/nvidia-topologyd/virtualTopology.xml "
                                     "/var/run/nvidia-topologyd/virtualTopology.xml.stale"]
    assert judge(value, ["0001:00:00.0", "0002:00:00.0"]) == []


def _nccl_gpu(ccs: List[str], copies: List[str], choice: Optional[str] = None) -> List[Any]:
    from envdoctor.checks.libraries.nccl_gpu import nccl_gpu

    facts = [ok("gpu.count", len(ccs), "nvml:device_count")]
    for i, cc in enumerate(ccs):
        facts.append(ok("gpu.%d.compute_capability" % i, cc, "nvml:device"))
        facts.append(ok("gpu.%d.name" % i, "NVIDIA GeForce RTX 5090" if cc == "12.0" else "NVIDIA H100", "nvml"))
    facts.append(ok("libraries.nccl", [{"path": "/venv/nvidia/nccl/lib/libnccl.so.2", "version": v, "kind": "library"}
                                       for v in copies], "derived"))
    if choice:
        facts.append(ok("libraries.loader_choice", {"libnccl.so.2": {"path": "/usr/lib/libnccl.so.2",
                                                                      "version": choice}}, "derived"))
    return list(nccl_gpu(CheckContext(Facts(facts), [])))


def test_nccl_too_old_for_the_gpus_walks_every_catalog_row():
    for row in nccl_env.arch_rows():
        need = row["nccl_min"]
        older = "%s.%d" % (need.rsplit(".", 1)[0], int(need.rsplit(".", 1)[1]) - 1) \
            if int(need.rsplit(".", 1)[1]) > 0 else "2.0.0"
        found = _nccl_gpu([row["cc"], row["cc"]], [older])
        assert [f.code for f in found] == ["nccl.too_old_for_gpu"] and need in found[0].title
        assert found[0].severity == ("error" if row["kind"] == "fails_before" else "warning")
        assert _nccl_gpu([row["cc"], row["cc"]], [need]) == []  # the first release: quiet
        assert _nccl_gpu([row["cc"]], [older]) == []  # one GPU: NCCL's kernels never run between GPUs


def test_nccl_2251_on_two_rtx5090_and_what_is_left_unsaid():
    # NVIDIA/nccl#1637: nvidia-nccl-cu12 2.25.1 with two RTX 5090 (compute capability 12.0)
    found = _nccl_gpu(["12.0", "12.0"], ["2.25.1"])
    assert found[0].severity == "error" and "2.25.1" in found[0].title and "2.26.2" in found[0].title
    # a new-enough copy beside it: which one the job loads is not known, nothing said
    assert _nccl_gpu(["12.0", "12.0"], ["2.25.1", "2.27.3"]) == []
    # the loader's choice decides when it is known
    assert _nccl_gpu(["12.0", "12.0"], ["2.25.1", "2.27.3"], choice="2.21.5")[0].severity == "error"
    assert _nccl_gpu(["12.0", "12.0"], ["2.25.1"], choice="2.26.2") == []
    # a GPU the table has no row for (Ampere): nothing to say
    assert _nccl_gpu(["8.0", "8.0"], ["2.7.8"]) == []
