"""``envdoctor fit`` held to what models really took on a real GPU.

tests/data/fit/measured/h200-transformers.jsonl was written by scripts/measure_fit.py on a lent NVIDIA H200
(torch 2.11.0+cu130, transformers 5.17.0; its first line says so): each model built from its config.json in
tests/data/fit/configs/ with random weights straight on the GPU, then ``generate`` after a prompt of CONTEXT
tokens (bfloat16), or two steps of full fine-tuning (float32 weights under bfloat16 autocast, AdamW: what
Hugging Face's Trainer does with ``bf16=True``) or of LoRA rank 16 on every linear layer. ``peak`` is PyTorch's
``max_memory_allocated``; ``reserved`` what its caching allocator held.

envdoctor's estimate without its CUDA-context term is compared with the peak: the terms it derives (weights, KV
cache, activations, gradients, optimizer states) are what the allocator hands out.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, Dict, List

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEASURED = os.path.join(ROOT, "tests", "data", "fit", "measured", "h200-transformers.jsonl")
CONFIGS = os.path.join(ROOT, "tests", "data", "fit", "configs")

#: Cases whose estimate is known to fall outside 10% of the measurement, with the band it is held to and why.
KNOWN_SHORT = {
    ("Qwen--Qwen3-0.6B", "full", 2048, False): (
        0.80, 0.90, "without checkpointing every layer keeps its activations: the 34 x s x b x h bytes per layer "
        "(Korthikanti et al., 16-bit Megatron layers) fall short of Hugging Face's layers under autocast, whose "
        "residual stream and norms stay float32 and whose attention (2h wide here) and gated MLP are wider"),
}


def _rows() -> List[Dict[str, Any]]:
    with open(MEASURED, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


ROWS = [r for r in _rows() if "config" in r]


def test_the_measurements_were_made_on_a_real_gpu() -> None:
    head = _rows()[0]["machine"]
    assert head["gpu"] == "NVIDIA H200" and head["torch"].startswith("2.11.0")
    assert len(ROWS) == 11 and not [r for r in ROWS if "error" in r]


def _estimate(row: Dict[str, Any]) -> Dict[str, Any]:
    argv = [sys.executable, "-m", "envdoctor", "fit", os.path.join(CONFIGS, row["config"] + ".json"), "--gpu", "H200",
            "--context", str(row["context"]), "--format", "json"]
    if row["kind"] == "generate":
        argv += ["--engine", "transformers"]
    else:
        argv += ["--mode", row["kind"]] + ([] if row["checkpointing"] else ["--no-checkpointing"])
    res = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: "%s-%s-%d%s" % (r["config"], r["kind"], r["context"],
                                                                     "" if r["checkpointing"] else "-nockpt"))
def test_the_estimate_is_within_ten_percent_of_the_real_peak(row: Dict[str, Any]) -> None:
    doc = _estimate(row)
    terms = {t["name"]: t["bytes"] for t in doc["terms"]}
    assert doc["model"]["parameters"] == row["parameters"] or row["kind"] == "lora"  # the same model was built
    if row["kind"] == "generate":
        assert doc["weights_bytes"] == pytest.approx(row["weights"], rel=0.01)
        estimate = (doc["weights_bytes"] + doc["kv_bytes_per_token"] * row["context"]
                    + sum(v for k, v in terms.items() if "activations" in k))
    else:
        estimate = doc["training"]["total_bytes"] - terms["CUDA context and allocator"]
    ratio = estimate / row["peak"]
    low, high, _why = KNOWN_SHORT.get((row["config"], row["kind"], row["context"], row["checkpointing"]),
                                      (0.9, 1.1, ""))
    assert low <= ratio <= high, "estimate %.2f GiB, measured peak %.2f GiB (%.2f)" % (
        estimate / 2 ** 30, row["peak"] / 2 ** 30, ratio)
