"""``envdoctor fit``'s arithmetic on real config.json files (tests/data/fit/configs, sources in
configs.sources.json): parameter counts against the sizes the vendors publish, KV bytes per token for every
attention kind, quantized formats, the engines' budgets, the training memory, and the verdicts."""

from __future__ import annotations

import glob
import json
import os

import pytest

from envdoctor.fit import quant
from envdoctor.fit.arch import Arch
from envdoctor.fit.core import FitError, Options, compute
from envdoctor.fit.gpu import Gpu, from_product
from envdoctor.fit.memory import GiB
from envdoctor.fit.source import ModelSource
from tests import fitdata

CONFIG_FILES = sorted(glob.glob(os.path.join(fitdata.CONFIGS, "*")))


def src(name: str, **extra) -> ModelSource:
    cfg = dict(fitdata.config(name), **extra)
    qf = None
    folder = os.path.join(fitdata.CONFIGS, name)
    if os.path.isdir(folder) and os.path.exists(os.path.join(folder, "hf_quant_config.json")):
        with open(os.path.join(folder, "hf_quant_config.json"), encoding="utf-8") as fh:
            qf = json.load(fh)
    return ModelSource(name, "test data", cfg, quant_file=qf)


def codes(res):
    return {f.code: f.severity for f in res.findings}


def test_there_are_thirty_real_configs_each_with_its_source():
    with open(os.path.join(fitdata.CONFIGS, "..", "configs.sources.json"), encoding="utf-8") as fh:
        sources = json.load(fh)["configs"]
    assert len(CONFIG_FILES) >= 30
    files = {s["file"].rstrip("/") for s in sources}
    assert files == {os.path.basename(p) for p in CONFIG_FILES}
    for s in sources:
        assert s["read_from"].startswith("https://github.com/") and s["hf_url"].startswith("https://huggingface.co/")
    types = {Arch(fitdata.config(os.path.basename(p))).model_type for p in CONFIG_FILES}
    assert {"llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen3_moe", "qwen2_moe", "gemma2", "gemma3_text", "phi3",
            "deepseek_v2", "deepseek_v3", "gpt_oss", "llama4_text"} <= types


@pytest.mark.parametrize("path", CONFIG_FILES, ids=os.path.basename)
def test_every_real_config_is_computed_on_an_h100_and_a_4090(path):
    name = os.path.basename(path)
    for gpu in (from_product("H100 SXM5 80GB"), from_product("RTX 4090")):
        for tp in (1, 2, 8):
            try:
                res = compute(src(name), gpu, Options(context=4096, tp=tp))
            except FitError as exc:
                assert "does not divide" in str(exc) or "one must divide the other" in str(exc)
                continue
            d = res.to_dict()
            assert d["weights_bytes"] > 0 and d["kv_bytes_per_token"] > 0
            assert all(t["derivation"] for t in d["terms"])


# Sizes the vendors state (model cards, or the model's name where it is the parameter count).
PUBLISHED = {
    "meta-llama--Meta-Llama-3.1-8B": 8.03e9, "meta-llama--Meta-Llama-3.1-70B": 70.6e9,
    "meta-llama--Meta-Llama-3.1-405B": 405e9, "meta-llama--Llama-3.2-1B-Instruct": 1.24e9,
    "meta-llama--Llama-3.2-3B": 3.21e9, "Qwen--Qwen3-30B-A3B": 30.5e9, "Qwen--Qwen3-235B-A22B": 235e9,
    "Qwen--Qwen3-8B": 8.2e9, "Qwen--Qwen2.5-7B": 7.61e9, "Qwen--Qwen2.5-72B": 72.7e9,
    "deepseek-ai--DeepSeek-V3": 671e9, "deepseek-ai--DeepSeek-V2-Lite": 15.7e9, "mistralai--Mixtral-8x7B-v0.1": 46.7e9,
    "mistralai--Mixtral-8x22B-v0.1": 141e9, "google--gemma-2-9b-it": 9.24e9, "google--gemma-2-27b-it": 27.2e9,
    "microsoft--Phi-3.5-mini-instruct": 3.8e9, "openai--gpt-oss-120b": 117e9, "openai--gpt-oss-20b": 21e9,
    "Qwen--Qwen1.5-MoE-A2.7B-Chat": 14.3e9,
}


@pytest.mark.parametrize("name, size", sorted(PUBLISHED.items()))
def test_parameter_count_matches_the_published_size(name, size):
    assert Arch(fitdata.config(name)).parameters() == pytest.approx(size, rel=0.015)


def kv(name, tp=1, **kw):
    return compute(src(name), from_product("H100 SXM5 80GB"), Options(context=8192, tp=tp, **kw)).kv_bytes_per_token


def test_kv_per_token_gqa_and_tensor_parallel():
    assert kv("meta-llama--Meta-Llama-3.1-8B") == 2 * 32 * 8 * 128 * 2  # 128 KiB
    assert kv("meta-llama--Meta-Llama-3.1-70B", tp=4) == 2 * 80 * 2 * 128 * 2  # 2 of the 8 KV heads per GPU
    # 8 GPUs, 4 KV heads: every GPU keeps one KV head (replicated), not half of one
    assert kv("Qwen--Qwen2.5-7B", tp=4) == 2 * 28 * 1 * 128 * 2
    assert kv("meta-llama--Meta-Llama-3.1-8B", kv_dtype="fp8") == 2 * 32 * 8 * 128


def test_kv_per_token_mla_is_one_latent_shared_by_every_gpu():
    one = kv("deepseek-ai--DeepSeek-V3")
    assert one == 61 * (512 + 64) * 2
    assert kv("deepseek-ai--DeepSeek-V3", tp=8) == one


def test_sliding_window_layers_keep_only_their_window():
    res = compute(src("google--gemma-2-9b-it"), from_product("RTX 4090"), Options(context=8192))
    per_layer = 2 * 8 * 256 * 2
    assert res.kv_bytes_per_token == 42 * per_layer
    arch = Arch(fitdata.config("google--gemma-2-9b-it"))
    kinds = [k.kind for k in arch.layer_kinds()]
    assert kinds[:4] == ["sliding", "full", "sliding", "full"]  # Gemma 2: even layers local (4096 tokens)
    g3 = [k.kind for k in Arch(fitdata.config("google--gemma-3-1b-it")).layer_kinds()]
    assert g3[:6] == ["sliding"] * 5 + ["full"]  # Gemma 3: five local layers, then a global one
    # a long context costs the full layers per token, the sliding ones their window only
    from envdoctor.fit.memory import KV

    k = KV(arch, 1, 2, block=1)
    assert k.per_request(32768) == 21 * per_layer * 32768 + 21 * per_layer * 4096
    assert "sliding window (4096 tokens)" in res.terms[1].derivation


def test_linear_attention_layers_are_said_not_counted():
    cfg = dict(fitdata.config("Qwen--Qwen3-8B"))
    cfg["layer_types"] = ["linear_attention", "linear_attention", "linear_attention", "full_attention"] * 9
    res = compute(ModelSource("hybrid", "test", cfg), from_product("H100 SXM5 80GB"), Options(context=8192))
    assert res.kv_bytes_per_token == 9 * 2 * 8 * 128 * 2
    assert "linear-attention layers keep a fixed state" in res.terms[1].derivation


# ------------------------------------------------------------------------------------------ quantization


def weights_gib(name, gpu="H100 SXM5 80GB", **kw):
    return compute(src(name), from_product(gpu), Options(context=4096, **kw)).weights_bytes / GiB


def test_fp8_block_checkpoint_counts_one_byte_and_block_scales():
    bf16 = weights_gib("Qwen--Qwen3-32B")
    fp8 = weights_gib("Qwen--Qwen3-32B-FP8")
    # linear layers at one byte plus a float32 per 128x128 block; embeddings and head stay 16-bit
    assert 0.5 * bf16 < fp8 < 0.56 * bf16


def test_awq_and_gptq_blocks():
    # Qwen3-32B with the quantization_config AutoAWQ writes (transformers' AWQ documentation shows the block:
    # quant_method awq, zero_point true, group_size 128, bits 4, version gemm)
    awq = {"quant_method": "awq", "zero_point": True, "group_size": 128, "bits": 4, "version": "gemm"}
    res = compute(src("Qwen--Qwen3-32B", quantization_config=awq), from_product("RTX 4090"),
                  Options(context=4096, tp=4))
    assert res.model["quantization"] == "AWQ 4-bit, group 128"
    # a published vLLM log of this checkpoint on 4 GPUs: "Model loading took 4.5804 GiB" (tests/data/fit/vllm_logs.json)
    assert res.weights_bytes / GiB == pytest.approx(4.5804, rel=0.03)
    # the Qwen team's GPTQ block (QwenLM/Qwen#717: bits 8, group_size 128, desc_act false, sym true)
    gptq = {"bits": 8, "group_size": 128, "damp_percent": 0.01, "desc_act": False, "static_groups": False,
            "sym": True, "true_sequential": True, "quant_method": "gptq"}
    g = compute(src("Qwen--Qwen3-32B", quantization_config=gptq), from_product("H100 SXM5 80GB"), Options(context=4096))
    assert g.model["quantization"] == "GPTQ 8-bit, group 128"
    assert 0.5 < g.weights_bytes / compute(src("Qwen--Qwen3-32B"), from_product("H100 SXM5 80GB"),
                                           Options(context=4096)).weights_bytes < 0.56


def test_modelopt_and_mxfp4_and_nvfp4_checkpoints():
    assert quant.from_config(fitdata.config("nvidia--Llama-3.1-70B-Instruct-FP8"),
                             src("nvidia--Llama-3.1-70B-Instruct-FP8").quant_file).method == "modelopt-fp8"
    assert weights_gib("nvidia--Llama-3.1-70B-Instruct-FP8") == pytest.approx(70.55e9 / GiB, rel=0.05)
    assert src("nvidia--Qwen3-235B-A22B-NVFP4").quant_file is not None
    nv = weights_gib("nvidia--Qwen3-235B-A22B-NVFP4")
    assert nv < 0.33 * weights_gib("Qwen--Qwen3-235B-A22B")
    # gpt-oss keeps attention in 16 bits: only the experts are MXFP4
    oss = compute(src("openai--gpt-oss-120b"), from_product("H100 SXM5 80GB"), Options(context=4096))
    assert oss.model["quantization"] == "MXFP4 (MoE experts)"
    assert 60 < oss.weights_bytes / GiB < 70


def test_quant_option_on_unquantized_and_quantized_checkpoints():
    bnb = weights_gib("meta-llama--Meta-Llama-3.1-8B", quant="bnb4")
    assert 5.0 < bnb < 5.8  # 4-bit linears + absmax, 16-bit embeddings and head
    fp8 = weights_gib("meta-llama--Meta-Llama-3.1-8B", quant="fp8")
    assert 8.0 < fp8 < 8.7
    with pytest.raises(FitError, match="needs a checkpoint quantized that way"):
        compute(src("meta-llama--Meta-Llama-3.1-8B"), from_product("H100 SXM5 80GB"), Options(quant="awq"))
    with pytest.raises(FitError, match="already quantized"):
        compute(src("Qwen--Qwen3-32B-FP8"), from_product("H100 SXM5 80GB"), Options(quant="bnb4"))


# ------------------------------------------------------------------------------------------ verdicts


def test_llama_8b_default_context_on_a_4090_gets_the_max_model_len_fix():
    res = compute(src("meta-llama--Meta-Llama-3.1-8B"), from_product("RTX 4090"), Options())
    assert not res.fits and res.context == 131072
    f = [x for x in res.findings if x.code == "fit.kv_below_context"][0]
    assert f.severity == "error"
    assert "--max-model-len %d" % res.max_context in f.fix.text
    assert f.fix.commands == ["vllm serve meta-llama--Meta-Llama-3.1-8B --max-model-len %d" % res.max_context]
    assert "--kv-cache-dtype fp8" in f.fix.text and "--tensor-parallel-size 2" in f.fix.text
    ok = compute(src("meta-llama--Meta-Llama-3.1-8B"), from_product("RTX 4090"), Options(context=res.max_context))
    assert ok.fits


def test_concurrency_below_the_batch_asked_is_a_warning():
    res = compute(src("meta-llama--Meta-Llama-3.1-8B"), from_product("RTX 4090"), Options(context=16384, batch=8))
    f = [x for x in res.findings if x.code == "fit.kv_below_context"][0]
    assert f.severity == "warning" and "sequences of 16,384 tokens fit" in f.title


def test_weights_that_do_not_fit_say_what_tensor_parallelism_leaves():
    res = compute(src("meta-llama--Meta-Llama-3.1-70B"), from_product("H100 SXM5 80GB"), Options(context=8192))
    f = [x for x in res.findings if x.code == "fit.weights_do_not_fit"][0]
    assert f.severity == "error" and "--tensor-parallel-size 2" in f.fix.text and "FP8" in f.fix.text
    assert compute(src("meta-llama--Meta-Llama-3.1-70B"), Gpu("H100", 80 * GiB, "9.0", "test", count=2),
                   Options(context=8192, tp=2)).fits


def test_precision_against_compute_capability():
    t4 = from_product("Tesla T4")
    res = compute(src("meta-llama--Meta-Llama-3.1-8B"), t4, Options(context=2048, dtype="bfloat16"))
    assert codes(res)["fit.precision_unsupported"] == "error"
    auto = compute(src("meta-llama--Meta-Llama-3.1-8B"), t4, Options(context=2048))
    assert auto.model["dtype"] == "float16" and "fit.precision_unsupported" not in codes(auto)
    a100 = compute(src("Qwen--Qwen3-8B", quantization_config={"quant_method": "fp8", "activation_scheme": "dynamic",
                                                                  "weight_block_size": [128, 128]}),
                   from_product("A100 SXM4 80GB"), Options(context=4096))
    assert codes(a100)["fit.precision_emulated"] == "warning"  # FP8 through Marlin on Ampere
    assert a100.fits
    turing = compute(src("Qwen--Qwen3-8B", quantization_config={"quant_method": "fp8", "activation_scheme": "dynamic"}),
                     t4, Options(context=4096))
    assert codes(turing)["fit.precision_unsupported"] == "error"
    h100 = compute(src("Qwen--Qwen3-32B-FP8"), from_product("H100 SXM5 80GB"), Options(context=4096))
    assert not codes(h100)


def test_memory_other_processes_hold():
    busy = Gpu("NVIDIA GeForce RTX 4090", 24 * GiB, "8.9", "this machine, GPU 0 (NVML)", free=12 * GiB, index=0)
    res = compute(src("Qwen--Qwen3-4B"), busy, Options(context=8192))
    f = [x for x in res.findings if x.code == "fit.memory_in_use"][0]
    assert f.severity == "error" and "--gpu-memory-utilization 0.49" in f.fix.text
    some = Gpu("NVIDIA GeForce RTX 4090", 24 * GiB, "8.9", "this machine", free=20 * GiB, index=0)
    res2 = compute(src("Qwen--Qwen3-4B"), some, Options(context=8192, util=0.8))
    assert codes(res2)["fit.memory_in_use"] == "warning"


def test_sglang_and_transformers_budgets():
    for engine in ("sglang", "transformers"):
        res = compute(src("Qwen--Qwen3-8B"), from_product("L40S"), Options(context=8192, engine=engine))
        names = [t.name for t in res.terms]
        assert "KV cache budget" in names and res.kv_tokens > 0


# ------------------------------------------------------------------------------------------ training


def test_full_fine_tuning_of_8b_on_one_80gb_gpu_points_at_lora_and_qlora():
    res = compute(src("meta-llama--Meta-Llama-3.1-8B"), from_product("H100 SXM5 80GB"), Options(mode="full"))
    assert not res.fits and res.training["total_bytes"] > 16 * 8.0e9
    f = [x for x in res.findings if x.code == "fit.training_does_not_fit"][0]
    assert "--mode lora fits" in f.fix.text


def test_zero3_over_eight_gpus_fits_and_qlora_70b_on_48gb():
    z3 = compute(src("meta-llama--Meta-Llama-3.1-8B"), Gpu("H100", 80 * GiB, "9.0", "test", count=8),
                 Options(mode="full", zero=3, gpus=8))
    assert z3.fits
    names = [t.name for t in z3.terms]
    assert {"weights", "gradients", "optimizer states", "activations"} <= set(names)
    q = compute(src("meta-llama--Meta-Llama-3.1-70B"), from_product("RTX A6000"), Options(mode="qlora", context=2048))
    assert q.fits and 35 * GiB < q.training["total_bytes"] < 46 * GiB
    lora = compute(src("meta-llama--Meta-Llama-3.1-70B"), from_product("RTX A6000"), Options(mode="lora", context=2048))
    assert not lora.fits and "--mode qlora fits" in [f for f in lora.findings if f.code ==
                                                     "fit.training_does_not_fit"][0].fix.text


def test_optimizers_change_the_optimizer_term():
    sizes = {}
    for opt in ("adamw", "sgd", "adamw-8bit"):
        res = compute(src("Qwen--Qwen3-0.6B"), from_product("RTX 4090"), Options(mode="full", optimizer=opt))
        sizes[opt] = [t.bytes for t in res.terms if t.name == "optimizer states"][0]
    assert sizes["adamw"] / sizes["sgd"] == pytest.approx(12 / 8)
    assert sizes["adamw"] / sizes["adamw-8bit"] == pytest.approx(12 / 6)
