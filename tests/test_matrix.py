"""The compatibility matrix: its loader, its hardware/CUDA tables and their integrity script.

Expected values are the vendors' own tables, cited per case:
- CUDA driver minimums: "CUDA Toolkit and Corresponding Driver Versions" (Table 3 of
  https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html), as reproduced verbatim at
  https://blog.csdn.net/ytomc/article/details/122805982 (10.0 .. 11.6 with every update).
- Minor-version compatibility floors: https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html
  (11.x >= 450.80.02, 12.x >= 525, 13.x >= 580; 10.x has none: "the minimum required driver version is the same
  as the driver that's packaged as part of that toolkit release") and the cuDNN 9.10.2 support matrix
  (https://docs.nvidia.com/deeplearning/cudnn/latest/support-matrix/index.html: CUDA 12.x ">=525.60.13").
- cuDNN: https://docs.nvidia.com/deeplearning/cudnn/archives/cudnn-803/support-matrix/index.html (7.6.5, 8.0.3),
  .../cudnn-822/... (8.2.2), .../backend/v9.5.1/reference/support-matrix.html (9.5.1), .../latest/... (9.10.2).
- Compute capability -> architecture: https://developer.nvidia.com/cuda-gpus.
- NVML device names are real ones: "NVIDIA H100 80GB HBM3", "NVIDIA H100 NVL", "NVIDIA A100-SXM4-80GB",
  "NVIDIA A100 80GB PCIe", "NVIDIA GeForce RTX 3090", "NVIDIA RTX A4500" are RunPod's GPU type ids (the NVML
  names) listed in a public tools/runpod_specs.py; "GPU 0: Tesla V100-SXM2-16GB (UUID: ...)" is `nvidia-smi
  --list-gpus` output in public Slurm notes; "Tesla T4" and "NVIDIA RTX PRO 6000 Blackwell Server Edition"
  appear in public GPU-cost tables keyed by NVML name.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest

from envdoctor import matrix
from envdoctor.matrix import hardware as hw

CHECK_SCRIPT = os.path.join(os.path.dirname(__file__), "..", "scripts", "check_matrix.py")


@pytest.fixture(autouse=True)
def _fresh_cache():
    matrix.clear_cache()
    yield
    matrix.clear_cache()


@pytest.fixture
def data_copy(tmp_path, monkeypatch):
    """A private copy of the data folder that the loader reads instead of the package's."""
    dst = tmp_path / "data"
    shutil.copytree(matrix.DATA_DIR, str(dst))
    monkeypatch.setattr(matrix, "DATA_DIR", str(dst))
    matrix.clear_cache()
    return dst


def _edit(path, change):
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


# ------------------------------------------------------------------ the shipped data


def test_every_shipped_table_loads_and_validates():
    """CI's full validation of the shipped tables (a run checks only their envelopes)."""
    assert {"cuda", "cudnn", "gpu_arch", "gpus"} <= set(matrix.areas())
    for area in matrix.areas():
        assert matrix.problems_of(area, matrix.read_document(area)) == [], area
        rows = matrix.load(area)
        assert rows, area
        for row in rows:
            assert row["source"]["url"].startswith("https://")


def test_cuda_table_covers_10_0_to_13_0_without_unexplained_gaps():
    versions = [r["version"] for r in hw.cuda_releases()]
    for want in ["10.0", "10.1", "10.2"] + ["11.%d" % m for m in range(9)] + [
        "12.%d" % m for m in range(10) if m != 7
    ] + ["13.0"]:
        assert want in versions
    assert "12.7" not in versions  # never released: the validator's KNOWN_GAPS explains it


# ------------------------------------------------------------------ CUDA <-> driver


@pytest.mark.parametrize(
    "cuda, driver",
    [
        ("10.0", "410.48"),  # CUDA 10.0.130 >= 410.48
        ("10.1", "418.39"),  # 10.1.105 general release, and updates
        ("10.2", "440.33"),  # 10.2.89
        ("11.0", "450.51.05"),  # 11.0.2 GA
        ("11.0.3", "450.51.06"),  # 11.0.3 Update 1
        ("11.1", "455.23"),
        ("11.1.1", "455.32"),
        ("11.2.0", "460.27.03"),
        ("11.2.2", "460.32.03"),
        ("11.3", "465.19.01"),
        ("11.4", "470.42.01"),
        ("11.4.1", "470.57.02"),
        ("11.4.4", "470.82.01"),  # Update 3 and 4 need 470.82.01
        ("11.5.2", "495.29.05"),
        ("11.6", "510.39.01"),
        ("V11.6.124", "510.39.01"),  # nvcc prints "release 11.6, V11.6.124"; a build number is not an update
    ],
)
def test_min_driver_for_cuda_matches_table_3(cuda, driver):
    assert hw.min_driver_for_cuda(cuda) == driver


@pytest.mark.parametrize(
    "cuda, driver",
    [
        ("10.2", "440.33"),  # no minor-version compatibility before 11
        ("11.0", "450.51.05"),  # its own GA driver is older than the 11.x floor
        ("11.6", "450.80.02"),
        ("11.8", "450.80.02"),
        ("12.4", "525.60.13"),
        ("12.9.1", "525.60.13"),
    ],
)
def test_min_driver_with_minor_version_compatibility(cuda, driver):
    assert hw.min_driver_for_cuda(cuda, minor_compat=True) == driver


def test_minor_compat_floor_for_13_x_is_in_the_580_branch():
    assert hw.min_driver_for_cuda("13.0", minor_compat=True).startswith("580.")


@pytest.mark.parametrize(
    "driver, plain, compat",
    [
        ("418.39", "10.1", "10.1"),
        ("450.80.02", "11.0", "11.8"),  # the driver the compatibility page's own example uses
        ("470.57.02", "11.4", "11.8"),
        ("455.23.05", "11.1", "11.8"),
        ("396.26", "9.2", "9.2"),  # CUDA 9.2's GA driver (Table 2); 9.x has no minor-version compatibility
        ("352.31", "7.5", "7.5"),  # CUDA 7.5's driver (Table 3)
        ("340.108", "6.5", "6.5"),  # the last R340 (no CUDA-version call in its NVML): CUDA 6.5's driver line
        ("331.113", None, None),  # older than anything in the table
        ("not a version", None, None),
    ],
)
def test_newest_cuda_for_driver(driver, plain, compat):
    assert hw.newest_cuda_for_driver(driver) == plain
    assert hw.newest_cuda_for_driver(driver, minor_compat=True) == compat


def test_unknown_cuda_version_answers_none_not_an_exception():
    assert hw.cuda_release("6.0") is None  # before the table (it begins at 6.5)
    assert hw.min_driver_for_cuda("garbage") is None
    assert hw.gcc_max_for_cuda("") is None
    assert hw.cuda_supports_cc("99.0", "8.0") is None
    assert hw.cudnn_releases_for_cuda("not-cuda") == []
    assert hw.distributions_for_cuda("1.0") == {}


# ------------------------------------------------------------------ architectures


@pytest.mark.parametrize(
    "cc, arch",
    [
        ("3.7", "Kepler"),  # Tesla K80
        ("6.1", "Pascal"),
        ("7.0", "Volta"),
        ("7.5", "Turing"),
        ("8.0", "Ampere"),
        ("8.6", "Ampere"),
        ("8.9", "Ada Lovelace"),
        ("9.0", "Hopper"),
        ("10.0", "Blackwell"),
        ("12.0", "Blackwell"),
        ("sm_90", "Hopper"),  # nvcc / torch.cuda.get_arch_list() spelling
        ((8, 6), "Ampere"),  # torch.cuda.get_device_capability() returns a tuple
    ],
)
def test_arch_for_cc(cc, arch):
    assert hw.arch_for_cc(cc)["arch"] == arch


def test_unknown_compute_capability_is_none():
    assert hw.arch_for_cc("4.0") is None
    assert hw.arch_for_cc("eight") is None
    assert hw.arch_for_cc((8,)) is None


def test_tensor_core_precisions_tell_what_a_gpu_accelerates():
    assert hw.arch_for_cc("6.1")["tensor_core_gen"] is None  # Pascal: no tensor cores
    assert "BF16" not in hw.arch_for_cc("7.5")["tensor_precisions"]  # Turing: FP16/INT8, no BF16
    assert {"BF16", "TF32"} <= set(hw.arch_for_cc("8.0")["tensor_precisions"])
    assert "FP8" in hw.arch_for_cc("8.9")["tensor_precisions"]
    assert "FP8" not in hw.arch_for_cc("8.6")["tensor_precisions"]
    assert "FP4" in hw.arch_for_cc("12.0")["tensor_precisions"]


@pytest.mark.parametrize(
    "cuda, cc, ok",
    [
        ("11.0", "8.0", True),
        ("11.0", "8.6", False),  # sm_86 arrived in CUDA 11.1
        ("11.1", "8.6", True),
        ("11.8", "9.0", True),  # Hopper and Ada first targeted by 11.8
        ("11.7", "8.9", False),
        ("12.0", "3.7", False),  # Kepler dropped in 12.0
        ("11.8", "3.5", True),
        ("12.8", "12.0", True),  # Blackwell GeForce needs 12.8
        ("12.6", "12.0", False),
        ("13.0", "7.0", False),  # Volta dropped in 13.0
        ("10.2", "8.0", False),
    ],
)
def test_cuda_supports_cc(cuda, cc, ok):
    assert hw.cuda_supports_cc(cuda, cc) is ok


def test_deprecated_targets_are_flagged_but_still_supported():
    assert hw.cuda_supports_cc("11.8", "3.5") and hw.cc_deprecated_in("11.8", "3.5")
    assert not hw.cc_deprecated_in("11.8", "8.0")
    assert "11.8" in hw.cuda_for_cc("3.5") and "12.0" not in hw.cuda_for_cc("3.5")


def test_gcc_max_grows_with_cuda():
    assert hw.gcc_max_for_cuda("11.0") == "9"
    assert hw.gcc_max_for_cuda("12.4.1") == "13"


# ------------------------------------------------------------------ cuDNN


def test_cudnn_releases_for_cuda():
    for_12_4 = [r["version"] for r in hw.cudnn_releases_for_cuda("12.4.1")]
    assert "9.5.1" in for_12_4 and "9.10.2" in for_12_4
    assert "8.6.0" not in for_12_4  # cuDNN 8.6 has no CUDA 12 build
    for_10_2 = [r["version"] for r in hw.cudnn_releases_for_cuda("10.2")]
    assert {"7.6.5", "8.2.2", "8.4.0"} <= set(for_10_2)
    assert "8.0.3" in [r["version"] for r in hw.cudnn_releases_for_cuda("11.0")]
    assert "7.6.0" not in for_10_2  # 7.6.0 predates CUDA 10.2


def test_cudnn_sonames_follow_the_major():
    assert hw.cudnn_release("9.10.2")["sonames"] == ["libcudnn.so.9"]
    assert hw.cudnn_release("8.2.4")["version"] == "8.2.2"  # newest listed row of the 8.2 series
    assert hw.cudnn_release("7.6.5")["sonames"] == ["libcudnn.so.7"]
    assert hw.cudnn_release("6.0.21") is None


# ------------------------------------------------------------------ GPU products


@pytest.mark.parametrize(
    "nvml_name, product, memory_gb",
    [
        ("NVIDIA GeForce RTX 4090", "GeForce RTX 4090", 24),
        ("NVIDIA GeForce RTX 3090", "GeForce RTX 3090", 24),
        ("NVIDIA H100 80GB HBM3", "H100 SXM5 80GB", 80),
        ("NVIDIA H100 NVL", "H100 NVL", 94),
        ("NVIDIA A100-SXM4-80GB", "A100 SXM4 80GB", 80),
        ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB", 80),
        ("Tesla V100-SXM2-16GB", "Tesla V100 SXM2 16GB", 16),
        ("Tesla T4", "Tesla T4", 16),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX PRO 6000 Blackwell", 96),
    ],
)
def test_gpu_product_from_nvml_name(nvml_name, product, memory_gb):
    row = hw.gpu_product(nvml_name)
    assert row is not None and row["name"] == product
    assert row["memory_gb"] == memory_gb
    assert hw.arch_for_cc(row["cc"]) is not None  # the report can say which architecture it is


@pytest.mark.parametrize(
    "nvml_name",
    [
        "NVIDIA GeForce RTX 4090 Laptop GPU",  # a different, smaller chip: not the desktop card
        "NVIDIA RTX A4500",  # not in the table
        "NVIDIA A10G",  # AWS's A10G is not the A10
        "",
    ],
)
def test_gpu_product_does_not_guess(nvml_name):
    assert hw.gpu_product(nvml_name) is None


def test_more_specific_product_wins():
    assert hw.gpu_product("NVIDIA GeForce GTX 1080 Ti")["name"] == "GeForce GTX 1080 Ti"
    assert hw.gpu_product("NVIDIA GeForce GTX 1080")["name"] == "GeForce GTX 1080"
    assert hw.gpu_product("NVIDIA RTX 6000 Ada Generation")["name"] == "RTX 6000 Ada Generation"
    assert hw.gpu_product("Quadro RTX 6000")["name"] == "Quadro RTX 6000"


# ------------------------------------------------------------------ loader failures


def test_corrupted_file_is_a_matrix_error_naming_the_file(data_copy):
    path = data_copy / "cuda.json"
    path.write_text(path.read_text()[:500])  # truncated mid-row
    with pytest.raises(matrix.MatrixError) as err:
        hw.min_driver_for_cuda("12.4")
    assert "cuda.json" in str(err.value) and "not valid JSON" in str(err.value)


def test_missing_file_is_a_matrix_error(data_copy):
    (data_copy / "gpus.json").unlink()
    with pytest.raises(matrix.MatrixError, match="gpus.json"):
        matrix.load("gpus")


def test_row_without_source_is_rejected(data_copy):
    _edit(data_copy / "gpu_arch.json", lambda d: d["rows"][3].pop("source"))
    with pytest.raises(matrix.MatrixError, match=r"gpu_arch\.json.*row 3.*source"):
        matrix.load("gpu_arch")


def test_area_rule_breach_is_rejected(data_copy):
    def swap(doc):
        doc["rows"][0], doc["rows"][1] = doc["rows"][1], doc["rows"][0]

    _edit(data_copy / "cuda.json", swap)
    with pytest.raises(matrix.MatrixError, match="not sorted"):
        matrix.load("cuda")


def test_unverified_row_loads_and_is_reported_as_such(data_copy):
    def unverify(doc):
        row = next(r for r in doc["rows"] if r["version"] == "10.0")
        row["source"]["verified"] = False
        row["source"]["note"] = "not re-checked"
        row["source"].pop("quotes", None)  # (a quoted field is a verified one)

    _edit(data_copy / "cuda.json", unverify)
    row = hw.cuda_release("10.0")
    assert row["min_driver_linux"] == "410.48"
    assert matrix.unverified(row)


def test_unverified_without_a_note_is_rejected(data_copy):
    _edit(data_copy / "cudnn.json", lambda d: d["rows"][0]["source"].update(verified=False, note=""))
    with pytest.raises(matrix.MatrixError, match="needs a source.note"):
        matrix.load("cudnn")


# ------------------------------------------------------------------ the integrity script


def _run_script(capsys, *args):
    import importlib.util

    spec = importlib.util.spec_from_file_location("check_matrix", CHECK_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        rc = module.main(list(args))
    finally:
        matrix.clear_cache()
    return rc, capsys.readouterr().out


def test_check_script_passes_on_shipped_data_and_times_loading(capsys, monkeypatch):
    monkeypatch.setattr(matrix, "DATA_DIR", matrix.DATA_DIR)  # the script may repoint it
    rc, out = _run_script(capsys, "--list-unverified")
    assert rc == 0
    assert "ok: cuda:" in out and "took" in out
    print(out.splitlines()[-1])  # the load time, for the record (not asserted)


@pytest.mark.parametrize(
    "area, change, message",
    [
        ("cuda", lambda d: d["rows"].pop(next(i for i, r in enumerate(d["rows"]) if r["version"] == "12.3")),
         "is missing between"),  # drop 12.3: an unexplained gap
        ("cuda", lambda d: d["rows"][5].update(min_driver_linux="400.1"), "goes back"),
        ("cuda", lambda d: d["rows"][4].update(cc_min="9.0", cc_max="8.0"), "above cc_max"),
        ("cudnn", lambda d: d["rows"][-1]["cuda"].append("12.7"), "not in the cuda table"),
        ("cudnn", lambda d: d["rows"][-1].update(sonames=["libcudnn.so.8"]), "does not end in .so.9"),
        ("gpus", lambda d: d["rows"][1].update(match=d["rows"][0]["match"]), "is also"),
        ("gpus", lambda d: d["rows"][0].update(cc="4.0"), "not in the gpu_arch table"),
        ("gpu_arch", lambda d: d["rows"][0].update(tensor_precisions=["FP16"]), "without tensor cores"),
        ("cuda", lambda d: d["rows"][0]["source"].update(url="http://example.com"), "https://"),
        ("cuda", lambda d: d["rows"][0]["source"].update(checked="22/11/2026"), "not a date"),
    ],
)
def test_check_script_fails_on_bad_data(tmp_path, capsys, area, change, message):
    dst = tmp_path / "data"
    shutil.copytree(matrix.DATA_DIR, str(dst))
    _edit(dst / (area + ".json"), change)
    saved = matrix.DATA_DIR
    try:
        rc, out = _run_script(capsys, "--data-dir", str(dst))
    finally:
        matrix.DATA_DIR = saved
    assert rc == 1
    assert message in out and (area + ".json") in out


def test_cudnn_support_follows_the_newest_row_at_or_below_and_names_the_last_release_per_gpu():
    from envdoctor.matrix import hardware as hw
    # no 9.13 row: cuDNN 9.13.1 is judged by 9.12.0, the newest row below it (9.11.0 was the first release
    # without Maxwell/Pascal/Volta)
    assert hw.cudnn_support_row("9.13.1.26")["version"] == "9.12.0"
    assert hw.cudnn_support_row("9.11.1.4")["version"] == "9.11.0"
    assert hw.cudnn_support_row("9.10.2.21")["version"] == "9.10.2"
    assert hw.cudnn_support_row("10.0") is None and hw.cudnn_support_row("garbage") is None
    last, first_without = hw.cudnn_last_for_cc("6.1", 9)
    assert (last["version"], first_without["version"]) == ("9.10.2", "9.11.0")
    assert hw.cudnn_last_for_cc("9.0", 9)[1] is None  # Hopper: every 9.x row supports it
    assert hw.cudnn_last_for_cc("3.0", 9) is None  # Kepler: no cuDNN 9 at all


def test_a_run_checks_the_shipped_tables_envelope_only_but_any_other_table_fully(tmp_path, monkeypatch):
    """Shipped tables are validated in CI, not on every run; a copy elsewhere gets every rule."""
    calls = []
    real = matrix.validators()["cuda"]
    monkeypatch.setitem(matrix.validators(), "cuda", lambda rows: calls.append(len(rows)) or real(rows))
    matrix._load.cache_clear()
    matrix.load("cuda")
    assert calls == []  # the shipped table: envelope only
    monkeypatch.setenv("ENVDOCTOR_VALIDATE_MATRIX", "1")
    matrix._load.cache_clear()
    matrix.load("cuda")
    assert len(calls) == 1
    matrix._load.cache_clear()


# ------------------------------------------------------------------ cuDNN lookups (issue 12)


def test_cudnn_two_part_version_is_its_newest_series_row_not_an_older_one():
    # "8.9" is the 8.9 series: the 8.9.7 row, never 8.6.0 (cudnn.json has no 8.9.0 row)
    assert hw.cudnn_release("8.9")["version"] == "8.9.7"
    assert hw.cudnn_release("8.9.4")["version"] == "8.9.7"
    assert hw.cudnn_release("9.10")["version"] == "9.10.2"
    assert hw.cudnn_release("9.1.0.70") is None  # no 9.1 row: the caller decides (the 9.0.0 row's span)


def test_cudnn_9_builds_run_on_later_minors_of_their_cuda_major():
    # cuDNN 9's support matrix lists "CUDA 12.x" builds: 9.0.0 (listed up to 12.3) runs on CUDA 12.4
    for_124 = [r["version"] for r in hw.cudnn_releases_for_cuda("12.4")]
    assert "9.0.0" in for_124 and "8.9.7" not in for_124
    # cuDNN 9.12 is the first with CUDA 13 wheels; 9.10.2 and 9.11.0 have no CUDA 13 build
    assert [r["version"] for r in hw.cudnn_releases_for_cuda("13.0")] == ["9.12.0", "9.14.0", "9.17.0", "9.28.0"]
    assert [r["version"] for r in hw.cudnn_releases_for_cuda("13.5")] == ["9.12.0", "9.14.0", "9.17.0", "9.28.0"]
    assert "8.9.7" in [r["version"] for r in hw.cudnn_releases_for_cuda("12.3")]


def test_cuda_updates_are_addressable_by_their_names():
    # Table 3 of the CUDA release notes: "CUDA 11.4 Update 3 (11.4.3) >= 470.82.01"; 13.4's GA is 13.4.1,
    # so its Update 1 is 13.4.2
    assert hw.cuda_full_version("11.4 Update 3") == "11.4.3"
    assert hw.min_driver_for_cuda("11.4 Update 3") == "470.82.01"
    assert hw.cuda_full_version("13.4 Update 1") == "13.4.2"
    assert hw.cuda_full_version("12.1u1") == "12.1.1"
    assert hw.cuda_release("12.3.2")["version"] == "12.3"
    assert hw.cuda_full_version("12.7 Update 1") is None  # never released
    assert hw.cuda_full_version("update") is None


def test_matrix_cudnn_says_which_row_answers_for_a_release_without_its_own():
    """issue 20: `matrix cudnn 9.1` (a README example) answered under "cudnn 9.0.0" without saying that row
    covers 9.1."""
    import json

    from click.testing import CliRunner

    from envdoctor.cli import cli

    out = CliRunner().invoke(cli, ["matrix", "cudnn", "9.1"]).output
    lines = out.splitlines()
    assert lines[0] == "cudnn 9.0.0"
    said = " ".join(" ".join(lines[1:3]).split())
    assert said.startswith("covers 9.1: no row of its own; the 9.0.0 row stands for cuDNN 9.0.0 up to, not "
                           "including, 9.5.1"), out
    doc = json.loads(CliRunner().invoke(cli, ["matrix", "cudnn", "9.1", "--format", "json"]).output)
    assert doc["derived"]["covers"].startswith("9.1: no row of its own")
    # A release with a row of its own: nothing to say.
    assert "covers" not in CliRunner().invoke(cli, ["matrix", "cudnn", "9.5.1"]).output
