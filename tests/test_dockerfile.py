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
    assert _codes(dfmod.lint(df, Target(driver="550.142", cc="8.9", gpu="GeForce RTX 4090"))) == [
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
    assert r.exit_code == 0 and "no problems found" in " ".join(r.output.split())  # however the path wraps


def test_command_text_names_the_line_and_the_fix():
    path = os.path.join(HERE, "flash-attention-1229", "Dockerfile")
    r = _run(path, "--driver", "550.142", "--cc", "8.9")
    assert r.exit_code == 1
    assert "ERROR line 24:" in r.output and "fix:" in r.output
    # wrapped to 80 columns; only the file's own path, one word however long the checkout's is, may run over
    assert all(len(line) <= 80 for line in r.output.splitlines() if path not in line)


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


# -- what real Dockerfiles do that must not be reported (and what must) ----------------------------------
# Each pattern below was seen in public GPU Dockerfiles; the texts are written for these tests.

A100, RTX4090 = "A100", "GeForce RTX 4090"


def _host(driver, gpu=None, cc=None):
    from envdoctor.advise import gpu_cc

    name, gcc = gpu_cc(gpu) if gpu else (None, None)
    return Target(driver=driver, gpu=name, cc=cc or gcc)


def test_an_update_release_starts_on_the_driver_of_its_minor():
    """The toolkit checks cuda>=X.Y against the driver's CUDA X.Y: 12.6.3 starts wherever 12.6.0 does."""
    text = "FROM nvidia/cuda:12.6.3-runtime-ubuntu22.04\n"
    assert _inline(text, _host("560.28.03", A100)) == []
    found = _inline(text, _host("555.42.02", RTX4090))
    assert _codes(found) == [("dockerfile.image_needs_newer_driver", "error")]
    assert "560.28.03" in found[0].title  # the 12.6 (X.Y.0) driver, not the update's


def test_forward_compatibility_starts_newer_images_on_data_center_gpus():
    """nvidia/cuda images admit older long-term branches through forward compatibility (cuda-compat in the
    image) on data-center GPUs; GeForce GPUs get no such path; with no GPU named, it is a warning."""
    text = "FROM nvidia/cuda:12.8.1-runtime-ubuntu22.04\n"
    assert _inline(text, _host("535.104.05", A100)) == []
    geforce = _inline(text, _host("535.104.05", RTX4090))
    assert _codes(geforce) == [("dockerfile.image_needs_newer_driver", "error")]
    assert "data-center GPUs only" in geforce[0].detail
    unknown = _inline(text, _host("535.104.05", cc="8.0"))
    assert _codes(unknown) == [("dockerfile.image_needs_newer_driver", "warning")]
    assert "R535" in unknown[0].detail
    # below the oldest branch the images list: no way in, whatever the GPU
    assert _codes(_inline(text, _host("460.106.00", A100))) == [("dockerfile.image_needs_newer_driver", "error")]
    assert _codes(_inline("FROM nvidia/cuda:13.0.2-base-ubuntu24.04\n", _host("470.256.02", A100))) == [
        ("dockerfile.image_needs_newer_driver", "error")]


def test_a_framework_in_a_forward_compatible_image_is_judged_by_the_image_cuda():
    """CUDA 13 builds need an R580 driver; on R535 they run only through the image's cuda-compat."""
    text = ("FROM nvidia/cuda:13.0.2-runtime-ubuntu24.04\nRUN apt-get update && apt-get install -y python3-venv\n"
            "RUN python3 -m venv /opt/venv && /opt/venv/bin/pip install torch --index-url "
            "https://download.pytorch.org/whl/cu130\n")
    assert _inline(text, _host("535.104.05", A100)) == []
    codes = [c for c, _ in _codes(_inline(text, _host("535.104.05", RTX4090)))]
    assert codes == ["dockerfile.build_does_not_fit", "dockerfile.image_needs_newer_driver"]


def test_python_and_pip_installed_earlier_in_the_same_run():
    base = "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\n"
    assert _inline(base + "RUN apt-get update && apt-get install -y python3 python3-pip && pip3 install numpy\n") == []
    assert _inline(base + "RUN apt-get update && apt-get install -y python3 && "
                          "curl -sS https://bootstrap.pypa.io/get-pip.py | python3 && pip install numpy\n") == []
    found = _inline(base + "RUN pip install numpy && apt-get install -y python3-pip\n")  # the order matters
    assert _codes(found) == [("dockerfile.no_python_in_image", "error")]


def test_python_without_pip_from_apt():
    """Debian/Ubuntu's python3 package has no pip: `python3 -m pip` stops with 'No module named pip'."""
    base = "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN apt-get update && apt-get install -y python3 python3-dev\n"
    found = _inline(base + "RUN python3 -m pip install numpy\n")
    assert _codes(found) == [("dockerfile.no_python_in_image", "error")]
    assert "No module named pip" in found[0].detail and found[0].evidence[0]["value"] == 3
    assert _inline(base + "RUN python3 -m venv /opt/venv && /opt/venv/bin/pip install numpy\n") == []
    assert _inline(base + "RUN python3 -m ensurepip && python3 -m pip install numpy\n") == []
    assert _inline(base + "RUN uv pip install --system numpy\n") == []  # uv needs no pip


def test_a_virtual_environment_on_path_or_from_uv_or_conda_is_not_externally_managed():
    base = "FROM nvidia/cuda:12.6.3-runtime-ubuntu24.04\nRUN apt-get update && apt-get install -y python3\n"
    # made in a build stage and copied in: only ENV PATH says so
    assert _inline("FROM nvidia/cuda:12.6.3-runtime-ubuntu24.04\nCOPY --from=build /opt/venv /opt/venv\n"
                   "ENV PATH=/opt/venv/bin:$PATH\nRUN pip install numpy\n") == []
    assert _inline(base + "RUN curl -LsSf https://astral.sh/uv/install.sh | sh && "
                          "uv venv -p python3.12 --seed /opt/py && pip install numpy\n") == []
    assert _inline("FROM mambaorg/micromamba:1.5.8\nRUN pip install numpy\n") == []
    # a PATH entry that is no environment does not count
    found = _inline(base + "ENV PATH=/usr/local/cuda/bin:/root/.local/bin:$PATH\nRUN python3 -m pip install numpy "
                           "--break-system-packages\nRUN pip install numpy\n")
    assert ("dockerfile.externally_managed_python", "error") in _codes(found)


def test_images_that_carry_nvcc_or_are_not_known():
    """NGC framework containers carry the CUDA toolkit; an image envdoctor does not know is not judged."""
    run = "RUN pip install flash-attn --no-build-isolation\n"
    assert _inline("FROM nvcr.io/nvidia/pytorch:24.05-py3\n" + run) == []
    # (its Ubuntu 24.04 Python is externally managed, as ggml-org/llama.cpp#15004 found: that stays)
    assert _codes(_inline("FROM nvcr.io/nvidia/nvhpc:25.3-devel-cuda12.8-ubuntu24.04\n" + run)) == [
        ("dockerfile.externally_managed_python", "error")]
    assert _inline("FROM ghcr.io/example/gpu-base:2024.1\n" + run) == []
    assert _codes(_inline("FROM pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime\n" + run)) == [
        ("dockerfile.no_compiler_in_image", "error")]


def test_prebuilt_wheels_need_no_compiler():
    base = "FROM pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime\n"
    assert _inline(base + "RUN pip install xformers==0.0.27.post2\n") == []  # manylinux wheels on PyPI
    assert _inline(base + "RUN FLASH_ATTENTION_SKIP_CUDA_BUILD=TRUE pip install flash-attn\n") == []
    assert _inline(base + "ENV MAMBA_SKIP_CUDA_BUILD=TRUE\nRUN pip install mamba-ssm\n") == []
    assert _inline(base + "RUN pip install torch-scatter -f https://data.pyg.org/whl/torch-2.4.0+cu121.html\n") == []
    assert _codes(_inline(base + "RUN pip install torch-scatter\n")) == [("dockerfile.no_compiler_in_image", "error")]


def test_build_arguments_in_install_lines_are_expanded_or_left_unjudged():
    k80 = _host("470.82.01", "Tesla K80")
    text = ("FROM python:3.11-slim\nARG TORCH=2.5.1\nARG CU=cu124\n"
            "RUN pip install torch==${TORCH} --index-url https://download.pytorch.org/whl/$CU\n")
    found = _inline(text, k80)
    assert _codes(found) == [("dockerfile.build_does_not_fit", "error")] and "torch==2.5.1" in found[0].title
    # a value the file does not give (ARG without default, shell-only expansions): not guessed
    assert _inline(text.replace("ARG CU=cu124", "ARG CU"), k80) == []
    assert _inline(text.replace("ARG TORCH=2.5.1", "ARG TORCH"), k80) == []
    assert _inline(text.replace("/whl/$CU", "/whl/${CU#cu}"), k80) == []
    assert _codes(dfmod.lint(dfmod.parse(text.replace("ARG CU=cu124", "ARG CU"), "Dockerfile", {"CU": "cu124"}),
                             k80)) == [("dockerfile.build_does_not_fit", "error")]


def test_install_lines_for_another_platform_in_a_case_are_not_judged():
    text = ("FROM python:3.11-slim\nARG TARGETPLATFORM\n"
            "RUN case ${TARGETPLATFORM} in \\\n"
            "      \"linux/arm64\") pip install torch --extra-index-url https://download.pytorch.org/whl/cpu ;; \\\n"
            "      *) pip install torch==2.5.1 --index-url https://download.pytorch.org/whl/cu124 ;; \\\n"
            "    esac && pip install torch==2.5.1 --index-url https://download.pytorch.org/whl/cu124\n")
    found = _inline(text, _host("470.82.01", "Tesla K80"))
    assert _codes(found) == [("dockerfile.build_does_not_fit", "error")]  # the line after esac only


def test_cuda_code_compiled_for_other_architectures():
    """SASS for X.Y runs on X.Y..X.9; only +PTX (or a named architecture, which carries it) reaches later GPUs."""
    def lint(arches, gpu):
        return _inline("FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\nRUN apt-get update && apt-get install -y "
                       "python3-pip\nENV TORCH_CUDA_ARCH_LIST=\"%s\"\nRUN pip install flash-attn\n" % arches,
                       _host("550.54.15", gpu))
    found = lint("8.0;8.6", "H100")
    assert _codes(found) == [("dockerfile.build_does_not_fit", "error")]
    assert "compute capability 9.0" in found[0].title and found[0].evidence[0]["value"] == 4
    assert lint("8.0;8.6+PTX", "H100") == []
    assert lint("Volta;Turing", "H100") == []  # Turing is 7.5+PTX
    assert lint("8.0", "A10") == []  # 8.0 code runs on 8.6
    assert _codes(lint("8.0 8.6 9.0", "Tesla T4")) == [("dockerfile.build_does_not_fit", "error")]
    assert lint("$ARCHES", "Tesla T4") == []  # not known: not judged


def test_an_nvidia_cuda_tag_without_a_release_does_not_exist():
    """A build argument that gives only the CUDA major (CUDA_VERSION=12) makes nvidia/cuda:12-devel-...,
    which no tag is; a tag still holding a variable is not judged."""
    text = "ARG CUDA_VERSION=12\nFROM nvidia/cuda:${CUDA_VERSION}-devel-ubuntu22.04\n"
    found = _inline(text)
    assert _codes(found) == [("dockerfile.image_tag_missing", "error")] and "'12-devel-ubuntu22.04'" in found[0].title
    assert _inline(text.replace("=12", "=12.4.1")) == []
    # a build argument without a value: the build command gives it, so the tag is not judged
    assert _inline("ARG CUDA_VERSION\nFROM nvidia/cuda:${CUDA_VERSION}-devel-ubuntu22.04\n") == []
    assert _inline("ARG BASE\nFROM ${BASE}\nRUN pip install flash-attn\n") == []


def test_a_build_argument_declared_empty_has_a_value():
    """ARG X="" is the empty string (FROM nvidia/cuda:12.6.3-cudnn$X-devel-... is 12.6.3-cudnn-devel-...);
    ARG X alone has none until the build gives one; ARG X in a stage takes the global X."""
    text = ('ARG CUDNN=""\nARG CUDA=12.6.3\nFROM nvidia/cuda:${CUDA}-cudnn$CUDNN-devel-ubuntu22.04\nARG CUDA\n'
            'RUN apt-get update && apt-get install -y python3-pip\n'
            'RUN pip install "torch==2.5.1" --index-url https://download.pytorch.org/whl/cu124\n')
    df = dfmod.parse(text, "Dockerfile")
    assert df.stages[0].image.cuda == "12.6.3" and df.stages[0].env["CUDA"] == "12.6.3"
    found = dfmod.lint(df, _host("550.144.03", RTX4090))
    assert _codes(found) == [("dockerfile.image_needs_newer_driver", "error")]


def test_what_a_parent_stage_installed_with_its_build_arguments_counts():
    """A later stage FROM an earlier one has what that one installed, its build arguments expanded
    (vLLM's Dockerfile: python${PYTHON_VERSION} from deadsnakes and `curl ${GET_PIP_URL} | python...`)."""
    text = ("ARG PY=3.12\nARG GET_PIP=https://bootstrap.pypa.io/get-pip.py\n"
            "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04 AS base\nARG PY\nARG GET_PIP\n"
            "RUN apt-get update && apt-get install -y python${PY} python${PY}-venv && "
            "curl -sS ${GET_PIP} | python${PY}\n"
            "FROM base AS build\nRUN python3 -m pip install uv && uv pip install --system numpy\n")
    assert _inline(text, _host("550.54.15", "H100")) == []
    no_py = text.replace("python${PY} python${PY}-venv && curl -sS ${GET_PIP} | python${PY}", "git")
    assert ("dockerfile.no_python_in_image", "error") in _codes(_inline(no_py, _host("550.54.15", "H100")))


# -- issue 20: --build-arg the file does not declare; a fix that keeps the image's variant -------------------

def test_a_build_arg_no_arg_declares_is_warned_about_as_docker_build_does():
    """`docker build --build-arg CUDA_VERSION=12.6.0` on a file whose ARG is CUDA: '[Warning] One or more
    build-args [CUDA_VERSION] were not consumed'; the image is built with the file's default."""
    text = "ARG CUDA=12.4.1\nFROM nvidia/cuda:${CUDA}-runtime-ubuntu22.04\n"
    df = dfmod.parse(text, "Dockerfile", {"CUDA_VERSION": "12.6.0", "HTTP_PROXY": "http://proxy:3128"})
    found = dfmod.lint(df, _host("550.54.15", RTX4090))
    assert _codes(found) == [("dockerfile.build_arg_unused", "warning")]  # the proxy is docker's own
    f = found[0]
    assert f.title.startswith("--build-arg CUDA_VERSION: no ARG CUDA_VERSION") and "CUDA" in f.title
    assert "were not consumed" in f.detail and "--build-arg CUDA=12.6.0" in f.fix.text
    assert df.stages[0].image.cuda == "12.4.1"  # the default, as docker builds it
    assert dfmod.lint(dfmod.parse(text, "Dockerfile", {"CUDA": "12.4.1"}), _host("550.54.15", RTX4090)) == []


def test_the_build_arg_warning_in_the_command_and_its_json():
    path = os.path.join(HERE, "llama-cpp-9665", "Dockerfile")
    r = _run(path, "--driver", "560.35.03", "--gpu", "RTX 4090", "--build-arg", "CUDA=12.4.1", "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    import jsonschema

    with open(os.path.join(os.path.dirname(HERE), "..", "..", "envdoctor", "schemas", "dockerfile.schema.json")) as fh:
        jsonschema.validate(doc, json.load(fh))
    assert [(f["code"], f["title"].split(":")[0]) for f in doc["findings"]] == [
        ("dockerfile.build_arg_unused", "--build-arg CUDA")]
    assert "CUDA_VERSION" in doc["findings"][0]["title"]  # the ARG it declares, which the user meant
    r = _run(path, "--driver", "560.35.03", "--gpu", "RTX 4090", "--build-arg", "CUDA=12.4.1")
    assert r.exit_code == 0 and "WARN  --build-arg CUDA: no ARG CUDA" in r.output, r.output


@pytest.mark.parametrize("image,driver,fix", [
    # the case: 12.8 cuDNN runtime on Ubuntu 24.04, driver R550 (CUDA 12.4): CUDA 12.4 has no 24.04 image
    ("12.8.0-cudnn-runtime-ubuntu24.04", "550.54.15", "FROM nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04"),
    ("12.8.1-cudnn-devel-ubuntu24.04", "560.35.03", "FROM nvidia/cuda:12.6.3-cudnn-devel-ubuntu24.04"),
    ("12.6.3-devel-ubuntu24.04", "555.42.02", "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04"),
    ("12.6.3-base-ubuntu22.04", "550.54.15", "FROM nvidia/cuda:12.4.1-base-ubuntu22.04"),
    # cuDNN 8 images before 12.3 are tagged -cudnn8-
    ("12.4.1-cudnn-runtime-ubuntu22.04", "535.104.05", "FROM nvidia/cuda:12.2.2-cudnn8-runtime-ubuntu22.04"),
])
def test_the_fix_for_an_image_the_driver_cannot_start_keeps_its_variant(image, driver, fix):
    found = _inline("FROM nvidia/cuda:%s\n" % image, _host(driver, RTX4090))
    assert _codes(found) == [("dockerfile.image_needs_newer_driver", "error")]
    assert found[0].fix.commands[0] == fix
    if "24.04" in image and "24.04" not in fix:
        assert "no ubuntu24.04 tag" in found[0].fix.text and "3.10" in found[0].fix.text
    if "cudnn8" in fix:
        assert "cuDNN is 8, not 9" in found[0].fix.text


def test_the_no_compiler_fix_names_the_devel_image_of_the_same_cudnn():
    found = _inline("FROM nvidia/cuda:12.1.1-cudnn8-runtime-ubuntu22.04\nRUN nvcc --version\n")
    assert found[0].fix.commands == ["FROM nvidia/cuda:12.1.1-cudnn8-devel-ubuntu22.04"]


# -- issue 29: a driver in the image, retired names, frameworks judged against each other --------------------
# Expectations written from the threads (tests/data/dockerfiles/README.md) before envdoctor was run on them.

def test_a_driver_installed_in_the_image_is_an_error():
    """P2Enjoy/kohya_ss-docker#24: apt-get install ${CUDA_DRIVER} (cuda-drivers-545) in the image: the driver's
    libraries mismatch the host's kernel module."""
    found = _lint("kohya-ss-docker-24", _host("545.29.06", RTX4090))
    assert _codes(found) == [("dockerfile.driver_in_image", "error")]
    assert found[0].evidence[0]["value"] == 5 and "cuda-drivers-545" in found[0].title
    assert "envdoctor install driver --dry-run" in found[0].fix.commands


def test_the_retired_tensorflow_gpu_name_only_fails():
    """tensorflow/tensorflow#60074: `pip install tensorflow-gpu` takes the 2.12.0 stub, whose setup.py raises."""
    found = _lint("tensorflow-60074", _host("550.54.15", RTX4090))
    assert _codes(found) == [("dockerfile.build_does_not_fit", "error")]
    assert found[0].evidence[0]["value"] == 4 and "tensorflow-gpu 2.12.0" in found[0].title
    assert "has been removed" in found[0].title
    assert "tensorflow[and-cuda]" in found[0].fix.commands[0]


def test_jax_and_torch_pinning_cudnn_that_cannot_meet():
    """mlcommons/algorithmic-efficiency#415: torch's GPU build pins cuDNN 8.5 (nvidia-cudnn-cu11==8.5.0.96), JAX's
    cuda11_pip build needs nvidia-cudnn-cu11>=8.6: the later install breaks the earlier."""
    found = _lint("algorithmic-efficiency-415", _host("535.104.05", A100))
    assert _codes(found) == [("dockerfile.frameworks_conflict", "error")]
    f = found[0]
    assert f.evidence[0]["value"] == 6 and "nvidia-cudnn-cu11" in f.title and "==8.5.0.96" in f.title
    assert "jax" in f.title.lower()


def test_tensorflow_and_jax_pinning_nccl_that_cannot_meet():
    """jax-ml/jax#21335 (tensorflow/tensorflow#68290): tensorflow[and-cuda] 2.15.0 pins nvidia-nccl-cu12==2.16.5 and
    jax[cuda12] 0.4.23 needs nvidia-nccl-cu12>=2.18.3: one install cannot resolve. The maintainers' way out:
    TensorFlow 2.16.1, whose nvidia-nccl-cu12==2.19.3 JAX's pin admits."""
    found = _lint("jax-21335", _host("535.104.05", "Tesla V100-SXM2-16GB"))
    assert _codes(found) == [("dockerfile.frameworks_conflict", "error")]
    f = found[0]
    assert f.evidence[0]["value"] == 2
    assert "nvidia-nccl-cu12" in f.title and "==2.16.5" in f.title and ">=2.18.3" in f.title
    assert "ResolutionImpossible" in f.detail
    fix = " ".join(f.fix.commands)
    assert "tensorflow[and-cuda]==2." in fix
    minor = int(fix.split("tensorflow[and-cuda]==2.")[1].split(".")[0])
    assert minor >= 16  # a TensorFlow whose NCCL pin meets JAX's (2.16.1 in the thread)


def test_a_torch_pin_with_no_wheel_for_the_image_python():
    """pytorch/pytorch#112882: torch 2.1.1 on python:3.12-slim: no wheel for Python 3.12 (from versions: none);
    the first release with Python 3.12 wheels is 2.2."""
    found = _lint("pytorch-112882", _host("550.54.15", RTX4090))
    assert _codes(found) == [("dockerfile.build_does_not_fit", "error")]
    f = found[0]
    assert f.evidence[0]["value"] == 2 and "torch==2.1.1" in f.title and "3.12" in f.title
    fix = f.fix.commands[0]
    assert fix.startswith('RUN pip install "torch==2.')
    assert int(fix.split('"torch==2.')[1].split(".")[0]) >= 2  # a release with Python 3.12 wheels


def test_a_framework_pin_whose_python_range_excludes_the_image_python():
    """issue 29's case: tensorflow-gpu==2.10.0 on Ubuntu 24.04 (Python 3.12): tensorflow-gpu 2.10's wheels are
    cp37..cp310 (PyPI's file list), TensorFlow 2.10's range. The same pin on Python 3.10 installs."""
    base = ("FROM nvidia/cuda:12.4.1-cudnn-runtime-ubuntu24.04\nRUN apt-get update && apt-get install -y python3 "
            "python3-venv\nRUN python3 -m venv /opt/venv\nENV PATH=/opt/venv/bin:$PATH\n")
    found = _inline(base + "RUN pip install tensorflow-gpu==2.10.0\n", _host("550.54.15", RTX4090))
    assert _codes(found) == [("dockerfile.build_does_not_fit", "error")]
    assert "needs Python >=3.7,<3.11, not 3.12" in found[0].title
    assert found[0].fix.commands[0].startswith('RUN pip install "tensorflow[and-cuda]')
    ok = _inline("FROM python:3.10-slim\nRUN pip install tensorflow-gpu==2.10.0\n", _host("535.104.05", A100))
    assert ok == []
    # a JAX extra the matrix does not name (an old spelling) still gets the release's Python range
    found = _inline("FROM python:3.8-slim\nRUN pip install 'jax[cuda]==0.4.20'\n", _host("550.54.15", RTX4090))
    assert _codes(found) == [("dockerfile.build_does_not_fit", "error")]
    assert "needs Python >=3.9,<3.13, not 3.8" in found[0].title
    assert _inline("FROM python:3.11-slim\nRUN pip install 'jax[cuda]==0.4.20'\n", _host("550.54.15", RTX4090)) == []


@pytest.mark.parametrize("line,name", [
    ("RUN apt-get install -y nvidia-utils-535-server libnvidia-compute-535-server", "nvidia-utils-535-server"),
    ("RUN apt-get install -y nvidia-headless-no-dkms-570-open=570.86.15-0ubuntu1", "nvidia-headless-no-dkms-570-open"),
    ("RUN dnf module install -y nvidia-driver:535-dkms", "nvidia-driver:535-dkms"),
    ("RUN yum install -y kmod-nvidia-latest-dkms nvidia-driver-latest-dkms-cuda", "kmod-nvidia-latest-dkms"),
    ("RUN zypper --non-interactive in nvidia-computeG05", "nvidia-computeG05"),
    ("RUN sh NVIDIA-Linux-x86_64-535.104.05.run --silent --no-kernel-module", "NVIDIA-Linux-x86_64-535.104.05.run"),
    ("RUN ./cuda_12.4.1_550.54.15_linux.run --silent --driver --toolkit", "cuda_12.4.1_550.54.15_linux.run --driver"),
])
def test_driver_package_names_from_nvidias_packaging(line, name):
    found = _inline("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n" + line + "\n")
    assert _codes(found) == [("dockerfile.driver_in_image", "error")] and name in found[0].title


@pytest.mark.parametrize("line", [
    "RUN apt-get install -y nvidia-container-toolkit nvidia-cuda-toolkit cuda-toolkit-12-4 cuda-compat-12-4",
    "RUN apt-get install -y libnvidia-container1 nvidia-fabricmanager-535 libnvidia-nscq-535 nvidia-modprobe",
    "RUN wget https://us.download.nvidia.com/tesla/535.104.05/NVIDIA-Linux-x86_64-535.104.05.run",
    "RUN ./cuda_12.4.1_550.54.15_linux.run --silent --toolkit",
])
def test_packages_that_are_not_the_driver(line):
    assert _inline("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n" + line + "\n") == []


def test_frameworks_in_separate_environments_or_agreeing_pins_do_not_conflict():
    base = "FROM python:3.11-slim\n"
    tf = 'RUN %s install "tensorflow[and-cuda]==2.16.1"\n'
    jax = 'RUN %s install "jax[cuda12]==0.4.31"\n'
    host = _host("550.54.15", RTX4090)
    assert _codes(_inline(base + tf % "pip" + jax % "pip", host)) == [("dockerfile.frameworks_conflict", "error")]
    one = _inline(base + 'RUN pip install "tensorflow[and-cuda]==2.16.1" "jax[cuda12]==0.4.31"\n', host)
    assert _codes(one) == [("dockerfile.frameworks_conflict", "error")] and "ResolutionImpossible" in one[0].detail
    assert _inline(base + tf % "/opt/tf/bin/pip" + jax % "/opt/jax/bin/pip", host) == []
    no_extra = _inline(base + 'RUN pip install "tensorflow==2.16.1"\n' + jax % "pip", host)  # no [and-cuda]: no pin
    assert _codes(no_extra) == [("dockerfile.cuda_libraries_not_installed", "warning")]
    # torch 2.5.1 pins cuDNN 9.1.0.70, which JAX 0.4.31's >=9.1,<10 admits
    assert _inline(base + "RUN pip install torch==2.5.1\n" + jax % "pip", host) == []


@pytest.mark.parametrize("a,b,meet", [
    ("==2.16.5", ">=2.18.3", False),                 # jax-ml/jax#21335
    ("==2.19.3", ">=2.18.3", True),                  # TensorFlow 2.16.1's NCCL and JAX's
    ("==8.9.7.29", "<9.0,>=8.9.2.26", True),
    ("==8.5.0.96", "<9,>=8.6", False),
    ("<10.0,>=9.3.0.75", "<10.0,>=9.8", True),       # ranges that intersect
    ("<9.0,>=8.9", ">=9.1,<10", False),              # ranges that do not
    (">2.18", "<=2.18", False),
    (">2.18", "<2.19", True),
    ("==13.1.0.3.*", ">=13.0.0.19", True),           # cuda-toolkit's wildcard pins
    ("==13.1.0.3.*", "==13.1.1.1", False),
    ("!=2.18.1,>=2.18.1", "<2.18.2", True),
    ("", "==1.0", True),
])
def test_specifier_sets_meet_as_the_resolver_asks(a, b, meet):
    assert dfmod._specifiers_meet(a, b) is meet and dfmod._specifiers_meet(b, a) is meet


def test_cuda_wheel_pins_hold_what_the_threads_quote():
    """The area's rows for the releases jax-ml/jax#21335 quotes (PyPI's Requires-Dist)."""
    pins = dfmod._wheel_pins()
    tf = dict(pins[("tensorflow", "and-cuda")])
    jax = dict(pins[("jax", "cuda12")])
    from packaging.version import Version
    assert tf[Version("2.15.0")]["nvidia-nccl-cu12"] == "==2.16.5"
    assert tf[Version("2.16.1")]["nvidia-nccl-cu12"] == "==2.19.3"
    assert jax[Version("0.4.23")]["nvidia-nccl-cu12"] == ">=2.18.3"
    # jax[cuda12] from 0.4.30 pins through jax-cuda12-plugin[with-cuda]; torch from 2.11 through cuda-toolkit[...]
    assert jax[Version("0.4.31")]["nvidia-cudnn-cu12"] == "<10.0,>=9.1"
    assert dict(pins[("torch", "")])[Version("2.11.0")]["nvidia-cublas"] == "==13.1.0.3.*"


def test_framework_pins_that_meet_or_a_resolver_that_can_backtrack_say_nothing():
    host = _host("550.54.15", RTX4090)
    base = "FROM python:3.10-slim\n"
    # TensorFlow 2.16.1's NCCL 2.19.3 is what JAX 0.4.23's >=2.18.3 admits (the maintainers' answer)
    assert _inline(base + 'RUN pip install "tensorflow[and-cuda]==2.16.1" "jax[cuda12]==0.4.23"\n', host) == []
    # one command, TensorFlow unpinned: pip takes a release whose pins meet JAX 0.4.23's
    assert _inline(base + 'RUN pip install "tensorflow[and-cuda]" "jax[cuda12]==0.4.23"\n', host) == []
    # jax[cuda12_local] pulls no CUDA wheel at all
    assert _inline(base + 'RUN pip install "tensorflow[and-cuda]==2.15.0" "jax[cuda12_local]==0.4.23"\n'
                          '', host) == []


def test_two_commands_judge_the_releases_each_takes():
    """The later pip install replaces the earlier's NCCL: pip only warns, the first framework then breaks."""
    host = _host("550.54.15", RTX4090)
    base = "FROM python:3.10-slim\n"
    found = _inline(base + 'RUN pip install "tensorflow[and-cuda]==2.15.0"\nRUN pip install "jax[cuda12]==0.4.23"\n',
                    host)
    assert _codes(found) == [("dockerfile.frameworks_conflict", "error")]
    assert "(line 2)" in found[0].title and "nvidia-nccl-cu12" in found[0].title
    assert "replaces nvidia-nccl-cu12" in found[0].detail
    assert found[0].fix.commands == ['RUN pip install "tensorflow[and-cuda]==2.17.1"']
    # torch 2.6.0 pins cuDNN 9.1.0.70; JAX 0.6.0 needs >=9.8: the fix is the newest JAX that admits 9.1
    found = _inline("FROM python:3.11-slim\nRUN pip install torch==2.6.0\nRUN pip install 'jax[cuda12]==0.6.0'\n", host)
    assert _codes(found) == [("dockerfile.frameworks_conflict", "error")] and "nvidia-cudnn-cu12" in found[0].title
    assert found[0].fix.commands == ['RUN pip install "jax[cuda12]==0.5.3"']
    # torch 2.1.0 and TensorFlow 2.15.0 pin different cuBLAS, NCCL and cuDNN: every clash is named
    found = _inline(base + 'RUN pip install torch==2.1.0 "tensorflow[and-cuda]==2.15.0"\n', host)
    assert _codes(found) == [("dockerfile.frameworks_conflict", "error")]
    assert "nvidia-nccl-cu12" in found[0].detail and "nvidia-cudnn-cu12" in found[0].detail
