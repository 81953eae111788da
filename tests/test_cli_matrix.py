"""``envdoctor matrix AREA [VALUE]``: lookups per area, sources shown, JSON parseable, unknowns exit 2."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from envdoctor.cli.matrix import ALIASES, matrix


def run(*args):
    return CliRunner().invoke(matrix, list(args), catch_exceptions=False)


def test_cuda_version_shows_drivers_and_source():
    r = run("cuda", "12.4")
    assert r.exit_code == 0, r.output
    # NVIDIA release notes Table 3: CUDA 12.4 GA needs >= 550.54.14; 12.x minor-compat floor 525.60.13
    assert "min_driver_linux: 550.54.14" in r.output
    assert "min_driver_minor_compat: 525.60.13" in r.output
    assert "source: https://docs.nvidia.com/cuda/archive/12.4.0/" in r.output
    assert "(checked 2026-11-25)" in r.output
    # its drivers, GCC and architectures are verified (GCC and architectures proved from NVIDIA's nvcc
    # wheel); its deprecated architectures and distributions are not: said so in one plain sentence
    assert "cc_deprecated, distributions not confirmed from NVIDIA's tables; treat as a hint." in r.output
    # and nothing about how the data was gathered
    for word in ("index file", "search", "corpus", "proofs.json", "UNVERIFIED"):
        assert word not in r.output


def test_cuda_update_uses_its_own_driver():
    doc = json.loads(run("cuda", "11.4.3", "--format", "json").output)
    assert doc["derived"]["min_driver"] == "470.82.01"  # Table 3: 11.4 Update 3 needs 470.82.01
    assert doc["rows"][0]["verified"] is True


def test_torch_json_lists_variants():
    doc = json.loads(run("torch", "2.4", "--format", "json").output)
    assert doc["area"] == "torch" and [v["tag"] for v in doc["rows"][0]["variants"]] == ["cu118", "cu121", "cu124"]
    assert doc["rows"][0]["source"]["url"].startswith("https://github.com/pytorch/pytorch")


def test_gpu_by_name_and_by_partial_name():
    r = run("gpu", "RTX 4090")
    assert r.exit_code == 0 and "cc: 8.9" in r.output and "arch: Ada Lovelace" in r.output
    doc = json.loads(run("gpu", "A100", "--format", "json").output)
    assert len(doc["rows"]) == 4 and {row["cc"] for row in doc["rows"]} == {"8.0"}


def test_cc_answers_architecture_and_cuda_span():
    doc = json.loads(run("cc", "sm_37", "--format", "json").output)
    assert doc["rows"][0]["arch"] == "Kepler"
    assert doc["derived"]["cuda_releases"] == "6.5 .. 11.8"  # the oldest CUDA in the matrix; 12.0 dropped Kepler


@pytest.mark.parametrize("area,value,key", [("tensorflow", "2.15.1", "2.15"), ("jax", "0.4.30", ">=0.4.29,<0.4.31"),
                                            ("ort", "1.18.2", "1.18.1"), ("cupy", "13.3.0", "13"),
                                            ("paddle", "3.0.0", "3.0"), ("tensorrt", "10.0.1.6", "10.0"),
                                            ("mxnet", "1.9.1", "1.9"), ("cudnn", "9.1.0.70", "9.0.0")])
def test_framework_areas_resolve_versions(area, value, key):
    r = run(area, value, "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    if key is not None:
        row = doc["rows"][0]
        assert row.get("version", row.get("jax")) == key


@pytest.mark.parametrize("area", sorted(set(ALIASES.values())))
def test_every_area_lists_its_rows(area):
    r = run(area)
    assert r.exit_code == 0, r.output
    assert r.output.startswith(f"{area}: ") and "rows" in r.output.splitlines()[0]


def test_list_marks_unverified_rows():
    lines = run("jax").output.splitlines()
    assert any(line.startswith("  * >=0.4.7,<0.4.14 ") for line in lines)   # quoted from an old installation.md
    lines = run("tensorflow").output.splitlines()
    assert any(line.startswith("    2.15 ") for line in lines)      # 2.15 is verified


@pytest.mark.parametrize("args,needle", [(("cuda", "12.7"), "never released"), (("torch", "9.9"), "known: 1.0, 1.1"),
                                         (("nosuch",), "known:"), (("gpu", "Voodoo 5"), "known:")])
def test_unknown_area_or_value_exits_2_with_known_values(args, needle):
    r = CliRunner().invoke(matrix, list(args))
    assert r.exit_code == 2
    assert needle in r.output


@pytest.mark.parametrize("area", ["cuda", "cudnn", "gpu", "cc", "torch", "tf", "jax", "ort", "paddle", "cupy", "trt",
                                  "mxnet"])
def test_what_a_user_reads_never_says_how_the_data_was_gathered(area):
    # every row of the area, as text and as JSON: URL, check date and, for an unconfirmed fact, one plain
    # sentence; never the maintainers' notes (tool names, internal ids, local paths)
    for fmt in ("text", "json"):
        r = run(area, "--format", fmt)
        assert r.exit_code == 0, r.output
        low = r.output.lower()
        for word in ("index file", "file id", "search", "corpus", "corpora", "/opt/", "proofs.json"):
            assert word not in low, (area, fmt, word)
        if fmt == "json":
            for row in json.loads(r.output)["rows"]:
                assert set(row["source"]) <= {"url", "checked", "verified", "unverified_fields"}, row["source"]
        assert "checked 20" in r.output or '"checked": "20' in r.output
    r = run(area)
    if "*" in r.output.split("\n", 1)[1]:
        assert "treat as a hint" in r.output
