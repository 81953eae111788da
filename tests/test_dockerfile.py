"""``envdoctor dockerfile``: a Dockerfile judged before it is built.

The cases in tests/data/dockerfiles/ are Dockerfiles from public threads (README.md there gives each
source and what the thread confirmed); the expectations below were written from those threads. Hosts are
given as ``advise`` takes them (driver, GPU): the threads' own where they print one.
"""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from envdoctor import dockerfile as dfmod
from envdoctor.cli import cli
from envdoctor.target import Target

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "dockerfiles")


def _lint(case, target=Target(), build_args=None):
    path = os.path.join(HERE, case, "Dockerfile")
    with open(path, encoding="utf-8") as fh:
        df = dfmod.parse(fh.read(), path, build_args)
    return dfmod.lint(df, target, os.path.dirname(path))


def _codes(findings):
    return sorted((f.code, f.severity) for f in findings)


def test_nvidia_cuda_without_a_tag_is_an_error_before_any_pull():
    """NVIDIA/nvidia-docker#1454: `FROM nvidia/cuda` -> manifest for nvidia/cuda:latest not found."""
    found = _lint("nvidia-docker-1454")
    assert _codes(found) == [("dockerfile.image_tag_missing", "error")]
    assert "latest" in found[0].title and "manifest unknown" in found[0].detail


def test_a_tag_is_suggested_that_the_host_driver_starts():
    found = _lint("nvidia-docker-1454", Target(driver="535.104.05", cc="8.0"))
    fix = found[0].fix.commands[0]
    assert fix.startswith("FROM nvidia/cuda:12.2.") and fix.endswith("-runtime-ubuntu22.04"), fix


def test_an_image_newer_than_the_host_driver_does_not_start():
    """ggml-org/llama.cpp#9665: ARG CUDA_VERSION=12.6.0 on driver 550.142 (CUDA 12.4): both stages' images
    fail 'unsatisfied condition: cuda>=12.6'; the thread's fix, CUDA_VERSION=12.4.x, starts."""
    host = Target(driver="550.142", cc="8.9", gpu="RTX 4090")
    found = _lint("llama-cpp-9665", host)
    assert _codes(found) == [("dockerfile.image_needs_newer_driver", "error")] * 2
    assert [f.evidence[0]["value"] for f in found] == [6, 14]  # the two FROM lines (ARGs expanded)
    assert "cuda>=12.6" in found[0].detail and "560.28.03" in found[0].title
    assert found[0].fix.commands[0] == "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04"
    assert _lint("llama-cpp-9665", host, {"CUDA_VERSION": "12.4.1"}) == []


def test_the_same_image_on_a_driver_new_enough_is_fine():
    assert _lint("llama-cpp-9665", Target(driver="560.35.03", cc="8.9")) == []


def test_flash_attn_on_an_image_without_nvcc():
    """Dao-AILab/flash-attention#1229: python:3.10-slim, `pip install flash-attn` fails: nvcc not found."""
    found = _lint("flash-attention-1229", Target(driver="550.142", cc="8.9"))
    assert _codes(found) == [("dockerfile.no_compiler_in_image", "error")]
    assert found[0].evidence[0]["value"] == 24 and "flash-attn" in found[0].title
    assert "nvcc" in found[0].detail


def test_the_solved_dockerfile_installs_nvcc_and_prebuilt_wheels():
    """hanxiaowang00/iFlame#2, '[solved]': CUDA 12.1 toolkit from NVIDIA's repository, torch 2.5.1+cu121 and
    a prebuilt flash-attn wheel on Ubuntu 22.04's Python 3.10: nothing to say, on this machine or a 4090."""
    assert _lint("iflame-2") == []
    assert _lint("iflame-2", Target(driver="550.142", cc="8.9", gpu="RTX 4090")) == []


def test_the_same_dockerfile_on_an_old_gpu_names_the_build_that_fits():
    """A what-if on the real iFlame Dockerfile: a Tesla K80 (cc 3.7) on driver 470 cannot run torch 2.5's
    cu121 wheels (no sm_37; CUDA 12.1 needs a newer driver); the fix is advise's build."""
    found = _lint("iflame-2", Target(driver="470.82.01", cc="3.7", gpu="Tesla K80"))
    assert _codes(found) == [("dockerfile.build_does_not_fit", "error")]
    f = found[0]
    assert f.evidence[0]["value"] == 22 and "torch==2.5.1" in f.title and "cu121" in f.title
    assert "compute capability 3.7" in f.detail
    assert f.fix.commands and "torch==2." in f.fix.commands[0] and "/whl/cu1" in f.fix.commands[0]


def test_pip_into_ubuntu_latest_is_externally_managed():
    """vti/wahooMapsCreator-docker#3: FROM ubuntu:latest (24.04), `bash -c "pip install ..."` ->
    error: externally-managed-environment."""
    found = _lint("wahoo-maps-pr3")
    assert _codes(found) == [("dockerfile.externally_managed_python", "error")]
    assert found[0].evidence[0]["value"] == 4 and "venv" in " ".join(found[0].fix.commands)


def _inline(text, target=Target()):
    return dfmod.lint(dfmod.parse(text, "Dockerfile"), target)


def test_a_virtual_environment_or_the_override_is_not_externally_managed():
    base = ("FROM nvidia/cuda:12.6.3-runtime-ubuntu24.04\n"
            "RUN apt-get update && apt-get install -y python3-pip python3-venv\n")
    assert _codes(_inline(base + "RUN pip install numpy\n")) == [("dockerfile.externally_managed_python", "error")]
    assert _inline(base + "RUN python3 -m venv /opt/venv\nENV PATH=/opt/venv/bin:$PATH\nRUN pip install numpy\n") == []
    assert _inline(base + "RUN pip install --break-system-packages numpy\n") == []
    assert _inline(base + "RUN /opt/venv/bin/pip install numpy\n") == []


def test_pip_in_an_nvidia_cuda_image_without_python():
    found = _inline("FROM nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04\nRUN pip3 install torch\n")
    assert ("dockerfile.no_python_in_image", "error") in _codes(found)
    assert _inline("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN apt-get update && apt-get install -y "
                   "python3-pip\nRUN pip3 install torch\n") == []


def test_cpu_only_builds_in_a_gpu_image():
    found = _inline("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n"
                    "RUN apt-get update && apt-get install -y python3-pip\n"
                    "RUN pip install onnxruntime==1.19.2 && pip install torch --index-url "
                    "https://download.pytorch.org/whl/cpu\n", Target(driver="550.54.15", cc="8.9"))
    assert _codes(found) == [("dockerfile.cpu_only_build", "warning")] * 2
    assert found[0].fix.commands == ['RUN pip install "onnxruntime-gpu==1.19.*"']  # the same release's GPU build


def test_tensorflow_without_its_cuda_extra():
    found = _inline("FROM python:3.11-slim\nRUN pip install tensorflow==2.16.1\n", Target(driver="550.54.15", cc="8.9"))
    assert _codes(found) == [("dockerfile.cuda_libraries_not_installed", "warning")]
    assert "CUDA 12.3 and cuDNN 8.9" in found[0].detail
    assert found[0].fix.commands == ["RUN pip install 'tensorflow[and-cuda]==2.16.1'"]
    assert _inline("FROM python:3.11-slim\nRUN pip install 'tensorflow[and-cuda]==2.16.1'\n",
                   Target(driver="550.54.15", cc="8.9")) == []


def test_a_stage_built_from_a_devel_stage_may_compile():
    text = ("FROM nvidia/cuda:12.4.1-devel-ubuntu22.04 AS build\nRUN nvcc --version\n"
            "FROM build AS more\nRUN nvcc -o x x.cu\n"
            "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN nvcc -o y y.cu\n")
    found = _inline(text)
    assert [(f.code, f.evidence[0]["value"]) for f in found] == [("dockerfile.no_compiler_in_image", 6)]


def test_merge_conflict_markers_and_unknown_instructions_are_skipped():
    text = ("FROM nvidia/cuda:12.6.0-devel-ubuntu22.04 AS build\n<<<<<<< HEAD\nRUN cmake -B build -DGGML_CUDA=ON .\n"
            "=======\nRUN make -j llama-server\n>>>>>>> master\nFROM nvidia/cuda:12.6.0-runtime-ubuntu22.04\n")
    df = dfmod.parse(text, "Dockerfile")
    assert [s.line for s in df.stages] == [1, 7]
    assert _codes(dfmod.lint(df, Target(driver="550.142", cc="8.9"))) == [
        ("dockerfile.image_needs_newer_driver", "error")] * 2


def test_parser_reads_what_docker_reads():
    text = ("# escape=`\nARG BASE=nvidia/cuda:12.4.1-runtime-ubuntu22.04\nFROM ${BASE} AS app\n"
            "RUN apt-get update && `\n    # a comment inside a continuation\n    apt-get install -y python3-pip\n"
            "RUN <<EOF\npip3 install --no-cache-dir onnxruntime\nEOF\n"
            'RUN ["/bin/sh", "-c", "pip3 install paddlepaddle"]\n')
    df = dfmod.parse(text, "Dockerfile")
    assert [s.image.reference for s in df.stages] == ["nvidia/cuda:12.4.1-runtime-ubuntu22.04"]
    assert df.stages[0].name == "app"
    codes = [(f.code, f.evidence[0]["value"]) for f in dfmod.lint(df, Target())]
    assert codes == [("dockerfile.cpu_only_build", 7), ("dockerfile.cpu_only_build", 10)]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("FROM RUN ARG ENV pip install torch==2.4 nvidia/cuda:12.4.1-devel"
                                             "-ubuntu24.04 ${X} \\ \n\"'`[]<<EOF#=-:.")), max_size=300))
def test_no_text_makes_the_linter_raise(text):
    df = dfmod.parse(text, "Dockerfile")
    dfmod.lint(df, Target(driver="535.104.05", cc="8.0"))


# -- the command ------------------------------------------------------------------------------------------

def _run(*args, **kw):
    return CliRunner().invoke(cli, ["dockerfile"] + list(args), **kw)


def test_command_exit_codes_and_json():
    path = os.path.join(HERE, "llama-cpp-9665", "Dockerfile")
    r = _run(path, "--driver", "550.142", "--gpu", "RTX 4090", "--format", "json")
    assert r.exit_code == 1, r.output
    doc = json.loads(r.output)
    import jsonschema

    with open(os.path.join(os.path.dirname(HERE), "..", "..", "envdoctor", "schemas", "dockerfile.schema.json")) as fh:
        jsonschema.validate(doc, json.load(fh))
    assert doc["summary"]["error"] == 2
    assert doc["host"]["driver"] == "550.142" and doc["host"]["compute_capabilities"] == ["8.9"]
    assert [s["cuda"] for s in doc["stages"]] == ["12.6.0", "12.6.0"]
    assert {f["code"] for f in doc["findings"]} == {"dockerfile.image_needs_newer_driver"}
    r = _run(path, "--driver", "550.142", "--gpu", "RTX 4090", "--build-arg", "CUDA_VERSION=12.4.1")
    assert r.exit_code == 0 and "no problems found" in r.output


def test_command_text_names_the_line_and_the_fix():
    r = _run(os.path.join(HERE, "flash-attention-1229", "Dockerfile"), "--driver", "550.142", "--cc", "8.9")
    assert r.exit_code == 1
    assert "ERROR line 24:" in r.output and "fix:" in r.output
    assert all(len(line) <= 80 for line in r.output.splitlines())


def test_command_reads_standard_input():
    r = _run("-", "--driver", "550.142", "--cc", "8.9", input="FROM nvidia/cuda:latest\n")
    assert r.exit_code == 1 and "standard input" in r.output


@pytest.mark.parametrize("content,why", [(b"FROM x\0y", "not text"), (b"#" * (2 * 1024 * 1024), "larger than")])
def test_command_refuses_what_is_not_a_dockerfile(tmp_path, content, why):
    p = tmp_path / "Dockerfile"
    p.write_bytes(content)
    r = _run(str(p), "--driver", "550.142", "--cc", "8.9")
    assert r.exit_code == 2 and why in r.output and "Traceback" not in r.output


def test_command_missing_file_and_bad_build_arg(tmp_path):
    r = _run(str(tmp_path / "nope"), "--driver", "550.142", "--cc", "8.9")
    assert r.exit_code == 2 and "cannot read" in r.output
    r = _run(os.path.join(HERE, "iflame-2", "Dockerfile"), "--build-arg", "no-equals", "--driver", "550.142",
             "--cc", "8.9")
    assert r.exit_code == 2 and "KEY=VALUE" in r.output


def test_every_dockerfile_code_is_explained():
    for code in dfmod.CODE_DOCS:
        r = CliRunner().invoke(cli, ["explain", code])
        assert r.exit_code == 0 and code in r.output


def test_a_data_center_gpu_on_a_long_term_branch_runs_a_newer_image_through_forward_compat():
    """nvidia/cuda 12.x images list R470 and R535 in NVIDIA_REQUIRE_CUDA: on an A100 with driver 535.104.05 a
    CUDA 12.6 image starts and runs through its cuda-compat libraries (ggml-org/llama.cpp#9665: 'can run on
    Driver Version: 535.104.05'); on a GeForce, or on R550 (not listed), it does not start."""
    path = os.path.join(HERE, "llama-cpp-9665")
    found = _lint("llama-cpp-9665", Target(driver="535.104.05", cc="8.0", gpu="A100 SXM4 40GB"))
    assert _codes(found) == [("dockerfile.image_needs_forward_compat", "warning")] * 2, path
    assert "R535" in found[0].detail and "Data Center" in found[0].detail
    assert _codes(_lint("llama-cpp-9665", Target(driver="535.104.05", cc="8.9", gpu="GeForce RTX 4090"))) == [
        ("dockerfile.image_needs_newer_driver", "error")] * 2
    assert _codes(_lint("llama-cpp-9665", Target(driver="550.142", cc="8.0", gpu="A100 SXM4 40GB"))) == [
        ("dockerfile.image_needs_newer_driver", "error")] * 2
