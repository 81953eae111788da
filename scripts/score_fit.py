#!/usr/bin/env python3
"""Score ``envdoctor fit`` against published vLLM start-up logs (tests/data/fit/vllm_logs.json).

For each log: the model's config.json (tests/data/fit/configs/), the GPU, dtype, tensor parallelism,
gpu_memory_utilization and batch limits the log shows go into envdoctor's arithmetic; its weights per GPU
are compared with "Model loading took X GiB" and its KV cache tokens with "GPU KV cache size: N tokens" (or
the blocks x 16, or the KV memory vLLM printed). Prints one line per log, then the worst errors.

    python scripts/score_fit.py                       # the table
    python scripts/score_fit.py --json
    python scripts/score_fit.py --max-weights-error 3 --max-kv-error 15   # exit 1 when a log misses (CI)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, List, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from envdoctor.fit import core  # noqa: E402
from envdoctor.fit.arch import Arch  # noqa: E402
from envdoctor.fit.gpu import Gpu, from_product  # noqa: E402
from envdoctor.fit.memory import KV, VLLM_BLOCK, GiB  # noqa: E402
from envdoctor.fit.source import ModelSource  # noqa: E402

DATA = os.path.join(ROOT, "tests", "data", "fit")


def load_config(name: str) -> Dict[str, Any]:
    path = os.path.join(DATA, "configs", name)
    if os.path.isdir(path):
        path = os.path.join(path, "config.json")
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def gpu_of(entry: Dict[str, Any]) -> Gpu:
    total = entry.get("gpu_total_gib")
    if total:
        return Gpu(entry["gpu"], int(total * GiB), entry.get("cc"), "the log")
    if entry.get("kv_report") in (None, "per_token"):
        # Only the weights (or the bytes per token) are compared: no GPU total is needed.
        return Gpu(entry["gpu"], 80 * GiB, entry.get("cc"), "not used")
    g = from_product(entry["gpu"])
    if entry.get("cc"):
        g.cc = entry["cc"]
    return g


def score(entry: Dict[str, Any]) -> Dict[str, Any]:
    config = dict(load_config(entry["config"]))
    if entry.get("quantization_config"):
        config["quantization_config"] = entry["quantization_config"]
    src = ModelSource(entry["id"], "tests/data/fit/configs/" + entry["config"], config)
    gpu = gpu_of(entry)
    opts = core.Options(context=entry.get("max_model_len"), tp=entry.get("tp", 1), util=entry.get(
        "gpu_memory_utilization"), dtype=entry.get("dtype", "auto"), kv_dtype=entry.get("kv_cache_dtype", "auto"),
        max_num_seqs=entry.get("max_num_seqs"), max_num_batched_tokens=entry.get("max_num_batched_tokens"))
    res = core.compute(src, gpu, opts)
    obs = entry["observed"]
    out: Dict[str, Any] = {"id": entry["id"], "source": entry["source"]}
    if "weights_gib" in obs:
        mine = res.weights_bytes / GiB
        out["weights"] = {"log_gib": obs["weights_gib"], "envdoctor_gib": round(mine, 4),
                          "error_pct": round((mine / obs["weights_gib"] - 1) * 100, 2)}
    report = entry.get("kv_report")
    if report and "kv_tokens" in obs or report == "memory":
        arch = Arch(config)
        kvd = 1 if str(opts.kv_dtype).startswith("fp8") else 2
        kv = KV(arch, opts.tp, kvd, VLLM_BLOCK, opts.max_num_batched_tokens or 0)
        per_block = kv.per_token_all * VLLM_BLOCK
        if report == "per_token":
            # Only the bytes per token: the log's KV memory divided by envdoctor's bytes per token.
            mine_tokens = int(obs["kv_gib"] * GiB // per_block) * VLLM_BLOCK
            log_tokens = obs["kv_tokens"]
            what = "tokens in the log's %.2f GiB at envdoctor's bytes per token" % obs["kv_gib"]
        elif report == "memory":
            mine_tokens = int(max(res.kv_budget, 0) // per_block) * VLLM_BLOCK
            log_tokens = int(obs["kv_gib"] * GiB // per_block) * VLLM_BLOCK
            what = "tokens in the KV memory (the log prints memory, not tokens)"
        else:
            # vLLM before 0.11 reports num_blocks // groups x block size: every layer's bytes per token.
            mine_tokens = int(max(res.kv_budget, 0) // per_block) * VLLM_BLOCK
            log_tokens = obs["kv_tokens"]
            what = "GPU KV cache size"
        out["kv_tokens"] = {"log": log_tokens, "envdoctor": mine_tokens, "compared": what,
                            "error_pct": round((mine_tokens / log_tokens - 1) * 100, 2) if log_tokens else None,
                            "envdoctor_budget_gib": round(res.kv_budget / GiB, 3), "log_kv_gib": obs.get("kv_gib")}
    return out


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--max-weights-error", type=float, default=None, metavar="PCT")
    ap.add_argument("--max-kv-error", type=float, default=None, metavar="PCT")
    args = ap.parse_args(argv)
    with open(os.path.join(DATA, "vllm_logs.json"), encoding="utf-8") as fh:
        logs = json.load(fh)["logs"]
    results = [score(e) for e in logs]
    misses = []
    for r in results:
        w, k = r.get("weights"), r.get("kv_tokens")
        if args.max_weights_error is not None and w and abs(w["error_pct"]) > args.max_weights_error:
            misses.append("%s: weights %+.2f%%" % (r["id"], w["error_pct"]))
        kerr = k["error_pct"] if k else None
        if args.max_kv_error is not None and kerr is not None and abs(kerr) > args.max_kv_error:
            misses.append("%s: KV tokens %+.2f%%" % (r["id"], k["error_pct"]))
    if args.json:
        print(json.dumps({"results": results, "misses": misses}, indent=2))
    else:
        print("%-44s %20s %8s %26s %8s" % ("log", "weights GiB log/ours", "err", "KV tokens log/ours", "err"))
        for r in results:
            w, k = r.get("weights"), r.get("kv_tokens")
            ws = ("%9.3f/%-9.3f" % (w["log_gib"], w["envdoctor_gib"]), "%+.2f%%" % w["error_pct"]) if w else ("-", "")
            ks = ("%12s/%-12s" % ("{:,}".format(k["log"]), "{:,}".format(k["envdoctor"])), "%+.2f%%" % k["error_pct"]) \
                if k else ("-", "")
            print("%-44s %20s %8s %26s %8s" % (r["id"][:44], ws[0], ws[1], ks[0], ks[1]))
        werr = [abs(r["weights"]["error_pct"]) for r in results if r.get("weights")]
        kerr = [abs(r["kv_tokens"]["error_pct"]) for r in results if r.get("kv_tokens")]
        print("\n%d logs: weights compared on %d (worst %.2f%%, mean %.2f%%), KV tokens on %d (worst %.2f%%, mean "
              "%.2f%%)" % (len(results), len(werr), max(werr), sum(werr) / len(werr), len(kerr), max(kerr),
                           sum(kerr) / len(kerr)))
        for m in misses:
            print("MISS " + m)
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
