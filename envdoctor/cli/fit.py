"""``envdoctor fit MODEL``: will this model fit this GPU?"""

from __future__ import annotations

import sys
from typing import Optional

import click

from . import EXIT_USAGE, fail
from .common import Finite, echo_output, format_option, gpu_option, snapshot_option, subject, timeout_option

EPILOG = """\b
Examples:
  envdoctor fit meta-llama/Llama-3.1-8B-Instruct          # from the local HF cache, this GPU
  envdoctor fit ./Qwen3-32B-AWQ --context 32768 --batch 8
  envdoctor fit Qwen/Qwen3-30B-A3B --online --gpu "RTX 4090" --gpus 2 --tp 2
  envdoctor fit ./config.json --gpu H100 --kv-dtype fp8 --format json
  envdoctor fit mistralai/Mistral-7B-v0.3 --mode qlora --gpu "RTX 3090"
\b
MODEL is a model directory, a config.json, or a Hugging Face id found in the
local cache ($HF_HUB_CACHE, $HF_HOME/hub, ~/.cache/huggingface/hub). Nothing
is downloaded and no model code runs; --online reads config.json and the
safetensors headers from the Hub ($HF_ENDPOINT) with range requests, with
$HF_TOKEN for gated models.
\b
The GPU is this machine's (NVML: total and free memory), --snapshot FILE's,
or --gpu NAME from envdoctor's GPU table (its nominal memory).
\b
Exit codes: 0 it fits; 1 it does not (errors found); 2 could not run as
asked (model not found, bad value, no GPU)."""


@click.command("fit", epilog=EPILOG)
@click.argument("model")
@click.option("--context", type=click.IntRange(1, 10 ** 8), metavar="TOKENS",
              help="Tokens per sequence (prompt + output). Default: the model's maximum, vLLM's default "
                   "max_model_len (4096 for training).")
@click.option("--batch", type=click.IntRange(1, 100000), default=1, show_default=True, metavar="N",
              help="Sequences at a time (concurrent requests; the micro-batch per GPU for training).")
@click.option("--dtype", type=click.Choice(["auto", "bfloat16", "float16", "float32"]), default="auto",
              show_default=True, help="The dtype the engine computes in (auto: the checkpoint's).")
@click.option("--kv-dtype", type=click.Choice(["auto", "fp8", "fp8_e4m3", "fp8_e5m2", "bfloat16", "float16"]),
              default="auto", show_default=True, help="KV cache dtype (vLLM --kv-cache-dtype).")
@click.option("--quant", type=click.Choice(["auto", "none", "fp8", "int8", "awq", "gptq", "bnb4", "bnb8", "nvfp4",
                                            "mxfp4"]),
              default="auto", show_default=True, help="Quantization (auto: the checkpoint's quantization_config).")
@click.option("--tp", "--tensor-parallel-size", "tp", type=click.IntRange(1, 64), default=1, show_default=True,
              metavar="N", help="GPUs the model is split over (tensor parallelism).")
@click.option("--engine", type=click.Choice(["vllm", "sglang", "transformers"]), default="vllm", show_default=True,
              help="The inference engine whose memory budget is modelled.")
@click.option("--gpu-memory-utilization", "util", type=Finite(0.05, 1.0), metavar="FRACTION",
              help="vLLM's share of the GPU (default 0.9); SGLang's --mem-fraction-static.")
@click.option("--mode", type=click.Choice(["inference", "lora", "qlora", "full"]), default="inference",
              show_default=True, help="Serve the model, or train it (LoRA, QLoRA, full fine-tuning).")
@click.option("--zero", type=click.IntRange(0, 3), default=0, show_default=True,
              help="DeepSpeed ZeRO stage for training (shards over --gpus).")
@click.option("--optimizer", type=click.Choice(["adamw", "adam", "sgd", "adamw-8bit"]), default="adamw",
              show_default=True, help="Optimizer for training.")
@click.option("--no-checkpointing", "no_ckpt", is_flag=True,
              help="Training without activation checkpointing (assumed on otherwise).")
@click.option("--lora-rank", type=click.IntRange(1, 4096), default=16, show_default=True,
              help="LoRA rank for --mode lora/qlora.")
@click.option("--max-num-seqs", type=click.IntRange(1, 100000), metavar="N",
              help="vLLM's max_num_seqs (default: vLLM's for this GPU).")
@click.option("--max-num-batched-tokens", type=click.IntRange(1, 10 ** 7), metavar="N",
              help="vLLM's max_num_batched_tokens (default: vLLM's for this GPU).")
@gpu_option
@click.option("--gpus", type=click.IntRange(1, 1024), metavar="N",
              help="GPUs of that kind (data-parallel GPUs for --zero; default: this machine's count).")
@click.option("--gpu-index", type=click.IntRange(0, 1023), metavar="I", help="Judge against this GPU of the machine.")
@snapshot_option(note="The GPU is that machine's.")
@click.option("--online", is_flag=True, help="Read config.json and the safetensors headers from the Hub when the "
              "model is not local (range requests; nothing else is downloaded).")
@click.option("-v", "--verbose", is_flag=True, help="Every derivation in full, each rule's source.")
@format_option("text", "json")
@timeout_option
def fit(model: str, context: Optional[int], batch: int, dtype: str, kv_dtype: str, quant: str, tp: int, engine: str,
        util: Optional[float], mode: str, zero: int, optimizer: str, no_ckpt: bool, lora_rank: int,
        max_num_seqs: Optional[int], max_num_batched_tokens: Optional[int], gpu: Optional[str],
        gpus: Optional[int], gpu_index: Optional[int], snapshot_path: Optional[str], online: bool, verbose: bool,
        fmt: str, timeout: float) -> None:
    """Will MODEL fit this GPU? Weights, KV cache and the engine's budget (or training memory), each term with
    how it was derived; the largest context and batch that fit, and what to change when it does not."""
    import os

    from ..fit import core, source
    from ..fit import gpu as gpumod

    gpu_name = gpu
    if gpu_name and snapshot_path:
        raise fail("--gpu and --snapshot both name the GPU; give one", EXIT_USAGE)
    try:
        src = source.resolve(model, os.environ, online=online, timeout=max(timeout, 10.0))
    except source.ModelError as exc:
        raise fail(str(exc), EXIT_USAGE) from None
    try:
        # the GPU named (a product: no machine is looked at), else the machine's or the snapshot's
        subj = subject(snapshot_path, {"gpu": gpu_name}, timeout, enough=("gpu",))
        if subj.kind == "given":
            g = gpumod.from_product(gpu_name or "", gpus or max(tp, 1))
        else:
            found = gpumod.from_facts(subj.facts, subj.whence)
            g = gpumod.pick(found, tp, gpu_index)
            if gpus:
                g.count = gpus
    except gpumod.GpuError as exc:
        raise fail(str(exc), EXIT_USAGE) from None
    if tp > 1 and g.count < tp and not gpu_name:
        raise fail("--tp %d needs %d GPUs; %s has %d of this kind (--gpu NAME --gpus N plans for another machine)"
                   % (tp, tp, subj.whence, g.count), EXIT_USAGE)
    opts = core.Options(context=context, batch=batch, dtype=dtype, kv_dtype=kv_dtype, quant=quant, tp=tp,
                        engine=engine, util=util, mode=mode, zero=zero, optimizer=optimizer, gpus=gpus,
                        max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens,
                        checkpointing=not no_ckpt, lora_rank=lora_rank)
    try:
        result = core.compute(src, g, opts)
    except core.FitError as exc:
        raise fail(str(exc), EXIT_USAGE) from None
    doc = core.document(result)
    if fmt == "json":
        from ..jsontext import dumps

        echo_output(dumps(doc))
    else:
        from ..render.fit import render
        from ..render.layout import terminal_width
        from ..render.style import Style

        echo_output(render(doc, Style(sys.stdout), terminal_width(sys.stdout), verbose))
    sys.exit(0 if result.fits else 1)
