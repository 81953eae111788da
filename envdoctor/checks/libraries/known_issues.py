"""The NCCL and cuDNN a job loads, and the DALI installed, against the defects their release notes name
(``known_issues.json``).

A row bites when the loaded release is in its range (``first_affected`` up to ``fixed_in``) and the machine
shows its condition: GPUs of several models in the node, an RDMA NIC sharing a PCIe switch with exactly one GPU,
NVLinks partly down, a named GPU model, an old driver beside an RDMA NIC. DALI's rows name a defect of one of
its operators, said whenever an affected release is installed (condition ``installed``) or on a machine with
several GPUs, or a library its own objects load from outside its package below a release (``library_below``,
code ``dali.nvjpeg_too_old``). A workaround variable the row names, set in the environment or NCCL's
configuration files, silences it; a condition the facts rule out gives nothing.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Tuple

from packaging.version import Version

from ... import frameworks, versions
from ...facts import Facts
from ...findings import Finding, Fix
from .. import CheckContext, CodeDoc, check
from . import _evidence

NCCL_NOTES = "https://docs.nvidia.com/deeplearning/nccl/release-notes/index.html"
CUDNN_NOTES = "https://docs.nvidia.com/deeplearning/cudnn/backend/latest/release-notes.html"


def nccl_copies(facts: Facts) -> List[Dict[str, Any]]:
    """Each NCCL a job here may load, one per version: the ``nvidia-nccl-cu*`` wheel a framework has installed
    (what it loads), and the loader's ``libnccl.so.2`` (else every NCCL copy found) for other programs."""
    from .nccl_gpu import _nccl_candidates

    out: Dict[str, Dict[str, Any]] = {}
    for fw in frameworks.FRAMEWORKS:  # (each framework's own fact, not the facts below it)
        key = "framework." + fw.name
        fact = facts.get(key)
        if fact is None or not fact.known or not isinstance(fact.value, dict):
            continue
        value = fact.value
        wheels = value.get("nvidia_wheels")
        for name, w in sorted(wheels.items()) if isinstance(wheels, dict) else ():
            if str(name).startswith("nvidia-nccl") and isinstance(w, dict) and versions.parse(w.get("installed")):
                v = str(w["installed"])
                out.setdefault(v, {"version": v, "path": "the %s wheel %s loads" % (name, key.split(".", 1)[1]),
                                   "key": key})
    for c in _nccl_candidates(facts):
        out.setdefault(c["version"], c)
    return list(out.values())


def _gpu_names(facts: Facts) -> List[str]:
    names = []
    for f in facts.named("gpu.", "name"):
        if f.known and isinstance(f.value, str) and f.value not in names:
            names.append(f.value)
    return names


def condition(facts: Facts, cond: Dict[str, Any]) -> Tuple[Optional[bool], str, List[str]]:
    """(whether the condition holds: True, False, or None when the facts cannot rule it out; what the machine
    shows; the fact keys it rests on)."""
    kind = cond.get("kind")
    if kind == "gpu_models_mixed":
        names = _gpu_names(facts)
        return len(names) > 1, "GPU models in this node: %s" % ", ".join(names), ["gpu.0.name"]
    if kind == "installed":
        return True, "", []
    if kind == "library_below":
        return False, "", []  # judged on the installed package's own links (dali_known_issues)
    if kind == "several_gpus":
        names = [f.value for f in facts.named("gpu.", "name") if f.known]
        count = facts.value("gpu.count")
        n = count if isinstance(count, int) else len(names)
        return n > 1, "%d GPUs in this machine" % n, ["gpu.count"]
    if kind == "gpu_model":
        names = _gpu_names(facts)
        hit = [n for n in names for m in cond.get("models") or [] if m.lower() in n.lower().replace("-", " ").split()]
        return bool(hit), "GPU: %s" % ", ".join(hit or names), ["gpu.0.name"]
    if kind == "nvlink_partly_down":
        from ..topology import nvlinks_down

        down = [(g, up, dn) for g, up, dn, _ in nvlinks_down(facts) if up]
        text = "; ".join("GPU %s has %d NVLinks up and %d down" % (g.get("index"), len(up), len(dn))
                         for g, up, dn in down)
        return bool(down), text, ["topology.gpus"]
    nics_fact = facts.get("topology.nics")
    nics = [n for n in (nics_fact.value if nics_fact is not None and nics_fact.known else None) or []
            if isinstance(n, dict)]
    if kind == "nic_shares_pcie_switch_with_one_gpu":
        if nics_fact is None or not nics_fact.known:
            return False, "", []
        one = [n for n in nics if isinstance(n.get("gpus_under_switch"), list) and len(n["gpus_under_switch"]) == 1]
        if one:
            return True, "; ".join("NIC %s (%s) shares a PCIe switch with GPU %s only" % (
                n.get("name"), n.get("pci_bus_id"), n["gpus_under_switch"][0]) for n in one[:4]), ["topology.nics"]
        if any(n.get("gpus_under_switch") is None for n in nics):
            return None, "the PCIe place of RDMA NIC(s) %s is not known" % ", ".join(
                str(n.get("name")) for n in nics if n.get("gpus_under_switch") is None), ["topology.nics"]
        return False, "", []
    if kind == "driver_below_with_rdma_nic":
        driver = versions.parse(facts.value("driver.version"))
        need = versions.parse(cond.get("version"))
        if driver is None or need is None or driver >= need or not nics:
            return False, "", []
        return True, "NVIDIA driver %s with RDMA NIC(s) %s" % (
            facts.value("driver.version"), ", ".join(str(n.get("name")) for n in nics[:4])), [
            "driver.version", "topology.nics"]
    return False, "", []


def _judge(facts: Facts, product: str, copies: List[Dict[str, Any]], code: str) -> Iterable[Finding]:
    from ...matrix import known_issues

    variables = facts.mapping("env.nccl").get("variables")
    env: Dict[str, Any] = variables if isinstance(variables, dict) else {}
    for row in known_issues.rows(product):
        fw = row.get("framework")
        hit = [c for c in copies if known_issues.affects(row, c["version"])
               and (not fw or any(k in ("linkage." + fw, "framework." + fw) for k in c.get("keys") or [c["key"]]))]
        if not hit:
            continue
        holds, shows, keys = condition(facts, row["condition"])
        if holds is False:
            continue
        workaround = known_issues.workaround_set(row, env) if product == "nccl" else None
        fixed = row.get("fixed_in")
        label = "NCCL" if product == "nccl" else "cuDNN"
        fix_text = ("Upgrade %s to %s or newer (%s)." % (label, fixed, row["fix"]) if fixed
                    else row["fix"][0].upper() + row["fix"][1:] + ".")
        listed = ", ".join("%s %s (%s)" % ("NCCL" if product == "nccl" else "cuDNN", c["version"], c["path"])
                           for c in hit)
        severity = "info" if workaround else row["severity"]
        range_text = ("%s up to %s" % (row["first_affected"], fixed) if row.get("first_affected") and fixed
                      else "before %s" % fixed if fixed else "all releases")
        may = "" if holds else " may"
        title = "%s%s hit%s a known defect: %s" % (listed, may, "" if may else "s", row["symptom"])
        detail = "%s (affected: %s). On this machine: %s.%s" % (
            row["symptom"][0].upper() + row["symptom"][1:], range_text, shows or "the condition holds",
            " The workaround %s is set, so the defect is avoided." % workaround if workaround else "")
        yield Finding(
            code=code, severity=severity, components=[product],
            title=title, detail=detail,
            evidence=_evidence(facts, *sorted({c["key"] for c in hit} | set(keys))),
            source={"rule": "%s: %s" % (row["id"], row["symptom"]), "url": row["source"]["url"],
                    "checked": row["source"]["checked"]},
            fix=Fix(text=fix_text, commands=(["pip install -U 'nvidia-nccl-cu12>=%s'" % fixed]
                                             if product == "nccl" and fixed and Version(fixed) >= Version("2.12")
                                             else [])))


@check("nccl-known-issues", requires=("libraries.nccl",),
       reads=("gpu.*", "gpu.*.*", "libraries.*", "framework.*", "topology.*", "driver.*", "env.*"),
       layers=("libraries",), codes=(
    CodeDoc("nccl.known_broken_release", "warning",
            "The NCCL a job here loads is a release whose notes (its Known Issues, or a later release's Fixed "
            "Issues) name a defect under a condition this machine shows, with no workaround set: GPUs of several "
            "models in one node (before 2.1.15), an RDMA NIC sharing a PCIe switch with one GPU (2.18.1), NVLinks "
            "partly down (before 2.12.7), a driver older than 396.26 beside an RDMA NIC.",
            "libraries.nccl, libraries.loader_choice, framework.<name>.nvidia_wheels, gpu.N.name, topology.nics, "
            "topology.gpus, driver.version, env.nccl",
            "Collectives crash at launch, hang or silently corrupt data; the release notes name the fixed release "
            "and any variable that avoids it (information when that variable is set).",
            "known_issues.json (NCCL's release notes per release); " + NCCL_NOTES),
))
def nccl_known_issues(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    copies = nccl_copies(facts)
    if copies:
        yield from _judge(facts, "nccl", copies, "nccl.known_broken_release")


@check("cudnn-known-issues", requires=("libraries.cudnn",), reads=("framework.*", "gpu.*", "gpu.*.*", "libraries.*",
                                                                   "linkage.*", "env.*"),
       layers=("libraries",), codes=(
    CodeDoc("cudnn.known_bad_release", "warning",
            "The cuDNN a framework loads is a release that cuDNN's or the framework's release notes name as "
            "defective on this machine's GPU (cuDNN 8.0.5 leaks memory on T4), fixed by a later release.",
            "libraries.cudnn, linkage.<framework>, libraries.loader_choice, gpu.N.name",
            "Memory grows run after run until the process is killed, or the named defect (crash, wrong results) "
            "appears on that GPU.",
            "known_issues.json; " + CUDNN_NOTES),
))
def cudnn_known_issues(ctx: CheckContext) -> Iterable[Finding]:
    from .cudnn_gpu import _cudnn_in_use

    facts = ctx.facts
    copies = [dict(c, key=c["keys"][0]) for c in _cudnn_in_use(facts) if c.get("keys")]
    if copies:
        yield from _judge(facts, "cudnn", copies, "cudnn.known_bad_release")


DALI_NOTES = "https://docs.nvidia.com/deeplearning/dali/user-guide/docs/index.html"


def _dali_installed(facts: Facts) -> List[Dict[str, Any]]:
    """Each installed DALI distribution (``python.gpu_packages``): {package, version}."""
    from ...matrix import known_issues

    fact = facts.get("python.gpu_packages")
    if fact is None or not fact.known or not isinstance(fact.value, list):
        return []
    return [e for e in fact.value if isinstance(e, dict)
            and known_issues.product_of_distribution(str(e.get("package") or "")) == "dali"]


def _library_rows(facts: Facts, entry: Dict[str, Any], rows: List[Dict[str, Any]]) -> Iterable[Finding]:
    """The rows whose defect is the library the installed package loads (condition ``library_below``): the
    package's own shared objects load that library, from outside the package, at a release below the row's."""
    from ...matrix import known_issues

    name, version = str(entry.get("package")), str(entry.get("version") or "")
    raw = entry.get("links")
    links: Dict[str, Any] = raw if isinstance(raw, dict) else {}
    for row in rows:
        cond = row["condition"]
        if cond.get("kind") != "library_below" or not known_issues.affects(row, version):
            continue
        need = versions.parse(cond.get("version"))
        for soname, link in sorted(links.items()):
            if not isinstance(link, dict) or not str(soname).startswith(str(cond.get("library")) + ".so"):
                continue
            have = versions.parse(link.get("version"))
            if have is None or need is None or len(have.release) < 3 or have >= need:
                continue  # a version the file name does not give in full is not judged
            lib = str(cond["library"])[3:] if str(cond["library"]).startswith("lib") else str(cond["library"])
            yield Finding(
                code=str(row["code"]), severity=row["severity"], components=["python", "cuda"],
                title="%s %s loads %s %s (%s), older than %s: %s" % (
                    name, version, lib, link["version"], link.get("resolved") or link.get("path"), cond["version"],
                    row["symptom"]),
                detail="%s needs %s, which the loader resolves to %s (via %s): %s %s. %s (fixed by %s)." % (
                    link.get("needed_by"), soname, link.get("resolved") or link.get("path"), link.get("via"), lib,
                    link["version"], row["symptom"][0].upper() + row["symptom"][1:], row.get("fixed_by")
                    or row.get("fixed_in")),
                evidence=_evidence(facts, "python.gpu_packages"),
                source={"rule": "%s: %s" % (row["id"], row["symptom"]), "url": row["source"]["url"],
                        "checked": row["source"]["checked"]},
                fix=Fix(text=row["fix"][0].upper() + row["fix"][1:] + "."))


@check("dali-known-issues", requires=("python.gpu_packages",), reads=("gpu.*", "gpu.*.*"),
       layers=("python",), codes=(
    CodeDoc("dali.known_broken_release", "warning",
            "The installed NVIDIA DALI is a release with defects that DALI fixed in later releases, as its release "
            "notes (Fixed Issues) or its tracker name them: fn.experimental.decoders.video returning wrong frames "
            "for higher-resolution videos (1.19 to 1.25), the GPU video decoder failing with several GPUs (before "
            "1.21), crashes of the numpy readers and memory leaks of the image decoder; information when every "
            "defect is a minor one.",
            "python.gpu_packages, gpu.count",
            "The named operator returns wrong data, crashes or leaks memory when the pipeline uses it.",
            "known_issues.json (DALI's release notes per release); " + DALI_NOTES),
    CodeDoc("dali.nvjpeg_too_old", "warning",
            "The installed DALI's own libraries load an nvJPEG from outside its package (a DALI built from source "
            "against the CUDA toolkit) older than its decoders need: CUDA 10.1 GA's nvJPEG 10.1.105 has no "
            "decoupled API (nvjpegBufferPinnedCreate), so DALI's build chose its legacy decoder.",
            "python.gpu_packages (links: the CUDA libraries DALI's shared objects resolve)",
            "Pipelines with the image decoder fail ('Optional argument \"use_batched_decode\" is not defined for "
            "schema \"ImageDecoder\"').", "known_issues.json; https://github.com/NVIDIA/DALI/issues/1080"),
))
def dali_known_issues(ctx: CheckContext) -> Iterable[Finding]:
    from ...matrix import known_issues

    facts = ctx.facts
    rows = known_issues.rows("dali")
    for entry in _dali_installed(facts):
        name, version = str(entry.get("package")), str(entry.get("version") or "")
        hits: List[Tuple[Dict[str, Any], str, List[str]]] = []
        for row in rows:
            if row.get("code"):
                continue  # a row of its own code: below
            if not known_issues.affects(row, version):
                continue
            holds, shows, keys = condition(facts, row["condition"])
            if holds is False:
                continue
            hits.append((row, shows, keys))
        yield from _library_rows(facts, entry, [r for r in rows if r.get("code")])
        if not hits:
            continue
        # a row whose first affected release the notes do not name may predate this release's operator: a hint
        severity = "warning" if any(r["severity"] == "warning" and (r.get("first_affected") or r["condition"].get(
            "kind") != "installed") for r, _, _ in hits) else "info"
        newest = max((str(r["fixed_in"]) for r, _, _ in hits if r.get("fixed_in")), key=Version,
                     default="a later release")
        serious = [r for r, _, _ in hits if r["severity"] == severity] or [r for r, _, _ in hits]
        if len(hits) == 1:
            title = "%s %s has a defect DALI fixed in %s: %s" % (name, version, newest, hits[0][0]["symptom"])
        else:
            title = "%s %s has %d defects DALI fixed in later releases (the last in %s), among them: %s" % (
                name, version, len(hits), newest, serious[-1]["symptom"])
        lines = []
        for row, shows, _ in hits:
            lo = row.get("first_affected")
            lines.append("%s (%s; fixed in %s%s%s)" % (
                row["symptom"], "affected from %s" % lo if lo else "the notes name no first affected release",
                row["fixed_in"], "; on this machine: " + shows if shows else "",
                "; the fixed release is the one DALI's tracker names, not confirmed in its release notes"
                if not row["source"].get("verified") else ""))
        keys = sorted({k for _, _, ks in hits for k in ks})
        local = versions.parse(version)
        dev = local is not None and (local.is_devrelease or local.local is not None)
        yield Finding(
            code="dali.known_broken_release", severity=severity, components=["python"],
            title=title,
            detail="The installed DALI (%s %s) is a release with defects that later releases fix: %s. Each bites "
                   "only a pipeline that uses the operator named." % (name, version, "; ".join(lines)),
            evidence=_evidence(facts, "python.gpu_packages", *keys),
            source={"rule": "; ".join("%s: %s" % (r["id"], r["symptom"]) for r, _, _ in hits),
                    "url": hits[-1][0]["source"]["url"], "checked": hits[-1][0]["source"]["checked"]},
            fix=Fix(text="Upgrade DALI to %s or newer%s." % (newest, " (this one is built from source: rebuild "
                                                              "from a newer release's source)" if dev else ""),
                    commands=[] if dev else ["pip install --upgrade '%s>=%s'" % (name, newest)]))
