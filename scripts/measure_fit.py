#!/usr/bin/env python3
"""Measure what models really take on a GPU, to hold ``envdoctor fit`` to it (run on a machine with a GPU).

Each model is built from its config.json in tests/data/fit/configs/ with random weights, straight on the GPU
(Hugging Face transformers, PyTorch's caching allocator), so no checkpoint is downloaded; the bytes are the
same as a real checkpoint's of that architecture and dtype. Per case it records the allocator's figures:
the weights (``memory_allocated`` after loading), and the peak (``max_memory_allocated``) and reserved
memory of one of:

- ``generate``: ``model.generate`` of 8 new tokens after a prompt of CONTEXT random tokens, batch 1, bfloat16
  (what ``envdoctor fit MODEL --engine transformers --context CONTEXT`` estimates);
- ``full``: two training steps of full fine-tuning, float32 weights under bfloat16 autocast with AdamW (what
  Hugging Face's Trainer does with ``bf16=True``), activation checkpointing on or off
  (``envdoctor fit MODEL --mode full --context CONTEXT [--no-checkpointing]``);
- ``lora``: two training steps of LoRA rank 16 on every linear layer (PEFT's "all-linear"), bfloat16 base,
  AdamW, checkpointing on (``envdoctor fit MODEL --mode lora --context CONTEXT``).

One JSON object per line goes to --out as each case ends, so a run cut short keeps what it measured. The
comparison with envdoctor's estimates runs anywhere: tests/test_fit_measured.py holds them to the file kept in
tests/data/fit/measured/.

    python3 scripts/measure_fit.py --out fit-measured.jsonl
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS = os.path.join(ROOT, "tests", "data", "fit", "configs")

#: (config, kind, context, checkpointing)
CASES = [
    ("Qwen--Qwen3-0.6B", "generate", 2048, True),
    ("Qwen--Qwen3-0.6B", "generate", 32768, True),
    ("meta-llama--Llama-3.2-1B-Instruct", "generate", 16384, True),
    ("Qwen--Qwen3-8B", "generate", 2048, True),
    ("Qwen--Qwen3-8B", "generate", 32768, True),
    ("meta-llama--Meta-Llama-3.1-8B", "generate", 16384, True),
    ("Qwen--Qwen3-0.6B", "full", 2048, True),
    ("Qwen--Qwen3-0.6B", "full", 2048, False),
    ("meta-llama--Llama-3.2-1B-Instruct", "full", 4096, True),
    ("Qwen--Qwen3-8B", "lora", 4096, True),
    ("meta-llama--Meta-Llama-3.1-8B", "lora", 2048, True),
]


def build(torch, transformers, name, dtype):
    with open(os.path.join(CONFIGS, name + ".json")) as f:
        cfg = json.load(f)
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(cfg, f)
        config = transformers.AutoConfig.from_pretrained(d)
    with torch.device("cuda"):
        try:
            model = transformers.AutoModelForCausalLM.from_config(config, dtype=dtype)
        except TypeError:
            model = transformers.AutoModelForCausalLM.from_config(config, torch_dtype=dtype)
    return model, config


def one(torch, transformers, name, kind, context, checkpointing):
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    dtype = torch.float32 if kind == "full" else torch.bfloat16
    model, config = build(torch, transformers, name, dtype)
    weights = torch.cuda.memory_allocated() - base
    vocab = getattr(config, "vocab_size", 32000)
    ids = torch.randint(0, vocab, (1, context), device="cuda")
    torch.cuda.reset_peak_memory_stats()
    if kind == "generate":
        model.eval()
        with torch.inference_mode():
            model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=8, min_new_tokens=8,
                           do_sample=False, pad_token_id=0)
    else:
        if kind == "lora":
            import peft

            model = peft.get_peft_model(model, peft.LoraConfig(r=16, lora_alpha=32, target_modules="all-linear",
                                                               task_type="CAUSAL_LM"))
        model.train()
        if checkpointing:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            if kind == "lora":
                model.enable_input_require_grads()
        opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)
        for _ in range(2):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        del opt
    torch.cuda.synchronize()
    out = {"peak": torch.cuda.max_memory_allocated() - base, "reserved": torch.cuda.max_memory_reserved(),
           "weights": weights, "parameters": sum(p.numel() for p in model.parameters())}
    del model, ids
    gc.collect()
    torch.cuda.empty_cache()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", help="run the cases of this config only")
    args = ap.parse_args()
    import torch
    import transformers

    if not torch.cuda.is_available():
        raise SystemExit("no GPU torch can use")
    head = {"gpu": torch.cuda.get_device_name(0), "total": torch.cuda.get_device_properties(0).total_memory,
            "torch": torch.__version__, "transformers": transformers.__version__}
    with open(args.out, "a") as out:
        out.write(json.dumps({"machine": head}) + "\n")
        for name, kind, context, ckpt in CASES:
            if args.only and args.only != name:
                continue
            row = {"config": name, "kind": kind, "context": context, "batch": 1, "checkpointing": ckpt}
            started = time.monotonic()
            try:
                row.update(one(torch, transformers, name, kind, context, ckpt))
            except Exception as exc:  # noqa: BLE001 - a case that fails is recorded, the next one runs
                row["error"] = "%s: %s" % (type(exc).__name__, str(exc)[:300])
                gc.collect()
                torch.cuda.empty_cache()
            row["seconds"] = round(time.monotonic() - started, 2)
            out.write(json.dumps(row) + "\n")
            out.flush()
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
