"""Do the machine's own programs answer?  A hung daemon or a broken ``nvcc`` on PATH is itself a finding.

Probes record these as "timed out" or "unknown, because ..." facts, which a person reads in the
report; a fleet's pre-flight check reads findings and exit codes, so these get findings too (found
comparing with the peers: a hung ``docker`` and a garbage-printing ``nvcc`` left a run at
"0 errors, 0 warnings").
"""

from __future__ import annotations

from typing import Iterable, Optional, Tuple

from ..facts import Facts
from ..findings import Finding, Fix
from . import CheckContext, CodeDoc, check

#: fact key prefix -> the component a hung program belongs to (NVML's hangs are driver.nvml_hung's)
_COMPONENT = (("container.docker", "docker"), ("container.", "container-toolkit"), ("cuda.", "cuda"),
              ("libraries.", "os"), ("os.", "os"), ("kernel.", "kernel"), ("compiler.", "compiler"),
              ("python.", "python"), ("framework.", "python"), ("apps.", "python"), ("conda.", "conda"))
#: how to look for what hangs, per component
_INVESTIGATE = {
    "docker": ["sudo systemctl status docker containerd", "sudo journalctl -u docker --since -1h"],
    "container-toolkit": ["sudo systemctl status docker containerd"],
}
_STUCK = "ps -eo pid,stat,wchan:32,args | awk '$2 ~ /^D/'"


def _component(key: str) -> Optional[str]:
    if key.startswith(("gpu.", "driver.")):
        return None  # NVML and nvidia-smi hangs: driver.nvml_hung says it with the driver's context
    return next((comp for prefix, comp in _COMPONENT if key.startswith(prefix)), "os")


#: The report layer a hung program is shown under (by its component, :data:`_COMPONENT`), the fact-key prefixes
#: it looks through for one, and the facts that are (as ``reads=``): one check per layer, so that
#: ``diagnose --only``/``--skip`` examines no other layer's probes for it. Every family of facts a probe returns
#: is in one of them, but the driver's and the GPUs' (NVML's hangs: driver.nvml_hung); tests/test_scope.py
#: holds the list to the probes' declarations.
_HUNG_LAYERS = (
    ("os", ("os.", "kernel.", "libraries.", "cpu.", "memory.", "env.", "linkage.", "programs.", "libtorch.",
            "lua."),
     ("os.*", "kernel.release", "kernel.headers", "libraries.*", "cpu.*", "memory.*", "env.*", "linkage.*",
      "linkage.*.elf", "linkage.*.abi", "linkage.*.dlopen", "linkage.nvidia_wheels", "linkage.*.closure",
      "linkage.*.extensions", "linkage.*.extension_symbols", "programs.gpu_code", "libtorch.installs",
      "libtorch.programs", "lua.trees")),
    ("cuda", ("cuda.",), ("cuda.*",)),
    ("compilers", ("compiler.",), ("compiler.*",)),
    ("python", ("python.", "framework.", "conda.", "apps."),
     ("python.*", "python.nvidia_wheel_conflicts", "python.requirements", "python.static_cuda", "python.gpu_packages",
      "python.nvml_bindings", "python.jit_toolkits", "framework.*",
      "framework.jax.ptxas", "framework.*.gpu_code", "apps.*")),
    ("containers", ("container.",), ("container.*",)),
)
HUNG_PREFIXES = tuple(p for _layer, prefixes, _reads in _HUNG_LAYERS for p in prefixes)
_HUNG_DOCS = (
    CodeDoc("system.command_hung", "warning", "A program envdoctor asked did not answer within the time limit.",
            "every fact whose status is timed_out (except NVML's, see driver.nvml_hung)",
            "A daemon or tool that hangs for envdoctor hangs for the job that needs it (a docker daemon that "
            "never answers, nvcc on a dead network mount); it is also why those facts are missing."),
)


def _hung(facts: Facts, prefixes: Tuple[str, ...]) -> Iterable[Finding]:
    for fact in facts.with_prefix(prefixes):  # (a probe that timed out as a whole has no facts: probe_timed_out)
        if fact.status != "timed_out":
            continue
        comp = _component(fact.key)
        if comp is None:
            continue
        yield Finding(
            code="system.command_hung", severity="warning", components=[comp],
            title="%s did not answer: %s" % (fact.label or fact.key, fact.reason or "timed out"),
            detail="envdoctor gave up waiting, so this part of the report is missing; whatever else asks "
                   "the same program (a training job, a container start) will wait too. A process stuck in "
                   "the kernel (state D) usually points at a hung driver, device or network mount.",
            evidence=[fact.to_dict()],
            source={"rule": "a healthy machine answers these questions in well under a second",
                    "url": "https://man7.org/linux/man-pages/man1/ps.1.html"},
            fix=Fix(text="Find what hangs (processes in state D, the service's log), fix or restart it; on a "
                         "merely slow machine, re-run with a longer --timeout.",
                    commands=_INVESTIGATE.get(comp, []) + [_STUCK]))


def hung_programs(ctx: CheckContext) -> Iterable[Finding]:
    """Every hung program at once (the checks below ask one layer each)."""
    return _hung(ctx.facts, HUNG_PREFIXES)


# One check per layer: a program that hangs is told under the layer it belongs to, and a crash in one layer's
# question hides no other's.
_OS, _CUDA, _COMPILERS, _PYTHON, _CONTAINERS = _HUNG_LAYERS


@check("hung-programs.os", requires=(), reads=_OS[2], layers=("os",), codes=_HUNG_DOCS)
def hung_os(ctx: CheckContext) -> Iterable[Finding]:
    return _hung(ctx.facts, _OS[1])


@check("hung-programs.cuda", requires=(), reads=_CUDA[2], layers=("cuda",), codes=_HUNG_DOCS)
def hung_cuda(ctx: CheckContext) -> Iterable[Finding]:
    return _hung(ctx.facts, _CUDA[1])


@check("hung-programs.compilers", requires=(), reads=_COMPILERS[2], layers=("compilers",), codes=_HUNG_DOCS)
def hung_compilers(ctx: CheckContext) -> Iterable[Finding]:
    return _hung(ctx.facts, _COMPILERS[1])


@check("hung-programs.python", requires=(), reads=_PYTHON[2], layers=("python",), codes=_HUNG_DOCS)
def hung_python(ctx: CheckContext) -> Iterable[Finding]:
    return _hung(ctx.facts, _PYTHON[1])


@check("hung-programs.containers", requires=(), reads=_CONTAINERS[2], layers=("containers",), codes=_HUNG_DOCS)
def hung_containers(ctx: CheckContext) -> Iterable[Finding]:
    return _hung(ctx.facts, _CONTAINERS[1])


@check("nvcc-runs", requires=("cuda.nvcc",), reads=(), layers=("cuda",), codes=(
    CodeDoc("cuda.nvcc_broken", "warning", "The nvcc first on PATH does not run or says nothing envdoctor "
            "recognises.", "cuda.nvcc",
            "Builds of CUDA extensions (flash-attn, apex, custom ops) and any script that asks `nvcc --version` "
            "fail or get a wrong answer; often a half-removed toolkit or a wrapper left on PATH."),
))
def nvcc_runs(ctx: CheckContext) -> Iterable[Finding]:
    fact = ctx.facts.get("cuda.nvcc")
    if fact is None or fact.status != "unknown" or not fact.source.startswith("command:"):
        return
    path = fact.source[len("command:"):].rsplit(" --version", 1)[0]
    yield Finding(
        code="cuda.nvcc_broken", severity="warning", components=["cuda"],
        title="nvcc on PATH (%s) does not work: %s" % (path, fact.reason),
        detail="`nvcc --version` is the first thing build tools ask; a broken nvcc first on PATH hides any "
               "working toolkit behind it.",
        evidence=[fact.to_dict()],
        source={"rule": "nvcc --version prints 'Cuda compilation tools, release X.Y, VX.Y.Z'",
                "url": "https://docs.nvidia.com/cuda/cuda-compiler-driver-nvcc/index.html"},
        fix=Fix(text="See what it is and where it points; remove it from PATH or reinstall the toolkit it "
                     "belongs to.",
                commands=["ls -l %s" % path, "file -L %s" % path, "type -a nvcc"]))
