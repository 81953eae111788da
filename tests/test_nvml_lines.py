"""The lines the NVML child streams (envdoctor/host/nvml_worker.py): the usual ones are written from templates
(:func:`nvml_worker.ask_line`, :func:`nvml_worker.answer_line`, a pair's answer made with its text), and each
must be the very text ``json.dumps(doc, sort_keys=True)`` writes for its document, so that the parent reads the
same answers, and a hang or crash names the same call, as when every line was encoded whole.

The stream test asks the stand-in NVML (tests/fakenvml: no GPU runs here) through the real worker and
nvidia-ml-py; the answers are h100.json's GPU on an 8-GPU board whose pairs answer values and error codes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, Dict

from hypothesis import given
from hypothesis import strategies as st

from envdoctor.host import nvml_worker

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

codes = st.one_of(st.integers(min_value=-(2 ** 40), max_value=2 ** 40), st.none())
names = st.one_of(st.sampled_from(["NVML_ERROR_NOT_SUPPORTED", "NVML_ERROR_GPU_IS_LOST", "EXCEPTION"]), st.text())
statuses = st.one_of(
    st.builds(lambda v: {"value": v}, st.one_of(st.integers(), st.booleans(), st.none(), st.text())),
    st.builds(lambda c, e: {"code": c, "error": e}, codes, names),
    st.builds(lambda e, m: {"error": e, "message": m}, names, st.text()),
)
scalars = st.one_of(st.integers(), st.booleans(), st.none(), st.text(), st.floats(allow_nan=False,
                                                                                   allow_infinity=False))
plain = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                      st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                     max_leaves=8)
pairs = st.builds(lambda a, p: {"value": {"ancestor": a, "p2p": p}}, statuses,
                  st.fixed_dictionaries({n: statuses for n in ("read", "write", "nvlink", "atomics")}))
answers = st.one_of(statuses, pairs, st.builds(lambda v: {"value": v}, plain),
                    st.dictionaries(st.text(max_size=8), plain, max_size=3))


def whole(doc: Dict[str, Any]) -> str:
    return json.dumps(doc, sort_keys=True) + "\n"


@given(st.text())
def test_an_ask_line_is_the_encoded_document(key: str) -> None:
    assert nvml_worker.ask_line(key) == whole({"ask": key})


@given(st.text(), answers)
def test_an_answer_line_is_the_encoded_document_or_left_to_the_encoder(key: str, answer: Dict[str, Any]) -> None:
    line = nvml_worker.answer_line(key, answer)
    assert line is None or line == whole({"key": key, "answer": answer})


def test_the_usual_answers_have_their_line() -> None:
    """Those that make most of a many-GPU query's lines are written from templates, not left to the encoder."""
    for answer in ({"value": 31}, {"value": "GPU-1"}, {"value": True}, {"value": None},
                   {"code": 3, "error": "NVML_ERROR_NOT_SUPPORTED"},
                   {"value": {"ancestor": {"value": 40}, "p2p": {
                       "read": {"value": 0}, "write": {"value": 0}, "atomics": {"value": 1},
                       "nvlink": {"code": 3, "error": "NVML_ERROR_NOT_SUPPORTED"}}}}):
        assert nvml_worker.answer_line("pair.0.1", answer) == whole({"key": "pair.0.1", "answer": answer})


def test_every_streamed_line_is_its_encoded_document_and_reads_back_as_the_answers(fake_lib, tmp_path) -> None:
    from .fakenvml.build import fake_env, h100_board, write_answers

    doc = h100_board(8)
    for a in range(8):
        for b in range(a + 1, 8):
            if (a + b) % 3:
                doc["pair.%d.%d.ancestor" % (a, b)] = 10 * (1 + (a + b) % 5)
            for cap in ("read", "write", "nvlink", "atomics"):
                if (a * b + len(cap)) % 4:
                    doc["pair.%d.%d.p2p.%s" % (a, b, cap)] = (a + b) % 2
    path = write_answers(doc, str(tmp_path / "a.txt"))
    code = ("import json; from envdoctor.host import nvml_worker as w; lines = []; "
            "out = w.collect(lines.append); print(json.dumps({'out': out, 'lines': lines}))")
    r = subprocess.run([sys.executable, "-c", code], env=fake_env(fake_lib, path), capture_output=True, text=True,
                       cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout)
    out, lines = got["out"], got["lines"]
    # the usual lines come as text, an answer's with the next question's (one emit for both)
    texts = [line for piece in lines if isinstance(piece, str) for line in piece.splitlines(True)]
    assert len(texts) > 0.9 * sum(1 if isinstance(piece, dict) else piece.count("\n") for piece in lines)
    assert all(piece.endswith("\n") for piece in lines if isinstance(piece, str))
    values = {json.dumps(v, sort_keys=True) for k, v in out.items() if k.startswith("pair.")}
    assert len(values) > 10  # values and error codes, mixed
    for line in texts:
        assert line == whole(json.loads(line))
    # each emit but the last ends with a question (or is a document): an answer is out before the next NVML call
    assert all(isinstance(piece, dict) or piece.splitlines()[-1].startswith('{"ask": ') for piece in lines[:-1])
    stream = "".join(line if isinstance(line, str) else whole(line) for line in lines)
    data, asking, done = nvml_worker.parse_stream(stream)
    assert done and asking == "shutdown"  # nvmlShutdown: asked, never answered
    # collect's own copy marks "init" True after streaming the binding's answer to nvmlInit (None)
    assert data == dict(out, init=data["init"]) and data["init"] == {"value": None}


def _read_as_before(text: str) -> Any:
    """What :func:`nvml_worker.parse_stream` made of a stream before it parsed the stream as it is:
    its non-blank lines joined by commas into one array, each line by itself when
    that array is not one value a line."""
    data: Dict[str, Any] = {}
    asking = None
    done = False
    lines = text.splitlines()
    whole_lines = [line for line in lines if line.strip()]
    try:
        docs = json.loads("[%s]" % ",".join(whole_lines))
        if len(docs) != len(whole_lines):
            docs = None
    except ValueError:
        docs = None
    for line in docs if docs is not None else lines:
        if docs is not None:
            doc = line
        else:
            try:
                doc = json.loads(line)
            except ValueError:
                continue
        if not isinstance(doc, dict):
            continue
        if "ask" in doc:
            asking = str(doc["ask"])
        elif "key" in doc and isinstance(doc.get("answer"), dict):
            data[str(doc["key"])] = doc["answer"]
            if asking == doc["key"]:
                asking = None
        elif doc.get("done") is True:
            done = True
        elif "key" not in doc and "ask" not in doc and not data:
            return doc, None, True
    return data, asking, done


stream_lines = st.one_of(
    st.builds(lambda k: whole({"ask": k}), st.sampled_from(["init", "device.0.name", "pair.0.1", "shutdown"])),
    st.builds(lambda k, a: whole({"key": k, "answer": a}), st.sampled_from(["init", "device.0.name", "pair.0.1"]),
              answers),
    st.just(whole({"done": True})), st.just("\n"), st.just("  \n"), st.just("1, 2\n"), st.just("[1]\n"),
    st.just('{"init": {"error": "NVML_ERROR_LIBRARY_NOT_FOUND", "code": 12}}\n'),
    st.just('{"ask": "x", "a": [1\n'), st.just('2], "b": 1}, 5\n'),  # two lines one array takes as two values
    st.builds(lambda t: t, st.text(alphabet="{}\":,[] \r\n\x0b\x0c\x1c\x85\u2028abcdk0129", max_size=12)),
)


@given(st.lists(stream_lines, max_size=12), st.integers(min_value=0, max_value=40))
def test_a_stream_is_read_as_line_by_line_however_it_was_cut(lines: Any, cut: int) -> None:
    """Whole streams, streams cut off mid-line (a crash, the deadline), with blank lines, other line breaks, two
    values on a line, garbage: read as they were before."""
    text = "".join(lines)
    for t in (text, text[:len(text) - cut] if cut else text):
        assert nvml_worker.parse_stream(t) == _read_as_before(t)
