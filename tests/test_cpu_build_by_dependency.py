"""``framework.cpu_only_build`` for a CPU-only package another package requires by name (ONNX Runtime).

ONNX Runtime's CPU and CUDA builds are separate PyPI projects (onnxruntime, onnxruntime-gpu; the GPU package holds
the CPU execution provider too: https://onnxruntime.ai/docs/install/). A package that requires ``onnxruntime`` chose
the CPU build (faster-whisper runs its Silero VAD model with ``providers=["CPUExecutionProvider"]``): pulled in only
as its dependency, the CPU package shows no wish to run ONNX Runtime on the GPU, and is information; installed by
itself next to a CUDA torch, it is the warning.

Machines: two corpus cases rebuilt from public reports (their snapshots, replayed): docker-whisperX (torch 2.3.1
cu121, faster-whisper 1.1.0 requiring onnxruntime 1.22.0) and microWakeWord-Trainer (onnxruntime 1.23.0 installed by
itself beside torch 2.7.0 cu128, its CUDA provider wanted).
"""

from __future__ import annotations

from typing import Any, Dict, List

from tests.conftest import corpus_snapshot, snapshot_findings

WHISPERX = "healthy-b26-container-docker-whisperx-torch231-cu121-cudnn8-wheels-with-ctranslate2-440-rtx3090-driver550"
TRAINER = "b3-container-onnxruntime-cpu-wheel-beside-cuda-torch-rtx4060ti"
FASTER_WHISPER = "/venv/lib/python3.11/site-packages/faster_whisper-1.1.0.dist-info/METADATA"


def _cpu_build(doc: Dict[str, Any]) -> List[Any]:
    return [f for f in snapshot_findings(doc) if f.code == "framework.cpu_only_build"]


def test_an_onnxruntime_a_package_requires_by_name_is_information_naming_that_package() -> None:
    found = _cpu_build(corpus_snapshot(WHISPERX))
    assert [f.severity for f in found] == ["info"]
    assert "faster-whisper requires it by name" in found[0].title
    assert "onnxruntime-gpu" in found[0].detail


def test_the_same_onnxruntime_without_the_package_requiring_it_is_the_warning() -> None:
    doc = corpus_snapshot(WHISPERX)
    meta = doc["files"][FASTER_WHISPER]
    meta["text"] = meta["text"].replace("Requires-Dist: onnxruntime <2,>=1.14\n", "")
    found = _cpu_build(doc)
    assert [f.severity for f in found] == ["warning"]
    assert "onnxruntime 1.22.0 is a CPU-only build" in found[0].title
    assert found[0].fix.commands[-1] == "pip install onnxruntime-gpu==1.22.0"


def test_a_requirement_only_an_extra_asks_for_does_not_count() -> None:
    doc = corpus_snapshot(WHISPERX)
    meta = doc["files"][FASTER_WHISPER]
    meta["text"] = meta["text"].replace("Requires-Dist: onnxruntime <2,>=1.14\n",
                                        "Requires-Dist: onnxruntime <2,>=1.14 ; extra == 'vad'\n")
    assert [f.severity for f in _cpu_build(doc)] == ["warning"]


def test_an_onnxruntime_installed_by_itself_beside_a_cuda_torch_is_the_warning() -> None:
    found = _cpu_build(corpus_snapshot(TRAINER))
    assert [f.severity for f in found] == ["warning"]
    assert "onnxruntime-gpu" in " ".join(found[0].fix.commands)
