"""``envdoctor fit``'s computation: a model description and a GPU in, terms and findings out.

Pure: no file, network or GPU is touched here (the model is read by :mod:`.source`, the GPU by the
caller through the probes or the product table).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ..findings import Finding, sort_key
from . import judge, training
from . import quant as quantmod
from .arch import Arch, ArchError
from .gpu import Gpu
from .memory import (
    DTYPE_BYTES,
    KV,
    VLLM_BLOCK,
    GiB,
    Term,
    activation_peak,
    gib,
    non_torch_estimate,
    normalize_dtype,
    vllm_batch_defaults,
    weights_from_config,
    weights_from_headers,
)
from .source import ModelSource

ENGINES = ("vllm", "sglang", "transformers")
MODES = ("inference", "lora", "qlora", "full")
KV_DTYPES = ("auto", "fp8", "fp8_e4m3", "fp8_e5m2", "bfloat16", "float16", "float32")
DTYPES = ("auto", "bfloat16", "float16", "float32")
#: vLLM's default ``gpu_memory_utilization``.
VLLM_UTIL = 0.9
#: SGLang's ``mem_fraction_static`` assumed when none is given (SGLang picks 0.79-0.88 from the GPU's memory and
#: the tensor-parallel size; pass --gpu-memory-utilization to match the one it prints).
SGLANG_FRACTION = 0.85
#: Memory HF transformers' process holds beyond tensors: the CUDA context (an estimate).
CUDA_CONTEXT = 0.5 * GiB


class FitError(Exception):
    """Cannot compute as asked (a bad combination); exit 2 with the message."""


class Options:
    def __init__(self, context: Optional[int] = None, batch: int = 1, dtype: str = "auto", kv_dtype: str = "auto",
                 quant: str = "auto", tp: int = 1, engine: str = "vllm", util: Optional[float] = None,
                 mode: str = "inference", zero: int = 0, optimizer: str = "adamw", gpus: Optional[int] = None,
                 max_num_seqs: Optional[int] = None, max_num_batched_tokens: Optional[int] = None,
                 checkpointing: bool = True, lora_rank: int = 16) -> None:
        self.context = context
        self.batch = batch
        self.dtype = normalize_dtype(dtype)
        self.kv_dtype = normalize_dtype(kv_dtype)
        self.quant = quant
        self.tp = tp
        self.engine = engine
        self.util = util
        self.mode = mode
        self.zero = zero
        self.optimizer = optimizer
        self.gpus = gpus
        self.max_num_seqs = max_num_seqs
        self.max_num_batched_tokens = max_num_batched_tokens
        self.checkpointing = checkpointing
        self.lora_rank = lora_rank

    def to_dict(self) -> Dict[str, Any]:
        return {k: getattr(self, k) for k in ("context", "batch", "dtype", "kv_dtype", "quant", "tp", "engine", "util",
                                              "mode", "zero", "optimizer", "gpus", "max_num_seqs",
                                              "max_num_batched_tokens", "checkpointing", "lora_rank")}


class FitResult:
    def __init__(self) -> None:
        self.model: Dict[str, Any] = {}
        self.gpu: Optional[Gpu] = None
        self.options: Dict[str, Any] = {}
        self.terms: List[Term] = []
        self.weights_bytes = 0
        self.kv_bytes_per_token = 0.0
        self.kv_budget = 0.0
        self.kv_tokens = 0
        self.max_context = 0
        self.context = 0
        self.fits = False
        self.findings: List[Finding] = []
        self.notes: List[str] = []
        self.training: Optional[Dict[str, Any]] = None
        self.derivations: Dict[str, str] = {}

    def to_dict(self) -> Dict[str, Any]:
        return {
            "model": self.model, "gpu": self.gpu.to_dict() if self.gpu else None, "options": self.options,
            "weights_bytes": self.weights_bytes, "kv_bytes_per_token": int(round(self.kv_bytes_per_token)),
            "kv_budget_bytes": int(self.kv_budget), "kv_tokens": self.kv_tokens, "context": self.context,
            "max_context": self.max_context, "fits": self.fits, "training": self.training,
            "derivations": dict(self.derivations),
            "terms": [t.to_dict() for t in self.terms], "findings": [f.to_dict() for f in self.findings],
            "notes": list(self.notes),
        }


def serving_dtype(asked: str, arch: Arch, src: ModelSource, gpu: Gpu) -> str:
    """The dtype an engine computes in: the one asked, else the checkpoint's (float32 checkpoints are served in 16
    bits; a GPU below compute capability 8.0 gets float16, as vLLM's "auto" does)."""
    if asked != "auto":
        return asked
    d = normalize_dtype(str(arch.dtype or ""))
    if d not in DTYPE_BYTES or d.startswith("fp8"):
        from .safetensors import dominant_float_dtype

        dom = dominant_float_dtype(src.tensors or [])
        d = {"BF16": "bfloat16", "F16": "float16", "F32": "float32"}.get(dom or "", "bfloat16")
    cc = gpu.cc_tuple
    if d == "float32":
        d = "bfloat16" if cc is None or cc >= (8, 0) else "float16"
    if d == "bfloat16" and cc is not None and cc < (8, 0):
        d = "float16"
    return d


def compute(src: ModelSource, gpu: Gpu, opts: Options) -> FitResult:
    try:
        arch = Arch(src.config)
    except ArchError as exc:
        raise FitError(str(exc)) from None
    try:
        q, qnotes = quantmod.resolve(src.config, src.quant_file, opts.quant)
    except quantmod.QuantError as exc:
        raise FitError(str(exc)) from None
    if opts.tp < 1 or (arch.heads % opts.tp and opts.tp > 1):
        raise FitError("--tp %d does not divide the %d attention heads (vLLM requires it to)" % (opts.tp, arch.heads))
    if opts.tp > 1 and arch.kv_heads % opts.tp and opts.tp % arch.kv_heads:
        raise FitError("--tp %d and the %d KV heads: one must divide the other (vLLM requires it)" % (
            opts.tp, arch.kv_heads))
    res = FitResult()
    res.gpu = gpu
    res.options = opts.to_dict()
    res.notes = list(src.notes) + qnotes
    dtype = serving_dtype(opts.dtype, arch, src, gpu)
    d = DTYPE_BYTES[dtype]
    tp = opts.tp
    params_total = sum(t.numel for t in src.tensors) if src.tensors is not None else arch.parameters()
    res.model = {"name": src.name, "read_from": src.where, "revision": src.revision,
                 "architecture": arch.architecture, "model_type": arch.model_type,
                 "parameters": params_total, "parameters_from": "safetensors headers" if src.tensors is not None
                 else "config.json", "layers": arch.layers, "hidden_size": arch.hidden, "attention_heads": arch.heads,
                 "kv_heads": arch.kv_heads, "head_dim": arch.head_dim, "vocab_size": arch.vocab,
                 "experts": arch.experts or None, "mla": arch.mla, "max_context": arch.default_context(),
                 "quantization": q.label if q.quantized else None, "dtype": dtype,
                 "safetensors_headers": src.tensors is not None}
    if arch.has_encoder and src.tensors is None:
        res.notes.append("the vision/audio encoder is not counted (its shapes are not in this arithmetic); the "
                         "safetensors headers would include it")
    if arch.tied_assumed:
        res.notes.append("config.json does not say whether the embeddings are tied; assumed %s (%s's default)" % (
            "tied" if arch.tied else "not tied", arch.model_type or "the base class"))

    # ---------------------------------------------------------------- weights
    if opts.mode == "qlora":
        wq = quantmod.from_option("bnb4")
    elif opts.mode in ("lora", "full"):
        wq = quantmod.Quant() if not q.from_checkpoint else q
    else:
        wq = q
    split = " on each of %d GPUs (tensor parallel: vLLM's sharding)" % tp if tp > 1 else ""
    if src.tensors is not None:
        w, parts, wnotes = weights_from_headers(src.tensors, arch, wq, tp, d)
        res.notes += wnotes
        how = (f"{len(src.tensors):,} tensors in the safetensors headers, dtype x shape; floating tensors in "
               f"{dtype}{split}")
    else:
        w, parts = weights_from_config(arch, wq, tp, d)
        how = (f"{arch.parameters():,} parameters from config.json's shapes ({_shape_summary(arch)}) x {d:g} bytes "
               f"({dtype}){split}")
    if wq.quantized:
        how += "; linear layers %s" % wq.describe_formula()
    pad = mxfp4_padding(arch, wq, tp, gpu, opts.engine)
    if pad is not None and parts.get("experts"):
        factor, pad_how = pad
        extra = parts["experts"] * (factor - 1)
        parts["experts"] += extra
        w += extra
        how += "; " + pad_how
    how += " [" + ", ".join("%s %s" % (k, gib(v)) for k, v in sorted(parts.items(), key=lambda kv: -kv[1])
                            if v > 0.005 * GiB) + "]"
    res.weights_bytes = int(w)
    res.terms.append(Term("weights", w, how, group="weights"))
    if opts.engine == "vllm" or opts.mode != "inference":
        res.findings += judge.precision_findings(gpu, dtype, opts.dtype != "auto",
                                                 q if opts.mode == "inference" else wq, "vllm")
    else:
        res.notes.append("precision is judged by vLLM's rules (precision.json); none are recorded for %s" % opts.engine)
    if opts.mode != "inference":
        _training(res, arch, opts, gpu, params_total, d, w)
        res.findings.sort(key=sort_key)
        return res

    # ---------------------------------------------------------------- KV cache per token
    kvd = opts.kv_dtype if opts.kv_dtype != "auto" else dtype
    kv_bytes = DTYPE_BYTES[kvd]
    engine = opts.engine
    total = gpu.total
    tokens_batch, seqs = (opts.max_num_batched_tokens, opts.max_num_seqs)
    dt, ds = vllm_batch_defaults(total, gpu.name)
    tokens_batch = tokens_batch or dt
    seqs = seqs or ds
    kv = KV(arch, tp, kv_bytes, block=VLLM_BLOCK if engine == "vllm" else 1,
            chunk=tokens_batch if engine == "vllm" else 0)
    res.kv_bytes_per_token = kv.per_token_all
    res.terms.append(Term("KV cache per token", kv.per_token_all, kv.derivation(tp) + " (%s)" % kvd, group="kv"))
    limit = arch.default_context()
    context = opts.context or limit or 4096
    res.context = context
    if limit and context > limit:
        res.notes.append("--context %d is beyond the model's %d positions (config.json)" % (context, limit))

    # ---------------------------------------------------------------- the engine's budget
    util = opts.util
    requested: Optional[float] = None
    if engine == "vllm":
        util = util if util is not None else VLLM_UTIL
        requested = util * total
        act, act_how = activation_peak(arch, tp, tokens_batch, seqs, d)
        nt, nt_how = non_torch_estimate(tp)
        budget = requested - w - act - nt
        res.terms += [
            Term("GPU memory", total, "%s" % gpu.where, group="engine"),
            Term("vLLM's share", requested, "gpu_memory_utilization %.2f x total (vLLM takes this much and no more; "
                 "its KV cache gets what the weights and the profiling run leave of it)" % util, group="engine"),
            Term("activation peak", act, "vLLM profiles one forward pass: " + act_how + " (estimate)", estimate=True,
                 group="engine"),
            Term("non-torch memory", nt, nt_how + " (estimate)", estimate=True, group="engine"),
            Term("KV cache budget", budget, "share - weights - activation peak - non-torch memory", group="engine"),
            Term("outside the budget", total - requested, "(1 - %.2f) x total: the CUDA context, CUDA graphs (captured "
                 "after the KV cache is allocated) and other processes live here" % util, group="engine"),
        ]
    elif engine == "sglang":
        util = util if util is not None else SGLANG_FRACTION
        requested = util * total
        budget = requested - w
        res.terms += [
            Term("GPU memory", total, gpu.where, group="engine"),
            Term("SGLang's static share", requested, "mem_fraction_static %.2f x total: weights and the KV pool "
                 "(activations and CUDA graphs use the rest)%s" % (util, "" if opts.util is not None else
                                                                   "; SGLang picks its own default from the GPU "
                                                                   "and TP size, pass --gpu-memory-utilization "
                                                                   "to match"), estimate=opts.util is None,
                 group="engine"),
            Term("KV cache budget", budget, "static share - weights", group="engine"),
        ]
    else:
        avail = gpu.free if gpu.free is not None else total
        act = float(opts.batch) * context * (2 * arch.hidden + 3 * arch.intermediate / tp) * d + \
            opts.batch * arch.vocab * 4.0
        budget = avail - w - act - CUDA_CONTEXT
        res.terms += [
            Term("GPU memory", avail, ("free now: " if gpu.free is not None else "") + gpu.where, group="engine"),
            Term("prefill activations", act, "batch %d x context %d x (2 x hidden + 3 x intermediate) x %g bytes + "
                 "last-token float32 logits (estimate)" % (opts.batch, context, d), estimate=True, group="engine"),
            Term("CUDA context", CUDA_CONTEXT, "about 0.5 GiB (estimate)", estimate=True, group="engine"),
            Term("KV cache budget", budget, "memory - weights - prefill activations - CUDA context (transformers "
                 "grows its cache as it goes; nothing is reserved ahead)", group="engine"),
        ]
    res.kv_budget = budget
    res.kv_tokens = kv.tokens(budget, context)
    res.max_context = kv.max_context(budget, opts.batch, limit)
    res.derivations["kv_tokens"] = (
        "KV cache budget %s / %s per token%s" % (
            gib(budget), _fmt_bytes(kv.per_token_all), ", in whole blocks of 16 tokens (vLLM's block size)"
            if engine == "vllm" else "") + (
            "; sliding-window layers keep only their window, so this counts sequences of %d tokens" % context
            if kv.windows else ""))
    res.derivations["max_context"] = (
        "the longest context %d concurrent sequence%s can each have in the budget, at most the model's %s positions" % (
            opts.batch, "" if opts.batch == 1 else "s", limit or "(unknown)"))

    # ---------------------------------------------------------------- verdicts
    mem_f = judge.memory_in_use(gpu, requested, engine, util or 0.0)
    if mem_f is not None:
        res.findings.append(mem_f)
    need_one = kv.per_request(context)
    if budget <= 0:
        res.findings.append(_weights_finding(res, arch, q, opts, gpu, w, budget, requested, d, engine))
    elif need_one > budget or need_one * opts.batch > budget:
        res.findings.append(_kv_finding(res, arch, opts, gpu, kv, budget, context, limit, q, d, engine, util,
                                        kv_bytes, tokens_batch, seqs))
    res.fits = not any(f.severity == "error" for f in res.findings)
    res.findings.sort(key=sort_key)
    return res


#: vLLM's MXFP4 MoE layers pad each expert's intermediate size (per GPU) and the hidden size to what the kernel
#: it picks needs (``vllm/model_executor/layers/quantization/mxfp4.py``, ``Mxfp4MoEMethod.create_weights``):
#: Marlin, below Hopper, 128 and 256; Triton on Hopper, 64 and none; FlashInfer on Blackwell, 256 and 256.
MXFP4_SOURCE = ("https://github.com/vllm-project/vllm/blob/007d50058a06dec0f82472d63c819244d460c40d/vllm/"
                "model_executor/layers/quantization/mxfp4.py")


def _round_up(n: int, m: int) -> int:
    return (n + m - 1) // m * m


def mxfp4_padding(arch: Arch, q: Any, tp: int, gpu: Gpu, engine: str) -> Optional[tuple]:
    """(factor on the experts' bytes, how) for vLLM's MXFP4 padding, or None."""
    if q.method != "mxfp4" or engine != "vllm" or not arch.experts:
        return None
    cc = gpu.cc_tuple or (9, 0)
    inter = max(1, arch.moe_intermediate // tp)
    if cc < (9, 0):
        ip, hp, kernel = _round_up(inter, 128), _round_up(arch.hidden, 256), "Marlin"
    elif cc < (10, 0):
        ip, hp, kernel = _round_up(inter, 64), arch.hidden, "Triton"
    else:
        ip, hp, kernel = _round_up(inter, 256), _round_up(arch.hidden, 256), "FlashInfer"
    factor = (ip * hp) / float(inter * arch.hidden)
    if factor <= 1.0:
        return None
    return factor, ("vLLM's %s MXFP4 kernel pads each expert to intermediate %d (of %d) x hidden %d (of %d) per GPU: "
                    "x%.3f" % (kernel, ip, inter, hp, arch.hidden, factor))


def _fmt_bytes(n: float) -> str:
    return "%d bytes" % n if n < 1 << 20 else "%.1f MiB" % (n / (1 << 20))


def _shape_summary(arch: Arch) -> str:
    parts = ["%d layers" % arch.layers, "hidden %d" % arch.hidden]
    if arch.mla:
        parts.append("MLA")
    else:
        parts.append("%d heads / %d KV heads x %d" % (arch.heads, arch.kv_heads, arch.head_dim))
    if arch.experts:
        parts.append("%d experts x %d" % (arch.experts, arch.moe_intermediate))
        if arch.shared_intermediate:
            parts.append("shared %d" % arch.shared_intermediate)
    else:
        parts.append("%sMLP %d" % ("gated " if arch.gated else "", arch.intermediate))
    parts.append("vocab %d%s" % (arch.vocab, ", tied" if arch.tied else ""))
    return ", ".join(parts)


def _budget_for(arch: Arch, q: Any, opts: Options, gpu: Gpu, tp: int, util: float, d: float, engine: str,
                tokens_batch: int, seqs: int) -> float:
    w, _ = weights_from_config(arch, q, tp, d)
    if engine == "vllm":
        act, _ = activation_peak(arch, tp, tokens_batch, seqs, d)
        nt, _ = non_torch_estimate(tp)
        return util * gpu.total - w - act - nt
    if engine == "sglang":
        return util * gpu.total - w
    return (gpu.free if gpu.free is not None else gpu.total) - w - CUDA_CONTEXT


def _more_tp(arch: Arch, tp: int) -> List[int]:
    out = []
    t = tp * 2
    while t <= 8:
        if arch.heads % t == 0 and (arch.kv_heads % t == 0 or t % arch.kv_heads == 0):
            out.append(t)
        t *= 2
    return out


def _weights_finding(res: FitResult, arch: Arch, q: Any, opts: Options, gpu: Gpu, w: float, budget: float,
                     requested: Optional[float], d: float, engine: str) -> Finding:
    share = requested if requested is not None else (gpu.free if gpu.free is not None else gpu.total)
    lines: List[str] = []
    cmds: List[str] = []
    tb, ss = vllm_batch_defaults(gpu.total, gpu.name)
    tb = opts.max_num_batched_tokens or tb
    ss = opts.max_num_seqs or ss
    for t in _more_tp(arch, opts.tp):
        wt, _ = weights_from_config(arch, q, t, d)
        u = opts.util if opts.util is not None else (VLLM_UTIL if engine == "vllm" else SGLANG_FRACTION)
        bt = _budget_for(arch, q, opts, gpu, t, u, d, engine, tb, ss)
        lines.append("--tensor-parallel-size %d (%d GPUs): %s of weights per GPU, %s left for the KV cache" % (
            t, t, gib(wt), gib(bt) if bt > 0 else "nothing"))
        if bt > 0 and not cmds:
            cmds.append("vllm serve %s --tensor-parallel-size %d" % (res.model["name"], t) if engine == "vllm" else
                        "# %d GPUs" % t)
    if not q.quantized:
        for name in ("fp8", "bnb4"):
            qq = quantmod.from_option(name)
            wq, _ = weights_from_config(arch, qq, opts.tp, d)
            lines.append("%s: %s of weights per GPU" % (qq.label, gib(wq)))
    title = "The weights need %s per GPU; the %s gives the engine %s%s" % (
        gib(w), gpu.name, gib(share), " (%s left after its overheads)" % gib(budget + w) if budget + w < share else "")
    detail = ("Loading stops with CUDA out of memory: the weights alone are larger than the memory the engine may use "
              "on one GPU.")
    return judge.finding("fit.weights_do_not_fit", "error", title, detail,
                         [judge._ev("fit.weights_bytes", int(w), "derived"),
                          judge._ev("gpu.memory_total_bytes", gpu.total, gpu.where)],
                         "Split the model over more GPUs, or use a quantized checkpoint:\n" + "\n".join(lines), cmds)


def _kv_finding(res: FitResult, arch: Arch, opts: Options, gpu: Gpu, kv: KV, budget: float, context: int,
                limit: Optional[int], q: Any, d: float, engine: str, util: Optional[float], kv_bytes: float,
                tokens_batch: int, seqs: int) -> Finding:
    one = kv.per_request(context)
    name = res.model["name"]
    fixes: List[str] = []
    cmds: List[str] = []
    flag_len = {"vllm": "--max-model-len", "sglang": "--context-length"}.get(engine)
    single = kv.max_context(budget, 1, limit)
    if flag_len and single > 0:
        fixes.append("%s %d: the longest context one sequence can have here" % (flag_len, single))
        cmds.append("%s %s %s %d" % ("vllm serve" if engine == "vllm" else "python -m sglang.launch_server "
                                     "--model-path", name, flag_len, single))
    if kv_bytes > 1:
        kv8 = KV(arch, opts.tp, 1, kv.block, kv.chunk)
        flag = "--kv-cache-dtype fp8" if engine != "sglang" else "--kv-cache-dtype fp8_e5m2"
        fixes.append("{}: {:,} tokens, context up to {:,} for {} sequence{}".format(
            flag, kv8.tokens(budget, context), kv8.max_context(budget, opts.batch, limit), opts.batch,
            "" if opts.batch == 1 else "s"))
    if engine in ("vllm", "sglang") and util is not None and util < 0.95:
        hi = 0.95
        if gpu.free is not None:
            hi = min(hi, int(gpu.free / gpu.total * 100 - 1) / 100.0)
        if hi > util:
            b2 = budget + (hi - util) * gpu.total
            fixes.append("{} {:.2f}: {:,} tokens, context up to {:,}".format(
                "--gpu-memory-utilization" if engine == "vllm" else "--mem-fraction-static", hi, kv.tokens(b2, context),
                kv.max_context(b2, opts.batch, limit)))
    for t in _more_tp(arch, opts.tp)[:2]:
        kvt = KV(arch, t, kv_bytes, kv.block, kv.chunk)
        bt = _budget_for(arch, q, opts, gpu, t, util or 0.9, d, engine, tokens_batch, seqs)
        fixes.append(f"--tensor-parallel-size {t} ({t} GPUs): {kvt.tokens(bt, context):,} tokens, "
                     f"context up to {kvt.max_context(bt, opts.batch, limit):,}")
    if one > budget:
        sev = "error"
        title = (f"The KV cache holds {res.kv_tokens:,} tokens; one sequence of {context:,} tokens needs "
                 f"{gib(one)}, more than the {gib(max(budget, 0))} left")
        detail = ("vLLM refuses to start when one sequence of max_model_len tokens does not fit its KV cache "
                  "('larger than the maximum number of tokens that can be stored in KV cache'); others run out of "
                  "memory mid-request." if engine == "vllm" else "A sequence this long runs out of memory.")
    else:
        sev = "warning"
        fit_n = int(budget // one)
        title = (f"{fit_n:,} sequences of {context:,} tokens fit the KV cache at a time, not the {opts.batch:,} asked")
        detail = "The engine queues the others; throughput is lower than asked."
    ev = [judge._ev("fit.kv_bytes_per_token", int(kv.per_token_all), "derived"),
          judge._ev("fit.kv_budget_bytes", int(budget), "derived")]
    return judge.finding("fit.kv_below_context", sev, title, detail, ev, "Each of these helps:\n" + "\n".join(fixes),
                         cmds)


def _training(res: FitResult, arch: Arch, opts: Options, gpu: Gpu, params: int, d: float, w_inference: float) -> None:
    n = opts.gpus or gpu.count or 1
    if opts.zero and n < 2:
        res.notes.append("--zero %d shards over data-parallel GPUs; with one GPU it saves nothing (give --gpus N)" %
                         opts.zero)
    seq = opts.context or min(arch.default_context() or training.DEFAULT_TRAIN_CONTEXT,
                              training.DEFAULT_TRAIN_CONTEXT)
    res.context = seq
    qb, _ = weights_from_config(arch, quantmod.from_option("bnb4"), 1, d)
    p = training.plan(arch, params, opts.mode, opts.zero, n, opts.optimizer, opts.batch, seq, opts.checkpointing,
                      opts.lora_rank, d, qb)
    res.terms = [t for t in res.terms if t.group != "weights"] + p.terms
    usable = gpu.free if gpu.free is not None else gpu.total
    res.terms.append(Term("GPU memory", usable, ("free now: " if gpu.free is not None else "") + gpu.where,
                          group="training"))
    res.terms.append(Term("training total", p.total, "the terms above, per GPU", group="training"))
    res.weights_bytes = int(p.terms[0].bytes)
    res.fits = p.total <= usable
    res.training = {"mode": opts.mode, "zero": opts.zero, "gpus": n, "optimizer": opts.optimizer,
                    "batch": opts.batch, "sequence": seq, "checkpointing": opts.checkpointing,
                    "total_bytes": int(p.total), "usable_bytes": int(usable)}
    mem_f = judge.memory_in_use(gpu, None, "training", 0.0)
    if mem_f is not None:
        res.findings.append(mem_f)
    if not res.fits:
        alts = training.alternatives(arch, params, n, opts.optimizer, opts.batch, seq, opts.checkpointing,
                                     opts.lora_rank, d, qb, usable, p)
        good = [a for a in alts if a[2]]
        lines = ["%s: %s per GPU%s" % (how, gib(b), "" if ok else " (does not fit either)") for how, b, ok in alts]
        title = "%s needs %s per GPU; the %s has %s%s" % (
            p.label[0].upper() + p.label[1:], gib(p.total), gpu.name, gib(usable),
            " free" if gpu.free is not None else "")
        detail = "The first training step runs out of memory."
        fix = ("%s fits (%s per GPU).\n" % (good[0][0], gib(good[0][1])) if good else
               "None of these fits one GPU; more GPUs with ZeRO-3, or a larger GPU:\n") + "\n".join(lines)
        res.findings.append(judge.finding(
            "fit.training_does_not_fit", "error", title, detail,
            [judge._ev("fit.training_bytes", int(p.total), "derived"),
             judge._ev("gpu.memory_bytes", int(usable), gpu.where)], fix))
        res.fits = False
    if any(f.severity == "error" for f in res.findings):
        res.fits = False


def document(result: Any) -> Dict[str, Any]:
    """``envdoctor fit --format json`` (``envdoctor/schemas/fit.schema.json``): the versioned envelope around
    ``result``'s numbers, derivations and findings."""
    from .. import __version__

    return dict({"schema_version": 1, "envdoctor_version": __version__}, **result.to_dict())
