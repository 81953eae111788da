"""Checks on the paths between the GPUs (the topology probe's facts): what will stop or slow a multi-GPU job
before it starts.

* ``topology.nccl_abort``: NVLink-connected GPUs whose P2P NVML reports disabled: NCCL aborts.
* ``topology.nccl_slow_transport``: an NCCL variable (environment or nccl.conf) forcing a slower transport
  than NCCL would pick; ``topology.nccl_level_ignored``: an NCCL_P2P_LEVEL NCCL does not understand.
* ``topology.acs_redirect``: ACS redirecting peer-to-peer requests on a PCIe path NCCL uses for P2P.
* ``topology.iommu_translates_p2p``: the IOMMU translating the GPUs' DMA while pairs use PCIe P2P.
* ``topology.nvlink_inactive`` / ``topology.nvlink_trained_down``: NVLinks down, or at a lower version
  than the GPU's other links (never on boards without NVLink).
* ``topology.fabric_not_ready``: the GPU fabric not set up although the fabric manager runs.
* ``topology.p2p_unsupported_consumer``: GeForce/TITAN boards without PCIe P2P (information).
* ``topology.p2p_patched_driver``: P2P between GeForce boards that NVIDIA's driver does not offer.
* ``topology.small_bar1``: a BAR1 smaller than the GPU's memory on a GPU doing PCIe P2P.
* ``topology.numa_split``: a job's GPUs spread over NUMA nodes when one node holds enough of them.

A fact the probe could not establish (no root for ACS, a snapshot that did not record it) gives no finding:
that is "unknown", and the facts say so.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from ..facts import Facts
from ..findings import Finding, Fix
from ..probes.topology import IOMMU_KERNEL_DEFAULT  # GPUs whose kernel reports no IOMMU mode and nothing sets it
from . import CheckContext, CodeDoc, check

CHECKED = "2026-11-29"
NCCL_ENV = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"
NCCL_GPU_TROUBLE = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting/gpu_troubleshooting.html"
NVML_TOPO = "https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html"
NVML_NVLINK = "https://docs.nvidia.com/deploy/nvml-api/group__NvLink.html"
FABRIC_DOC = "https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/index.html"
P2P_FORK = "https://github.com/tinygrad/open-gpu-kernel-modules"
KERNEL_PARAMS = "https://docs.kernel.org/admin-guide/kernel-parameters.html"
NCCL_RULES = "https://github.com/NVIDIA/nccl/blob/v2.30.3-1/src/graph/paths.cc#L338-L349"
CUDA_IOMMU = "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#iommu-on-linux"

_TOPO_READS = ("topology.*", "topology.*.*", "gpu.*", "gpu.*.*", "driver.*", "driver.*.*", "env.*")


def _ev(facts: Facts, *keys: str) -> List[Dict[str, Any]]:
    return [f.to_dict() for f in (facts.get(k) for k in keys) if f is not None]


def _src(rule: str, url: str) -> Dict[str, Any]:
    return {"rule": rule, "url": url, "checked": CHECKED}


def _pairs(facts: Facts) -> List[Dict[str, Any]]:
    return [p for p in facts.items("topology.pairs") if isinstance(p, dict)]


def _gpus(facts: Facts) -> List[Dict[str, Any]]:
    return [g for g in facts.items("topology.gpus") if isinstance(g, dict)]


def _name(facts: Facts, i: Any) -> str:
    return "GPU %s (%s)" % (i, facts.value("gpu.%s.name" % i) or "unknown model")


def _pair_list(pairs: Sequence[Dict[str, Any]], most: int = 6) -> str:
    text = ", ".join("%s-%s" % (p["a"], p["b"]) for p in pairs[:most])
    return text + (" and %d more" % (len(pairs) - most) if len(pairs) > most else "")


def _job(facts: Facts) -> Optional[List[int]]:
    info = facts.mapping("topology.nccl")
    job = info.get("gpus_in_job")
    return [i for i in job if isinstance(i, int)] if isinstance(job, list) else None


def _in_job(facts: Facts, pairs: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
    job = _job(facts)
    if job is None:
        return list(pairs)
    members = set(job)  # 64 GPUs: 2,016 pairs, each looked up in the job's GPUs twice

    def has(gpu: Any) -> bool:
        try:
            return gpu in members
        except TypeError:  # a damaged report's unhashable index is no GPU of the job, as in a list
            return False

    return [p for p in pairs if has(p.get("a")) and has(p.get("b"))]


def _job_pairs(facts: Facts) -> List[Dict[str, Any]]:
    """The pairs of GPUs a job here has (:func:`_in_job`), worked out once for the checks that ask (64 GPUs: 2,016
    pairs)."""
    return list(facts.derived("checks.topology.job_pairs", lambda f: _in_job(f, _pairs(f))))


def _pcie_p2p(pairs: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The pairs NCCL connects by P2P over PCIe."""
    return [p for p in pairs if p.get("nccl") == "P2P/PCIe"]


def _cuda_pcie_peers(pairs: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The pairs CUDA's peer access reaches over PCIe: NVML's P2P read and write status OK between GPUs joined by
    no NVLink (cudaDeviceCanAccessPeer answers 1; cudaMemcpyPeer and programs enabling peer access copy directly,
    whatever transport NCCL would pick)."""
    out = []
    for p in pairs:
        p2p = p.get("p2p")
        if not isinstance(p2p, dict) or p.get("nvlinks") or p.get("p2p_nvlink") == "OK":
            continue
        if p2p.get("read") == "OK" and p2p.get("write") == "OK":
            out.append(p)
    return out


# -- NCCL ------------------------------------------------------------------------------------------------

@check("topology-nccl", requires=("topology.pairs",), reads=_TOPO_READS, layers=("topology",), codes=(
    CodeDoc("topology.nccl_abort", "error", "NVLink-connected GPUs whose peer-to-peer access NVML reports "
            "disabled: NCCL aborts the communicator.", "topology.pairs (path, p2p read/write), topology.nccl",
            "NCCL 2.12 and later check NVML's P2P status of every NVLink pair and stop with \"P2P is disabled "
            "between NVLINK connected GPUs\" (ncclUnhandledCudaError): every multi-GPU job on these GPUs fails at "
            "start.", NCCL_RULES),
    CodeDoc("topology.nccl_slow_transport", "warning", "An NCCL variable (in the environment or an nccl.conf) makes "
            "NCCL use a slower transport between GPUs than it would pick on its own.",
            "topology.pairs (nccl, nccl_without_variables), topology.nccl (variables and where each is set)",
            "NCCL_P2P_DISABLE, a low NCCL_P2P_LEVEL or NCCL_SHM_DISABLE left in a job template or /etc/nccl.conf "
            "sends GPU traffic through host memory or the network: collectives run several times slower, "
            "silently.", NCCL_ENV),
    CodeDoc("topology.nccl_level_ignored", "info", "NCCL_P2P_LEVEL holds a value NCCL does not understand, so "
            "NCCL ignores it.", "topology.nccl", "The setting does not do what its author meant; NCCL uses its "
            "own default level.", NCCL_ENV),
))
def topology_nccl(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    pairs = _job_pairs(facts)
    info = facts.mapping("topology.nccl")
    variables: Dict[str, Any] = info["variables"] if isinstance(info.get("variables"), dict) else {}
    version = info.get("version") or "unknown"
    rules_url = str(info.get("source") or NCCL_RULES)
    aborts = [p for p in pairs if p.get("nccl") == "abort"]
    if aborts:
        reads = sorted({"%s/%s" % (p["p2p"].get("read"), p["p2p"].get("write")) for p in aborts})
        yield Finding(
            code="topology.nccl_abort", severity="error", components=["topology", "nccl", "driver"],
            title="NCCL %s will abort: P2P is disabled between NVLink-connected GPUs %s (NVML P2P read/write %s)" % (
                version, _pair_list(aborts), ", ".join(reads)),
            detail="These GPUs are joined by NVLink, but NVML reports that they cannot access each other's memory; "
                   "NCCL treats that as a hardware problem and refuses to start (\"P2P is disabled between NVLINK "
                   "connected GPUs\"). A fabric that is not ready, a GPU in a bad state or a driver setting are the "
                   "usual causes.",
            evidence=_ev(facts, "topology.pairs", "topology.nccl", "topology.fabric"),
            source=_src("ncclTopoCheckP2p: NVML P2P read/write not OK on an NVL/NVB path -> ncclUnhandledCudaError",
                        rules_url),
            fix=Fix(text="Check the NVLink and fabric state, reset the GPUs or reboot; NCCL_IGNORE_DISABLED_P2P=1 "
                         "lets NCCL start over a slower path meanwhile.",
                    commands=["nvidia-smi topo -p2p n", "nvidia-smi nvlink -s",
                              "nvidia-smi -q | grep -A 3 -i fabric"]))
    slow = [p for p in pairs if p.get("nccl_without_variables") and p.get("nccl") not in ("abort", None)
            and _rank(p["nccl"]) > _rank(p["nccl_without_variables"])]
    if slow:
        setting = ["%s=%s (%s)" % (k, v.get("value"), v.get("from")) for k, v in sorted(variables.items())
                   if k in ("NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL", "NCCL_SHM_DISABLE") and isinstance(v, dict)]
        changes = sorted({"%s instead of %s" % (p["nccl"], p["nccl_without_variables"]) for p in slow})
        files = sorted({str(v.get("from")) for k, v in variables.items() if isinstance(v, dict)
                        and k in ("NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL", "NCCL_SHM_DISABLE")
                        and v.get("from") != "environment"})
        names = [s.split("=", 1)[0] for s in setting]
        commands = ["unset %s" % " ".join(n for n in names)] if any(
            isinstance(variables.get(n), dict) and variables[n].get("from") == "environment" for n in names) else []
        commands += ["sudo sed -i '/^%s=/d' %s" % ("\\|".join(names), f) if f.startswith("/etc") else
                     "sed -i '/^%s=/d' %s" % ("\\|".join(names), f) for f in files]
        yield Finding(
            code="topology.nccl_slow_transport", severity="warning", components=["topology", "nccl"],
            title="%s makes NCCL %s use %s between GPUs %s" % (", ".join(setting), version, "; ".join(changes),
                                                               _pair_list(slow)),
            detail="Without these settings NCCL would connect these GPUs directly (%s); with them the traffic goes "
                   "the slower way. Variables left in a job template or an nccl.conf apply to every job." % (
                       ", ".join(sorted({str(p["nccl_without_variables"]) for p in slow}))),
            evidence=_ev(facts, "topology.pairs", "topology.nccl"),
            source=_src("ncclGetLevel (NCCL_P2P_DISABLE, NCCL_P2P_LEVEL), shmCanConnect (NCCL_SHM_DISABLE)",
                        rules_url),
            fix=Fix(text="Remove the variables unless a known problem needs them (then fix that problem: ACS, "
                         "IOMMU, a bad link).", commands=commands))
    ignored = info.get("ignored")
    if isinstance(ignored, str) and ignored:
        yield Finding(
            code="topology.nccl_level_ignored", severity="info", components=["topology", "nccl"],
            title="%s" % ignored,
            detail="NCCL compares NCCL_P2P_LEVEL with its own level names (or an old number); any other value is "
                   "ignored and NCCL uses its default.",
            evidence=_ev(facts, "topology.nccl"),
            source=_src("ncclGetLevel", rules_url),
            fix=Fix(text="Use one of NCCL's level names (NVL, PIX, PXB, PHB, SYS) or remove the variable."))


def _rank(transport: Any) -> int:
    order = ("P2P/NVLink", "P2P/PCIe", "SHM", "NET", "abort")
    return order.index(transport) if transport in order else len(order)


# -- PCIe: ACS, IOMMU, BAR1 ------------------------------------------------------------------------------

@check("topology-pcie-p2p", requires=("topology.pairs",), reads=_TOPO_READS, layers=("topology",), codes=(
    CodeDoc("topology.acs_redirect", "warning", "A PCIe bridge on a path NCCL uses for peer-to-peer has ACS "
            "redirect enabled.", "topology.acs, topology.acs_redirect, topology.pairs, topology.iommu_mode",
            "Peer-to-peer requests are sent up to the root complex instead of on to the peer: bandwidth drops, "
            "and NCCL and CUDA P2P can hang. The bridges are those of every pair NCCL connects by P2P: the switch "
            "ports of a PIX/PXB path, and the root ports of a path across the root complex where NCCL's P2P "
            "level reaches it (AMD x86 CPUs with at most two GPUs, ncclTopoCheckP2p).", NCCL_GPU_TROUBLE),
    CodeDoc("topology.iommu_translates_p2p", "warning", "The IOMMU translates the GPUs' DMA (DMA/DMA-FQ mode) "
            "while NCCL or CUDA peer access uses PCIe peer-to-peer between them; also raised where the GPUs are in "
            "IOMMU groups of a kernel that does not report their mode (Linux before 5.11) and nothing sets it (no "
            "iommu=pt, iommu.passthrough, readable /boot/config): the kernel's default domain, translated unless "
            "built with CONFIG_IOMMU_DEFAULT_PASSTHROUGH=y, named as unverified with how to check it.",
            "topology.iommu_mode, topology.pairs, topology.kernel_parameters", "IO virtualization redirects "
            "peer-to-peer PCI traffic to the CPU root complex: a large slowdown or a hang of NCCL collectives, "
            "and on AMD hosts IO_PAGE_FAULTs and hung peer copies.", NCCL_GPU_TROUBLE),
    CodeDoc("topology.small_bar1", "warning", "A GPU doing PCIe peer-to-peer has a BAR1 smaller than its "
            "memory.", "topology.gpus (bar1_bytes, memory_bytes), topology.pairs",
            "Peers reach the GPU's memory through BAR1; with a small aperture (no Above 4G Decoding / "
            "Resizable BAR) mapping peer memory fails (\"mapping of buffer object failed\") once it is used up.",
            P2P_FORK),
))
def topology_pcie_p2p(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    pairs = _job_pairs(facts)
    p2p = _pcie_p2p(pairs)
    mode = facts.text("topology.iommu_mode")
    translating = mode in ("DMA", "DMA-FQ")
    redirect = [e for e in facts.items("topology.acs") if isinstance(e, dict) and e.get("redirect") is True]
    on_path = [e for e in redirect if any(tuple(x) in {(p["a"], p["b"]) for p in p2p} for x in e.get("pairs") or [])]
    if on_path:
        bdfs = [str(e["bdf"]) for e in on_path]
        affected = [p for p in p2p if any([p["a"], p["b"]] in (e.get("pairs") or []) for e in on_path)]
        # a path through the root complex (PHB/NODE/SYS) carries P2P only by NCCL's P2P level for this CPU
        # (ncclTopoCheckP2p: on AMD x86 with at most two GPUs the level is SYS): say so, with NCCL's rule
        across = [p for p in affected if p.get("pcie") not in ("PIX", "PXB")]
        info = facts.mapping("topology.nccl")
        rule = ""
        if across:
            rule = (" NCCL uses P2P across the root complex between GPUs %s (%s; P2P level %s: %s; NCCL's "
                    "ncclTopoCheckP2p, %s), so ACS redirect at their root ports sits on that path." % (
                        _pair_list(across), across[0].get("nccl_why") or "path within the P2P level",
                        info.get("p2p_level") or "?", info.get("why") or "NCCL's default",
                        info.get("source") or NCCL_RULES))
        yield Finding(
            code="topology.acs_redirect", severity="warning", components=["topology", "gpu"],
            title="ACS redirect is on at PCIe bridge%s %s, on the P2P path of GPUs %s%s" % (
                "s" if len(bdfs) > 1 else "", ", ".join(bdfs[:4]) + (" and more" if len(bdfs) > 4 else ""),
                _pair_list(affected), " (and the IOMMU translates)" if translating else ""),
            detail="With ACS P2P Request/Completion Redirect set, the bridge sends GPU-to-GPU requests up to the root "
                   "complex for checking instead of on to the peer: NCCL's P2P bandwidth drops%s, and collectives "
                   "can hang.%s" % (
                       " (the IOMMU translates every one of them)" if translating else "", rule),
            evidence=_ev(facts, "topology.acs", "topology.acs_redirect", "topology.iommu_mode",
                         *(("topology.pairs", "topology.nccl") if across else ())),
            source=_src("NCCL troubleshooting: PCI Access Control Services (ACS) must be off on P2P paths",
                        NCCL_GPU_TROUBLE + "#pci-access-control-services-acs"),
            fix=Fix(text="Disable ACS on these bridges (firmware: 'ACS' or 'IO virtualization'; or at boot with "
                         "pci=disable_acs_redir=; setpci clears it until the next reboot).",
                    commands=["sudo setpci -s %s ECAP_ACS+0x6.w=0000" % b for b in bdfs[:8]]
                    + ["sudo lspci -vvv | grep -i acsctl"]))
    # by identity, not by comparing every pair with every other (two pairs equal have the same NCCL transport:
    # both are in p2p or neither)
    in_p2p = {id(p) for p in p2p}
    peers = [p for p in _cuda_pcie_peers(pairs) if id(p) not in in_p2p]
    by_default = mode == IOMMU_KERNEL_DEFAULT
    if (translating or by_default) and (p2p or peers):
        params = " ".join(facts.strings("topology.kernel_parameters")) or "none"
        fact = facts.get("topology.iommu_mode")
        said = ""
        if by_default:
            said = (" This kernel does not report its IOMMU groups' mode (Linux before 5.11), its command line sets "
                    "none (no iommu=pt, iommu.passthrough or amd_iommu=off/intel_iommu=off) and its build "
                    "configuration could not be read, so the GPUs' groups are in the kernel's default domain: "
                    "translated unless the kernel was built with CONFIG_IOMMU_DEFAULT_PASSTHROUGH=y. That default is "
                    "unverified here: 'dmesg | grep -i \"default domain type\"' says Translated or Passthrough "
                    "where the kernel prints it at boot, or grep CONFIG_IOMMU_DEFAULT_PASSTHROUGH in "
                    "/boot/config-$(uname -r).")
        elif fact is not None and fact.source.startswith("file:/proc/cmdline,file:/boot/config-"):
            said = (" This kernel does not report its IOMMU groups' mode (Linux before 5.11); its command line sets "
                    "none and its build configuration leaves CONFIG_IOMMU_DEFAULT_PASSTHROUGH unset, so the GPUs' "
                    "groups are in the default, translated domain.")
        elif fact is not None and fact.source == "file:/proc/cmdline":
            said = (" This kernel does not report its IOMMU groups' mode (Linux before 5.11); the mode is read from "
                    "the kernel command line, which turns the IOMMU on without passthrough.")
        if p2p:
            what = "NCCL uses PCIe P2P between GPUs %s" % _pair_list(p2p)
            if peers:
                what += " and CUDA peer access between GPUs %s" % _pair_list(peers)
        else:
            what = "CUDA peer access over PCIe is on between GPUs %s" % _pair_list(peers)
        yield Finding(
            code="topology.iommu_translates_p2p", severity="warning", components=["topology", "kernel"],
            title=("The IOMMU is on for the GPUs in the kernel's default mode, translated unless the kernel was "
                   "built for passthrough (unverified), while %s" % what) if by_default
            else "The IOMMU translates GPU DMA (%s mode) while %s" % (mode, what),
            detail="In DMA mode every peer-to-peer access goes through the IOMMU at the root complex: CUDA does not "
                   "support PCIe peer-to-peer copies on bare-metal Linux with the IOMMU translating (peer copies "
                   "fault or are dropped, and NCCL collectives hang), and NCCL's troubleshooting guide names it as a "
                   "cause of low bandwidth and hangs. Passthrough (iommu=pt) keeps the IOMMU for devices that need it "
                   "but lets GPU P2P go straight across.%s IOMMU kernel parameters now: %s." % (said, params),
            evidence=_ev(facts, "topology.iommu_mode", "topology.kernel_parameters", "topology.pairs"),
            source=_src("CUDA Programming Guide, IOMMU on Linux: bare-metal PCIe peer-to-peer copies need the IOMMU "
                        "off or in passthrough; NCCL troubleshooting: IO virtualization redirects PCI point-to-point "
                        "traffic to the root complex", CUDA_IOMMU),
            fix=Fix(text="Boot with the IOMMU in passthrough mode (add iommu=pt to the kernel command line), or "
                         "turn IO virtualization off in the firmware if nothing needs it; then reboot.",
                    commands=["cat /proc/cmdline"]
                    + (["dmesg | grep -i 'default domain type'",
                        "grep CONFIG_IOMMU_DEFAULT_PASSTHROUGH /boot/config-$(uname -r)"] if by_default else [])
                    + ["sudo grubby --update-kernel=ALL --args=iommu=pt  # RHEL family; Debian/Ubuntu: add "
                              "iommu=pt to GRUB_CMDLINE_LINUX in /etc/default/grub, then sudo update-grub",
                              "sudo reboot"]))
    doing_p2p = {p["a"] for p in p2p} | {p["b"] for p in p2p}
    for g in _gpus(facts):
        bar1, mem = g.get("bar1_bytes"), g.get("memory_bytes")
        if g.get("index") not in doing_p2p or not isinstance(bar1, int) or not isinstance(mem, int) or bar1 >= mem:
            continue
        yield Finding(
            code="topology.small_bar1", severity="warning", components=["topology", "gpu"],
            title="%s has a %d MiB BAR1 for %d MiB of memory, and NCCL uses PCIe P2P with it" % (
                _name(facts, g["index"]), bar1 >> 20, mem >> 20),
            detail="Peers map this GPU's memory through BAR1. An aperture smaller than the memory (the firmware's "
                   "Above 4G Decoding or Resizable BAR off, or no room to place it) makes peer mappings fail "
                   "(\"mapping of buffer object failed\", cudaErrorMapBufferObjectFailed) once it is used up.",
            evidence=_ev(facts, "topology.gpus", "topology.pairs"),
            source=_src("BAR1 must cover the GPU's memory for BAR1-based P2P", P2P_FORK),
            fix=Fix(text="Enable Above 4G Decoding and Resizable BAR in the firmware; check the kernel log for a "
                         "BAR that could not be placed.",
                    commands=["nvidia-smi -q -d MEMORY -i %s | grep -A 3 BAR1" % g["index"],
                              "sudo dmesg | grep -i 'BAR 1'"]))


# -- NVLink and fabric -----------------------------------------------------------------------------------

def nvlinks_down(facts: Facts) -> List[Tuple[Dict[str, Any], List[Dict[str, Any]], List[Dict[str, Any]], int]]:
    """Each GPU with NVLinks down: (its topology entry, the links up, the links down, how many should be up).

    Without NVSwitches, a GPU's links are wired only to the bridges or peers the board has, so a link NVML calls
    inactive may simply not be wired (two V100-SXM2 joined by 2 of their 6 links). A link is judged down only when
    the board shows it should be up: a GPU of the same model has more links up. On an NVSwitch baseboard every
    link of every GPU is wired to a switch, so any inactive link is down."""
    nvswitch = facts.value("driver.nvswitch.present") is True
    with_links = [g for g in _gpus(facts) if isinstance(g.get("nvlink"), list) and g["nvlink"]]

    def _up(g: Dict[str, Any]) -> int:
        return sum(1 for x in g["nvlink"] if isinstance(x, dict) and x.get("state") in ("active", "sleep"))

    most_up: Dict[str, int] = {}
    for g in with_links:
        model = str(facts.value("gpu.%s.name" % g.get("index")))
        most_up[model] = max(most_up.get(model, 0), _up(g))
    out = []
    for g in with_links:
        links = [x for x in g["nvlink"] if isinstance(x, dict)]
        up = [x for x in links if x.get("state") in ("active", "sleep")]
        down = [x for x in links if x.get("state") in ("inactive", "traffic disabled")]
        if not down:
            continue
        expected = len(links) if nvswitch else most_up.get(str(facts.value("gpu.%s.name" % g.get("index"))), 0)
        # without NVSwitches: a board whose bridges were never fitted (every link down on every GPU), or whose wiring
        # uses the same number of links on every GPU of the model, is quiet
        if expected <= len(up):
            continue
        out.append((g, up, down, expected))
    return out


@check("topology-nvlink", requires=("topology.gpus",), reads=_TOPO_READS, layers=("topology",), codes=(
    CodeDoc("topology.nvlink_inactive", "warning", "NVLinks of a GPU are down: on an NVSwitch baseboard any "
            "inactive link; without NVSwitches, fewer links up than another GPU of the same model has (a board that "
            "wires only some links, alike on every GPU, is quiet).",
            "topology.gpus (nvlink state per link), gpu.N.nvlink_active, "
            "driver.nvswitch.present", "Traffic to its peers runs on fewer links (less bandwidth), or over PCIe when "
            "every link is down; a link that does not train is a cabling, bridge, NVSwitch or hardware fault.",
            NVML_NVLINK),
    CodeDoc("topology.nvlink_trained_down", "warning", "NVLinks of a GPU run at a lower NVLink version than its "
            "other links.", "topology.gpus (nvlink version per link)", "A link that trained at an older version "
            "carries a fraction of the bandwidth.", NVML_NVLINK),
    CodeDoc("topology.fabric_not_ready", "error", "The fabric manager runs, but a GPU's fabric registration has not "
            "completed or failed.", "topology.fabric, driver.fabric_manager.state",
            "Until the fabric is set up, CUDA cannot start on an NVSwitch system (cudaErrorSystemNotReady) and "
            "NVLink peer access fails.", FABRIC_DOC),
))
def topology_nvlink(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    nvswitch = facts.value("driver.nvswitch.present") is True
    with_links = [g for g in _gpus(facts) if isinstance(g.get("nvlink"), list) and g["nvlink"]]
    for g, up, down, expected in nvlinks_down(facts):
        links = g["nvlink"]
        all_down = not up
        names = ", ".join(str(x.get("link")) for x in down[:18])
        tail = " (none up: its peer traffic falls back to PCIe)" if all_down else ""
        if nvswitch:
            title = "%s: %d of %d NVLinks are down%s" % (_name(facts, g["index"]), len(down), len(links), tail)
            why = ("Links %s are inactive while the NVSwitches are present: every link of an NVSwitch baseboard's GPU "
                   "is wired to a switch." % names)
        else:
            title = "%s: %d NVLinks up where another GPU of this model has %d%s" % (
                _name(facts, g["index"]), len(up), expected, tail)
            why = ("Links %s are inactive; this board has %d links up on another GPU of this model, and %d on this "
                   "one." % (names, expected, len(up)))
        yield Finding(
            code="topology.nvlink_inactive", severity="warning", components=["topology", "gpu"],
            title=title,
            detail=why + " The GPU's peer traffic runs on the remaining links%s." % (
                " (none: PCIe)" if all_down else ""),
            evidence=_ev(facts, "gpu.%s.nvlink_active" % g["index"], "topology.gpus", "driver.nvswitch.present"),
            source=_src("nvmlDeviceGetNvLinkState: every link wired to a peer or switch should be active", NVML_NVLINK),
            fix=Fix(text="Check the link state and error counters; reseat the NVLink bridge or have the baseboard "
                         "serviced if a link stays down after a reset.",
                    commands=["nvidia-smi nvlink -s -i %s" % g["index"], "nvidia-smi nvlink -e -i %s" % g["index"],
                              "sudo nvidia-smi -r -i %s" % g["index"]]))
    for g in with_links:
        versions = [x.get("version") for x in g["nvlink"] if x.get("state") in ("active", "sleep")
                    and isinstance(x.get("version"), int) and x.get("version")]
        if len(set(versions)) < 2:
            continue
        top = max(versions)
        low = [x for x in g["nvlink"] if x.get("state") in ("active", "sleep") and isinstance(x.get("version"), int)
               and 0 < x["version"] < top]
        yield Finding(
            code="topology.nvlink_trained_down", severity="warning", components=["topology", "gpu"],
            title="%s: NVLinks %s trained at version %s, below its other links (%s)" % (
                _name(facts, g["index"]), ", ".join(str(x.get("link")) for x in low[:18]),
                "/".join(sorted({str(x["version"]) for x in low})), top),
            detail="Links of one GPU train at the same NVLink version; one that came up lower carries less bandwidth "
                   "and points at a marginal link.",
            evidence=_ev(facts, "topology.gpus"),
            source=_src("nvmlDeviceGetNvLinkVersion per link", NVML_NVLINK),
            fix=Fix(text="Reset the GPU and check again; a link that stays low needs service.",
                    commands=["nvidia-smi nvlink -s -i %s" % g["index"], "sudo nvidia-smi -r -i %s" % g["index"]]))
    fabric = facts.mapping("topology.fabric").get("gpus")
    if isinstance(fabric, dict) and facts.value("driver.fabric_manager.state") == "active":
        bad = {i: f for i, f in fabric.items() if isinstance(f, dict)
               and (f.get("state") != "completed" or (isinstance(f.get("status"), int) and f["status"] != 0))}
        if bad:
            states = sorted({"%s (status %s)" % (f.get("state"), f.get("status")) for f in bad.values()})
            yield Finding(
                code="topology.fabric_not_ready", severity="error", components=["topology", "fabric-manager"],
                title="The fabric manager runs, but the GPU fabric of GPU%s %s is %s" % (
                    "s" if len(bad) > 1 else "", ", ".join(str(i) for i in sorted(bad, key=str)), "; ".join(states)),
                detail="NVML reports the GPUs' registration with the NVLink fabric as not completed (or completed with "
                       "an error). Until it completes, CUDA reports cudaErrorSystemNotReady and NVLink peer access "
                       "fails; the fabric manager's log says why (a version mismatch with the driver, an NVSwitch "
                       "or link failure).",
                evidence=_ev(facts, "topology.fabric", "topology.fabric.state", "driver.fabric_manager.state"),
                source=_src("nvmlDeviceGetGpuFabricInfoV: state must be COMPLETED and status NVML_SUCCESS",
                            FABRIC_DOC),
                fix=Fix(text="Read the fabric manager's log, restart it, and reset the GPUs (or reboot) if it does "
                             "not recover.",
                        commands=["journalctl -u nvidia-fabricmanager -b --no-pager | tail -n 40",
                                  "sudo systemctl restart nvidia-fabricmanager",
                                  "nvidia-smi -q | grep -A 3 -i fabric"]))


# -- consumer boards -------------------------------------------------------------------------------------

#: GeForce generations whose PCIe P2P NVIDIA's own driver does not offer (Ada's and Blackwell's GeForce boards
#: report "GPU not supported"); P2P reported OK between them comes from a modified kernel module.
NO_STOCK_P2P_ARCHS = ("Ada Lovelace", "Blackwell")


@check("topology-consumer", requires=("topology.pairs",), reads=_TOPO_READS, layers=("topology",), codes=(
    CodeDoc("topology.p2p_unsupported_consumer", "info", "GeForce/TITAN GPUs without PCIe peer-to-peer: NCCL "
            "goes through host memory.", "topology.pairs (p2p read/write), topology.gpus (consumer)",
            "Expected on consumer boards (NVIDIA's driver reports \"GPU not supported\" or \"chipset not "
            "supported\"): NCCL uses SHM, which works but is slower than P2P.", NCCL_GPU_TROUBLE),
    CodeDoc("topology.p2p_patched_driver", "info", "PCIe peer-to-peer reported available between GeForce GPUs that "
            "NVIDIA's driver does not offer it on: a P2P-patched kernel module is loaded.",
            "topology.pairs, topology.gpus, gpu.N.architecture, driver.kernel_module.flavor, topology.iommu_mode",
            "The patch (open kernel module forks) needs a BAR1 as large as the GPU's memory and the IOMMU off; "
            "without them peer copies fail or go to the wrong place. NVIDIA does not support it.", P2P_FORK),
))
def topology_consumer(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    pairs = _job_pairs(facts)
    gpus = {g.get("index"): g for g in _gpus(facts)}
    consumer = [p for p in pairs if gpus.get(p["a"], {}).get("consumer") and gpus.get(p["b"], {}).get("consumer")
                and not p.get("nvlinks") and not p.get("unknown")]
    no_p2p = [p for p in consumer if p["p2p"].get("read") in ("GNS", "CNS", "TNS", "NS")
              or p["p2p"].get("write") in ("GNS", "CNS", "TNS", "NS")]
    if no_p2p:
        reasons = sorted({"%s/%s" % (p["p2p"].get("read"), p["p2p"].get("write")) for p in no_p2p})
        yield Finding(
            code="topology.p2p_unsupported_consumer", severity="info", components=["topology", "gpu"],
            title="No PCIe peer-to-peer between consumer GPUs %s (NVML read/write: %s): NCCL uses %s" % (
                _pair_list(no_p2p), ", ".join(reasons),
                "/".join(sorted({str(p.get("nccl")) for p in no_p2p if p.get("nccl")})) or "host memory"),
            detail="NVIDIA's driver does not offer PCIe P2P on these boards, so NCCL copies through host memory "
                   "instead. This works; it is slower than P2P, which datacenter GPUs or an NVLink bridge provide.",
            evidence=_ev(facts, "topology.pairs", "topology.gpus"),
            source=_src("nvmlDeviceGetP2PStatus read/write", NVML_TOPO),
            fix=Fix(text="Nothing to fix; expect host-memory bandwidth between these GPUs."))
    patched = [p for p in consumer if p["p2p"].get("read") == "OK" and p["p2p"].get("write") == "OK"
               and facts.value("gpu.%s.architecture" % p["a"]) in NO_STOCK_P2P_ARCHS]
    if patched:
        involved = sorted({p["a"] for p in patched} | {p["b"] for p in patched})
        small = [i for i in involved if isinstance(gpus[i].get("bar1_bytes"), int)
                 and isinstance(gpus[i].get("memory_bytes"), int) and gpus[i]["bar1_bytes"] < gpus[i]["memory_bytes"]]
        mode = facts.text("topology.iommu_mode")
        problems = (["BAR1 smaller than the memory on GPU %s" % ", ".join(str(i) for i in small)] if small else []) + (
            ["the IOMMU in %s mode" % mode] if mode in ("DMA", "DMA-FQ") else [])
        yield Finding(
            code="topology.p2p_patched_driver", severity="warning" if problems else "info",
            components=["topology", "driver"],
            title="PCIe P2P is reported available between %s GeForce GPUs %s: a P2P-patched kernel module%s" % (
                facts.value("gpu.%s.architecture" % patched[0]["a"]), _pair_list(patched),
                ", but " + " and ".join(problems) if problems else ""),
            detail="NVIDIA's driver reports no PCIe P2P on this generation of GeForce boards; an open kernel module "
                   "built from a P2P fork enables it (the module here is the %s one). The fork needs a BAR1 at least "
                   "as large as the GPU's memory and the IOMMU off%s; NVIDIA does not support it." % (
                       facts.value("driver.kernel_module.flavor") or "unknown",
                       ": here " + " and ".join(problems) + ", so peer copies fail" if problems else ""),
            evidence=_ev(facts, "topology.pairs", "topology.gpus", "driver.kernel_module.flavor",
                         "topology.iommu_mode"),
            source=_src("P2P fork of the open kernel modules: needs large BAR support and IOMMU off", P2P_FORK),
            fix=Fix(text="Keep Resizable BAR on and the IOMMU off (or in passthrough) while this module is used; "
                         "install NVIDIA's own driver to go back to supported behaviour.",
                    commands=["cat /proc/driver/nvidia/version", "nvidia-smi topo -p2p r"]))


# -- NUMA ------------------------------------------------------------------------------------------------

@check("topology-numa", requires=("topology.gpus",), reads=_TOPO_READS, layers=("topology",), codes=(
    CodeDoc("topology.numa_split", "warning", "The GPUs given to a job (CUDA_VISIBLE_DEVICES) sit on different "
            "NUMA nodes although one node has enough GPUs for it.", "topology.gpus (numa_node), "
            "env.cuda_visible_devices, topology.nccl", "Traffic between them crosses the CPU interconnect "
            "(SYS): NCCL cannot use P2P across it and falls back to host memory, and the job's CPU threads sit "
            "far from half of its GPUs.", NCCL_RULES),
))
def topology_numa(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    job = _job(facts)
    gpus = {g.get("index"): g for g in _gpus(facts)}
    if not job or len(job) < 2 or facts.value("env.cuda_visible_devices") is None or len(job) == len(gpus):
        return
    nodes = {i: gpus.get(i, {}).get("numa_node") for i in job}
    if any(not isinstance(n, int) or n < 0 for n in nodes.values()):
        return  # not known (or no NUMA): nothing to say
    used = sorted({n for n in nodes.values() if isinstance(n, int)})
    if len(used) < 2:
        return
    by_node: Dict[int, List[int]] = {}
    for i, g in sorted(gpus.items(), key=lambda kv: str(kv[0])):
        if isinstance(g.get("numa_node"), int) and g["numa_node"] >= 0 and isinstance(i, int):
            by_node.setdefault(g["numa_node"], []).append(i)
    fits = [(n, ids) for n, ids in sorted(by_node.items()) if len(ids) >= len(job)]
    if not fits:
        return
    node, ids = fits[0]
    better = ids[:len(job)]
    yield Finding(
        code="topology.numa_split", severity="warning", components=["topology", "cpu"],
        title="CUDA_VISIBLE_DEVICES=%s spreads the job over NUMA nodes %s; GPUs %s share node %d" % (
            facts.value("env.cuda_visible_devices"), ", ".join(str(n) for n in used),
            ",".join(str(i) for i in better), node),
        detail="GPUs on different NUMA nodes talk across the CPU interconnect, where NCCL does not use P2P; GPUs of "
               "one node keep the traffic under one CPU.",
        evidence=_ev(facts, "topology.gpus", "env.cuda_visible_devices", "topology.nccl"),
        source=_src("ncclTopoCheckP2p: no P2P across CPU host bridges by default", NCCL_RULES),
        fix=Fix(text="Give the job GPUs of one NUMA node (NVML's order: set CUDA_DEVICE_ORDER=PCI_BUS_ID too).",
                commands=["export CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=%s" % ",".join(str(i) for i in
                                                                                                  better),
                          "nvidia-smi topo -m"]))
