"""envdoctor/versions.py: the one home for reading versions (over packaging). A table of the spellings the
machine and the matrix produce, garbage included: garbage is None, never an exception."""

from __future__ import annotations

import pytest

from envdoctor import versions


@pytest.mark.parametrize("text,expected", [
    ("535.154.05", "535.154.5"), (" 12.4.131\n", "12.4.131"), ("v12.4", "12.4"), ("2.4.0+cu121", "2.4.0+cu121"),
    ("2.8.0.dev20250327+cu126", "2.8.0.dev20250327+cu126"), (12, "12"), ("", None), (None, None), (True, None),
    ("garbage", None), ("\x1b[31m12.4", None), ([12, 4], None),
])
def test_parse(text, expected):
    v = versions.parse(text)
    assert (str(v) if v is not None else None) == expected


@pytest.mark.parametrize("fn,text,expected", [
    (versions.release, "12.4.131", "12.4"), (versions.release, "12", "12.0"), (versions.release, "x", None),
    (versions.major_minor, "12.4.1", (12, 4)), (versions.major_minor, "12.x", (12, None)),
    (versions.major_minor, "12", (12, None)), (versions.major_minor, None, None),
    (versions.major, "535.154.05", 535), (versions.branch, "570.124.06", "570"), (versions.branch, "", None),
    (versions.pip_pin, "2.7", "==2.7.*"), (versions.pip_pin, "1.18.1", "==1.18.1"),
    (versions.digits, "12.1", "121"), (versions.digits, "12", None),
])
def test_helpers(fn, text, expected):
    assert fn(text) == expected


def test_the_matrix_still_refuses_a_bare_number():
    """Matrix tables spell versions as strings (envdoctor/matrix/FRAMEWORKS.md): 12.1 is a format error."""
    from envdoctor.matrix import parse_version

    assert parse_version(12.1) is None and str(parse_version("12.1")) == "12.1"


def test_cuda_of_tag_reads_pytorch_style_build_tags() -> None:
    from envdoctor.versions import cuda_of_tag, digits

    assert cuda_of_tag("cu116") == "11.6" and cuda_of_tag("cu121") == "12.1" and cuda_of_tag("cu92") == "9.2"
    assert [cuda_of_tag(t) for t in ("cpu", "rocm6.0", "", None, "cu1", "xcu121")] == [None] * 6
    assert digits(cuda_of_tag("cu128")) == "128"


def test_cuda_tag_spells_a_release_as_pytorch_wheels_do_and_round_trips() -> None:
    from envdoctor.versions import cuda_of_tag, cuda_tag

    assert cuda_tag("12.1") == "cu121" and cuda_tag("12.4.131") == "cu124" and cuda_tag("9.2") == "cu92"
    assert [cuda_tag(t) for t in ("12", "", None, "cpu")] == [None] * 4
    assert all(cuda_tag(cuda_of_tag(t)) == t for t in ("cu92", "cu118", "cu121", "cu130"))


def test_cu_wheel_names_nvidia_s_wheel_for_a_cuda_major_and_reads_it_back() -> None:
    from envdoctor.versions import cu_wheel, cuda_of_wheel

    assert cu_wheel("nvidia-cudnn", "12") == cu_wheel("nvidia-cudnn", "12.4") == cu_wheel("nvidia-cudnn", 12) \
        == "nvidia-cudnn-cu12"
    assert cuda_of_wheel("nvidia-nccl-cu12", "nvidia-nccl") == "12" and cuda_of_wheel(cu_wheel("nvidia-nccl", "11.8"),
                                                                                         "nvidia-nccl") == "11"
    assert [cuda_of_wheel(n, "nvidia-nccl") for n in ("nvidia-nccl", "nvidia-nccl-cu", "nvidia-nccl-cu12x",
                                                       "nvidia-cudnn-cu12", None)] == [None] * 5
