"""Apptainer's nvliblist.conf (the driver libraries `apptainer --nv` binds) against the installed driver's libraries
CUDA and OpenCL need in a container (matrix ``container_compute_libraries``: NVIDIA's libnvidia-container
compute_libs, and Apptainer's own release notes).

The machine is corpus case b17-ubuntu2204-apptainer-124-nvliblist-without-libnvidia-nvvm-driver535-opencl: Apptainer
1.2.4 at /usr/bin/apptainer with /etc/apptainer/nvliblist.conf as 1.2.4's etc/nvliblist.conf lists it (no
libnvidia-nvvm.so), driver 535.247.01 with libnvidia-opencl.so.1 and libnvidia-nvvm.so.4
(https://github.com/apptainer/apptainer/blob/v1.2.5/CHANGELOG.md: "Added `libnvidia-nvvm` to `nvliblist.conf`"). The
quiet variants: the one line Apptainer 1.2.5 added to its etc/nvliblist.conf (git diff v1.2.4 v1.2.5); its
apptainer.conf handing --nv to nvidia-container-cli; no Apptainer; a driver without libnvidia-nvvm.
"""

from __future__ import annotations

from typing import Any, Dict

from envdoctor.host.snapshot import SnapshotHost

from .conftest import corpus_snapshot, probe_facts, snapshot_findings

CASE = "b17-ubuntu2204-apptainer-124-nvliblist-without-libnvidia-nvvm-driver535-opencl"
CONF = "/etc/apptainer/nvliblist.conf"
CODE = "container.nvliblist_missing_library"
LIBDIR = "/usr/lib/x86_64-linux-gnu"


def _codes(doc: Dict[str, Any]) -> Dict[str, Any]:
    return {f.code: f for f in snapshot_findings(doc)}


def test_apptainer_124_list_without_libnvidia_nvvm_on_driver_535():
    f = _codes(corpus_snapshot(CASE))[CODE]
    assert f.severity == "warning"
    assert "libnvidia-nvvm.so" in f.title and CONF in f.title and "1.2.4" in f.title
    assert "libnvidia-nvvm.so.4" in f.detail and "1.2.5" in f.detail
    assert f.fix.commands == ["echo libnvidia-nvvm.so | sudo tee -a %s" % CONF]
    assert "upgrade Apptainer to 1.2.5" in f.fix.text


def test_the_probe_reads_the_list_as_apptainer_does():
    value = probe_facts(SnapshotHost(corpus_snapshot(CASE), "case")).mapping("container.apptainer")
    assert value["program"] == "apptainer" and value["version"] == "1.2.4" and value["nvliblist"] == CONF
    assert "libnvidia-opencl.so" in value["entries"] and not any(e.startswith("#") for e in value["entries"])


def test_quiet_with_the_line_apptainer_125_added():
    doc = corpus_snapshot(CASE)
    text = doc["files"][CONF]["text"]
    doc["files"][CONF]["text"] = text.replace("libnvidia-ml.so\n", "libnvidia-ml.so\nlibnvidia-nvvm.so\n")
    assert CODE not in _codes(doc)


def test_quiet_when_nvidia_container_cli_binds_the_libraries():
    # apptainer.conf "use nvidia-container-cli = yes": --nv asks nvidia-container-cli, which does not read the list
    doc = corpus_snapshot(CASE)
    doc["files"]["/etc/apptainer/apptainer.conf"] = {"text": "use nvidia-container-cli = yes\n"}
    doc["dirs"]["/etc/apptainer"]["entries"].append("apptainer.conf")
    assert CODE not in _codes(doc)


def test_quiet_without_apptainer():
    doc = corpus_snapshot(CASE)
    doc["dirs"]["/usr/bin"]["entries"].remove("apptainer")
    del doc["files"]["/usr/bin/apptainer"]
    assert probe_facts(SnapshotHost(doc, "case")).mapping("container.apptainer") == {"installed": False}
    assert CODE not in _codes(doc)


def test_quiet_when_the_driver_has_no_libnvidia_nvvm():
    doc = corpus_snapshot(CASE)
    for name in ("libnvidia-nvvm.so.4", "libnvidia-nvvm.so.535.247.01"):
        doc["dirs"][LIBDIR]["entries"].remove(name)
        doc["files"].pop(LIBDIR + "/" + name, None)
        doc["links"].pop(LIBDIR + "/" + name, None)
    for c in doc["commands"]:
        if c["argv"][-1] == "-p":
            kept = [line for line in c["stdout"].splitlines() if "nvvm" not in line]
            kept[0] = kept[0].replace("5 libs", "4 libs")  # ldconfig's own count of the entries
            c["stdout"] = "".join(line + "\n" for line in kept)
    links = probe_facts(SnapshotHost(doc, "case")).items("driver.library_links")
    assert [lk["link"] for lk in links if "opencl" in lk["link"]]  # still judged: only the nvvm library is gone
    assert CODE not in _codes(doc)


def test_singularity_under_usr_local_reads_its_own_sysconfdir():
    # a source install of SingularityCE (./mconfig default prefix /usr/local): /usr/local/etc/singularity
    doc = corpus_snapshot(CASE)
    conf = doc["files"].pop(CONF)
    doc["dirs"].pop("/etc/apptainer")
    doc["dirs"]["/etc"]["entries"].remove("apptainer")
    doc["dirs"]["/usr/bin"]["entries"].remove("apptainer")
    del doc["files"]["/usr/bin/apptainer"]
    doc["dirs"].setdefault("/usr/local", {"entries": []})["entries"] += ["bin", "etc"]
    doc["dirs"]["/usr/local/bin"] = {"entries": ["singularity"]}
    doc["dirs"]["/usr/local/etc"] = {"entries": ["singularity"]}
    doc["dirs"]["/usr/local/etc/singularity"] = {"entries": ["nvliblist.conf"]}
    doc["files"]["/usr/local/bin/singularity"] = {"text": ""}
    doc["files"]["/usr/local/etc/singularity/nvliblist.conf"] = conf
    doc["commands"].append({"argv": ["/usr/local/bin/singularity", "--version"], "returncode": 0, "stdout":
                            "singularity-ce version 3.11.4\n", "stderr": "", "error": None, "message": "",
                            "timed_out": False, "duration": 0.0})
    f = _codes(doc)[CODE]
    assert "/usr/local/etc/singularity/nvliblist.conf" in f.title and "Singularity 3.11.4" in f.title
    assert "upgrade Apptainer" not in f.fix.text
