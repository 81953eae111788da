"""``envdoctor fit`` on the command line: the GPU from a real capture (tests/live: an H100 whose NVML
answers include the free memory), from the product table, or missing; text at 80 columns; the JSON
document against its schema; exit codes; ``explain`` for its codes; the published-log score as a gate."""

from __future__ import annotations

import gzip
import json
import os

import pytest
from click.testing import CliRunner

from envdoctor.cli import cli
from tests import fitdata

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
H100 = os.path.join(ROOT, "tests", "live", "h100-ubuntu2404-container", "snapshot.json.gz")
NOGPU = os.path.join(ROOT, "tests", "machines", "debian12-nogpu", "snapshot.json")


def flat(text: str) -> str:
    """The text with its line wrapping undone (the renderer wraps at 80 columns)."""
    return " ".join(text.split())


def too_wide(text: str) -> list:
    """Lines over 80 columns, except a line whose only overflow is one word no wrap may break (a long path)."""
    return [line for line in text.splitlines()
            if len(line) > 80 and not any(len(word) > 40 for word in line.split())]


def run(*args, env=None):
    return CliRunner().invoke(cli, ["fit"] + [str(a) for a in args], env=dict({"NO_COLOR": "1"}, **(env or {})))


@pytest.fixture
def llama8b(tmp_path):
    folder = tmp_path / "Llama-3.1-8B"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(fitdata.config("meta-llama--Meta-Llama-3.1-8B")))
    return str(folder)


@pytest.fixture
def tiny(tmp_path):
    cfg = fitdata.tiny_llama()
    return fitdata.write_model(str(tmp_path / "tiny"), cfg, [fitdata.llama_tensors(cfg)])


def test_fits_the_captured_h100_using_its_free_memory(tiny):
    r = run(tiny, "--snapshot", H100, "--context", 8192)
    assert r.exit_code == 0, r.output
    assert r.output.startswith("✓ ") or r.output.startswith("+ ")
    assert "NVIDIA H100 80GB HBM3" in r.output and "free" in r.output
    assert "safetensors headers" in r.output
    assert not too_wide(r.output)


def test_llama_8b_on_a_4090_does_not_fit_its_default_context(llama8b):
    r = run(llama8b, "--gpu", "RTX 4090")
    assert r.exit_code == 1
    # The headline comes first (wrapped: a long model path can push the verdict onto its second line).
    assert "does not fit" in flat(r.output.split("\n  model:")[0])
    assert "--max-model-len" in r.output and "vllm serve" in r.output
    assert not too_wide(r.output)
    assert "weights computed from the architecture" in flat(r.output)  # said, not hidden


def test_json_matches_its_schema(llama8b, tiny):
    jsonschema = pytest.importorskip("jsonschema")
    with open(os.path.join(ROOT, "envdoctor", "schemas", "fit.schema.json"), encoding="utf-8") as fh:
        schema = json.load(fh)
    for args in ([llama8b, "--gpu", "RTX 4090"], [tiny, "--snapshot", H100, "--context", 4096],
                 [llama8b, "--gpu", "H100 SXM5 80GB", "--mode", "qlora"],
                 [llama8b, "--gpu", "A100 SXM4 80GB", "--tp", 2, "--engine", "sglang"]):
        r = run(*args, "--format", "json")
        assert r.exit_code in (0, 1), r.output
        doc = json.loads(r.output)
        jsonschema.validate(doc, schema)
        assert {"weights_bytes", "kv_bytes_per_token", "kv_tokens", "max_context", "fits", "terms", "findings"} <= set(
            doc)
        assert all(t["derivation"] for t in doc["terms"])


def test_verbose_shows_every_derivation_and_rule_source(llama8b):
    r = run(llama8b, "--gpu", "RTX 4090", "-v")
    assert "rule source: https://github.com/vllm-project/vllm/" in flat(r.output)
    assert "kv tokens:" in r.output and "(-v: all of it)" not in r.output


def test_memory_held_by_another_process_is_found(tiny, tmp_path):
    # The real H100 capture with its NVML memory answer changed to 60 GiB in use (a stand-in for a busy GPU:
    # every other answer is the capture's own).
    with gzip.open(H100, "rt", encoding="utf-8") as fh:
        snap = json.load(fh)
    mem = snap["nvml"]["data"]["device.0.memory"]["value"]
    used = 60 * (1 << 30)
    snap["nvml"]["data"]["device.0.memory"]["value"] = dict(mem, used=used, free=mem["total"] - used)
    busy = tmp_path / "busy.json"
    busy.write_text(json.dumps(snap))
    r = run(tiny, "--snapshot", busy, "--context", 4096)
    assert r.exit_code == 1
    assert "in use by other processes" in flat(r.output) and "--gpu-memory-utilization" in r.output


def test_no_gpu_is_exit_2_with_what_to_give(tiny):
    r = run(tiny, "--snapshot", NOGPU)
    assert r.exit_code == 2
    assert "--gpu NAME" in r.output


@pytest.mark.parametrize("args, words", [
    (["./no-such-model-dir"], "not a directory, a file, or a Hugging Face id"),
    (["org/not-cached"], "not in the Hugging Face cache"),
])
def test_unreadable_model_is_exit_2(args, words, tmp_path):
    r = run(*args, "--gpu", "H100 SXM5 80GB", env={"HF_HOME": str(tmp_path)})
    assert r.exit_code == 2 and words in r.output


def test_tp_beyond_the_machines_gpus_is_refused(tiny):
    r = run(tiny, "--snapshot", H100, "--tp", 2)
    assert r.exit_code == 2 and "--tp 2 needs 2 GPUs" in r.output


def test_training_modes(llama8b):
    r = run(llama8b, "--gpu", "H100 SXM5 80GB", "--mode", "full")
    assert r.exit_code == 1 and "fit.training_does_not_fit" not in r.output
    assert "--mode lora fits" in flat(r.output)
    ok = run(llama8b, "--gpu", "H100 SXM5 80GB", "--mode", "lora", "--context", 2048)
    assert ok.exit_code == 0, ok.output
    assert "LoRA adapters" in ok.output


def test_explain_knows_the_fit_codes():
    for code in ("fit.kv_below_context", "fit.weights_do_not_fit", "fit.precision_unsupported",
                 "fit.precision_emulated", "fit.memory_in_use", "fit.training_does_not_fit"):
        r = CliRunner().invoke(cli, ["explain", code])
        assert r.exit_code == 0 and code in r.output


def test_help_lists_fit():
    r = CliRunner().invoke(cli, ["--help"])
    assert "fit" in r.output and "Will this model fit this GPU?" in r.output


def test_published_vllm_logs_are_within_the_targets():
    import importlib.util

    spec = importlib.util.spec_from_file_location("score_fit", os.path.join(ROOT, "scripts", "score_fit.py"))
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    assert mod.main(["--max-weights-error", "3", "--max-kv-error", "15", "--json"]) == 0


def test_a_utilization_that_is_not_a_number_is_refused():
    # NaN compares false with both bounds of a plain FloatRange, so it used to pass and then poison every term.
    from click.testing import CliRunner

    for bad in ("nan", "inf", "-inf"):
        r = CliRunner().invoke(cli, ["fit", "x", "--gpu", "RTX 4090", "--gpu-memory-utilization", bad])
        assert r.exit_code == 2, (bad, r.output)
        assert "gpu-memory-utilization" in r.output
