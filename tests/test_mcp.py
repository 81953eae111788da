"""``envdoctor mcp`` through the official MCP SDK's own client (in process, and once over stdio): the tools it lists
and how they are annotated, every captured machine giving through MCP the findings ``diagnose --format json`` gives,
answers that match their schemas, refusals as tool errors, the deadline, the consent a measuring tool needs, and
generated calls that never reach the executor. Needs the ``mcp`` extra (Python 3.10 or later)."""

from __future__ import annotations

import glob
import gzip
import json
import os
import shutil
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

import pytest

if sys.version_info < (3, 10):
    pytest.skip("the MCP SDK (envdoctor[mcp]) needs Python 3.10 or later; the tools' rules are tested without it "
                "in test_mcp_tools.py", allow_module_level=True)
mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install 'envdoctor[mcp]')")

import anyio  # noqa: E402
from click.testing import CliRunner  # noqa: E402
from mcp import Client  # noqa: E402

from envdoctor.cli import cli  # noqa: E402
from envdoctor.mcp.server import build, load_schema  # noqa: E402
from envdoctor.mcp.tools import Settings, Tool  # noqa: E402
from tests.test_mcp_tools import FIT_CONFIGS, GENERATED_MACHINE, _calls  # noqa: E402  (generated calls)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MACHINES = os.path.join(HERE, "machines")
A100 = os.path.join(MACHINES, "pipwheels-ubuntu2204-a100", "snapshot.json")


def replaying(path: str) -> Any:
    from envdoctor.host.snapshot import SnapshotHost, load_snapshot

    doc = load_snapshot(path)
    return lambda budget: (SnapshotHost(json.loads(json.dumps(doc)), "this machine"), None)


def run(server: Any, body: Any, **client: Any) -> Any:
    """Run ``body(client)`` against ``server`` with the SDK's in-process client."""
    async def main() -> Any:
        async with Client(server, **client) as c:
            return await body(c)
    return anyio.run(main)


def captured_machines(tmp: str) -> List[Tuple[str, str]]:
    """(name, snapshot path) of every captured machine: tests/machines, tests/live (gzip, unpacked into ``tmp``),
    tests/corpus."""
    out = []
    for path in sorted(glob.glob(os.path.join(MACHINES, "*", "snapshot.json"))):
        out.append(("machines/" + os.path.basename(os.path.dirname(path)), path))
    for path in sorted(glob.glob(os.path.join(HERE, "live", "*", "snapshot.json.gz"))):
        name = os.path.basename(os.path.dirname(path))
        dest = os.path.join(tmp, name + ".json")
        with gzip.open(path, "rb") as src, open(dest, "wb") as dst:
            shutil.copyfileobj(src, dst)
        out.append(("live/" + name, dest))
    for path in sorted(glob.glob(os.path.join(HERE, "corpus", "*", "snapshot.json"))):
        out.append(("corpus/" + os.path.basename(os.path.dirname(path)), path))
    return out


# --------------------------------------------------------------------------- tools/list


def test_tools_list_announces_read_only_tools_with_their_commands_schemas() -> None:
    server = build(Settings(machine=replaying(A100)))
    timings: List[float] = []

    async def body(c: Any) -> Any:
        for _ in range(5):
            started = time.monotonic()
            listed = await c.list_tools()
            timings.append(time.monotonic() - started)
        return listed

    listed = run(server, body)
    print("tools/list: %.1f ms at worst of 5 (in process)" % (max(timings) * 1000))
    assert max(timings) < 5.0  # a generous bound: it answers from a list made at start-up
    by_name = {t.name: t for t in listed.tools}
    assert list(by_name) == ["diagnose", "topo", "explain", "triage", "advise", "matrix", "check_policy",
                             "dockerfile_lint", "install_plan", "fit"]
    outputs = {"diagnose": "report", "topo": "topology", "check_policy": "report", "dockerfile_lint": "dockerfile",
               "install_plan": "plan"}
    for name, t in by_name.items():
        a = t.annotations
        assert (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint) == (True, False, True,
                                                                                                 False), name
        assert t.output_schema == load_schema(outputs.get(name, name)), name
        assert t.input_schema["type"] == "object" and t.description


def test_bench_is_offered_only_with_allow_bench_and_not_as_idempotent() -> None:
    listed = run(build(Settings(machine=replaying(A100))), lambda c: c.list_tools())
    assert "bench" not in {t.name for t in listed.tools}
    listed = run(build(Settings(allow_bench=True, machine=replaying(A100))), lambda c: c.list_tools())
    bench = next(t for t in listed.tools if t.name == "bench")
    a = bench.annotations
    assert (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint) == (True, False, False, False)
    assert bench.output_schema == load_schema("bench")


# --------------------------------------------------------------------------- parity with diagnose --format json


def _findings_of(doc: Dict[str, Any]) -> List[Dict[str, Any]]:
    return doc["findings"]


#: test_every_captured_machine_gives_the_same_findings_through_mcp's shares of the machines (one case each, so that
#: the test workers share them)
SHARES = 8


@pytest.mark.parametrize("share", range(SHARES))
def test_every_captured_machine_gives_the_same_findings_through_mcp(tmp_path: Any, share: int) -> None:
    """Every captured machine (tests/machines, tests/live, tests/corpus), replayed through ``diagnose`` over MCP and
    through ``envdoctor diagnose --snapshot FILE --format json --redact-ids``: the same findings, field for field,
    once the command's output has the server's redaction applied (it hides the home, user and host names of a
    snapshot that kept them; the command keeps what the snapshot holds). Each case takes every SHARES-th machine."""
    every = captured_machines(str(tmp_path))
    assert len(every) > 100
    machines = every[share::SHARES]
    server = build(Settings(allow_paths=[HERE, str(tmp_path)], machine=replaying(A100)))
    runner = CliRunner()
    compared = 0

    async def body(c: Any) -> None:
        nonlocal compared
        from envdoctor.host.privacy import scrubber_for
        from envdoctor.host.snapshot import SnapshotHost, load_snapshot

        for name, path in machines:
            result = await c.call_tool("diagnose", {"snapshot": path})
            assert not result.is_error, (name, result.content[0].text)
            cli_run = runner.invoke(cli, ["diagnose", "--snapshot", path, "--format", "json", "--redact-ids"])
            assert cli_run.exit_code in (0, 1), (name, cli_run.output[-500:])
            expected = json.loads(cli_run.stdout)
            scrub = scrubber_for(SnapshotHost(load_snapshot(path), name, validated=True), False, True)
            assert _findings_of(result.structured_content) == scrub(_findings_of(expected)), name
            assert result.structured_content["summary"] == expected["summary"], name
            compared += 1

    run(server, body)
    assert compared == len(machines)


def test_topo_gives_what_envdoctor_topo_gives_on_every_captured_machine() -> None:
    """``topo`` over MCP against ``envdoctor topo --snapshot FILE --format json --redact-ids`` (every machine of
    tests/machines; two of them are 8-GPU boards with 28 pairs each)."""
    server = build(Settings(allow_paths=[MACHINES], machine=replaying(A100)))
    runner = CliRunner()
    pairs = 0

    async def body(c: Any) -> None:
        nonlocal pairs
        for path in sorted(glob.glob(os.path.join(MACHINES, "*", "snapshot.json"))):
            result = await c.call_tool("topo", {"snapshot": path})
            assert not result.is_error, (path, result.content[0].text)
            cli_run = runner.invoke(cli, ["topo", "--snapshot", path, "--format", "json", "--redact-ids"])
            expected = json.loads(cli_run.stdout)
            got = result.structured_content
            assert (got["topology"], got["findings"], got["summary"]) == (
                expected["topology"], expected["findings"], expected["summary"]), path
            pairs += len(got["topology"].get("pairs") or [])

    run(server, body)
    assert pairs >= 56


# --------------------------------------------------------------------------- answers and refusals


def test_answers_are_structured_and_their_text_is_the_same_json() -> None:
    server = build(Settings(allow_paths=[MACHINES], machine=replaying(A100)))

    async def body(c: Any) -> None:
        for name, args in (("diagnose", {"layers": ["driver", "gpu"]}), ("explain", {"code": "gpu.lost"}),
                           ("triage", {"message": "no CUDA-capable device is detected"}),
                           ("matrix", {"area": "torch", "value": "2.4"}), ("advise", {"frameworks": ["jax"]}),
                           ("install_plan", {"component": "container-toolkit", "os": "rhel9"})):
            result = await c.call_tool(name, args)
            assert not result.is_error, (name, result.content[0].text)
            head, _, body_text = result.content[0].text.partition("\n")
            assert head.startswith("envdoctor %s" % name)
            assert json.loads(body_text) == result.structured_content

    run(server, body)


def test_refusals_are_tool_errors_in_one_line() -> None:
    server = build(Settings(allow_paths=[MACHINES], machine=replaying(A100)))

    async def body(c: Any) -> None:
        for name, args, why in (
                ("diagnose", {"snapshot": "/etc/passwd"}, "outside the directories this server may read"),
                ("explain", {"code": "driver.library_mismach"}, "Did you mean: driver.library_mismatch"),
                ("install_plan", {"component": "cuda", "method": "redist"}, "does not download"),
                ("install", {"component": "cuda"}, 'no tool "install"'),
                ("matrix", {"area": "cuda", "value": "99.9"}, "is not in the matrix")):
            result = await c.call_tool(name, args)
            assert result.is_error, name
            text = result.content[0].text
            assert why in text and "\n" not in text and "Traceback" not in text, text

    run(server, body)


def test_a_call_past_the_deadline_is_a_tool_error_and_the_server_goes_on() -> None:
    # A tool that takes longer than the deadline: a stand-in for an examination that hangs (a wedged GPU answers
    # NVML late; replaying one here would need a machine that hangs, which the host seam does not model).
    slow = Tool("slow", "Slow", "Sleeps.", {"type": "object", "properties": {}, "additionalProperties": False},
                "explain", lambda call, args: time.sleep(3) or {})
    server = build(Settings(deadline=1.0, machine=replaying(A100)), extra=[slow])

    async def body(c: Any) -> Any:
        started = time.monotonic()
        late = await c.call_tool("slow", {})
        took = time.monotonic() - started
        after = await c.call_tool("explain", {"code": "gpu.lost"})
        return late, took, after

    late, took, after = run(server, body)
    assert late.is_error and "did not finish within 1 seconds" in late.content[0].text
    assert took < 2.9
    assert not after.is_error


# --------------------------------------------------------------------------- consent (bench)


def _gated(ran: List[int]) -> Tool:
    """A tool that needs --allow-bench and the user's consent, as bench does, that records whether it ran: a
    stand-in, because the real bench needs a GPU and a CUDA driver, which this test machine has not."""
    return Tool("measure", "Measure", "Measures.", {"type": "object", "properties": {}, "additionalProperties": False},
                "explain", lambda call, args: ran.append(1) or call.tools.by_name["explain"].run(call, {
                    "code": "gpu.lost"}), consent="Run GPU copies for about 10 seconds?", needs="allow_bench")


#: The two ways a server asks the user: "legacy" negotiates a handshake revision (2025-11-25), where the server sends
#: its own elicitation request mid-call; "auto", the SDK client's default, negotiates 2026-07-28, where the call
#: answers InputRequiredResult with the question and the client calls again with the user's answer.
ERAS = ["legacy", "auto"]


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("answer, runs", [("accept", True), ("decline", False), ("cancel", False), (None, False)])
def test_a_measuring_tool_runs_only_after_the_user_accepts(answer: Optional[str], runs: bool, mode: str) -> None:
    ran: List[int] = []
    server = build(Settings(allow_bench=True, machine=replaying(A100)), extra=[_gated(ran)])
    asked: List[str] = []

    async def elicit(context: Any, params: Any) -> Any:
        asked.append(params.message)
        content = {"run": True} if answer == "accept" else None
        return mcp.types.ElicitResult(action=answer, content=content)

    async def body(c: Any) -> Any:
        tools = await c.list_tools()
        gated = next(t for t in tools.tools if t.name == "measure")
        assert gated.annotations.idempotent_hint is False and gated.annotations.read_only_hint is True
        return await c.call_tool("measure", {})

    result = run(server, body, mode=mode, **({"elicitation_callback": elicit} if answer else {}))
    assert result.is_error is (not runs)
    assert bool(ran) is runs
    if answer:
        assert asked == ["Run GPU copies for about 10 seconds?"]
    else:
        assert "cannot ask the user" in result.content[0].text


def test_an_answer_counts_only_for_the_call_it_was_asked_about() -> None:
    """2026-07-28: the question comes back as InputRequiredResult; an "accept" sent with another call's arguments,
    or with a request_state the server did not give, runs nothing."""
    ran: List[int] = []
    gated = _gated(ran)
    gated = gated._replace(input_schema={"type": "object", "properties": {"n": {"type": "integer", "minimum": 0,
                                                                                 "maximum": 9}},
                                         "additionalProperties": False})
    server = build(Settings(allow_bench=True, machine=replaying(A100)), extra=[gated])

    async def elicit(context: Any, params: Any) -> Any:
        raise AssertionError("answered by hand below")

    yes = {"consent": mcp.types.ElicitResult(action="accept", content={"run": True})}

    async def body(c: Any) -> Any:
        asked = await c.session.call_tool("measure", {"n": 1}, allow_input_required=True)
        assert isinstance(asked, mcp.types.InputRequiredResult)
        question = asked.input_requests["consent"]
        assert question.params.message == "Run GPU copies for about 10 seconds?"
        other = await c.session.call_tool("measure", {"n": 2}, input_responses=yes, request_state=asked.request_state)
        forged = await c.session.call_tool("measure", {"n": 1}, input_responses=yes, request_state="0" * 64)
        unasked = await c.session.call_tool("measure", {"n": 1}, input_responses=yes, allow_input_required=True)
        assert not ran
        agreed = await c.session.call_tool("measure", {"n": 1}, input_responses=yes,
                                           request_state=asked.request_state)
        return other, forged, unasked, agreed

    other, forged, unasked, agreed = run(server, body, elicitation_callback=elicit)
    assert other.is_error and "not to this call's question" in other.content[0].text
    assert forged.is_error and "not to this call's question" in forged.content[0].text
    assert isinstance(unasked, mcp.types.InputRequiredResult)  # an answer without the question: asked again
    assert not agreed.is_error and ran == [1]


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("answer", ["accept", "decline"])
def test_bench_asks_first_then_runs_envdoctor_bench(answer: str, mode: str) -> None:
    """The real bench tool on a captured machine without an NVIDIA GPU (a Debian 12 server): declined, nothing
    runs; accepted, bench itself answers, refusing for want of a GPU as `envdoctor bench` does."""
    server = build(Settings(allow_bench=True, machine=replaying(os.path.join(MACHINES, "debian12-nogpu",
                                                                             "snapshot.json"))))
    asked: List[str] = []

    async def elicit(context: Any, params: Any) -> Any:
        asked.append(params.message)
        return mcp.types.ElicitResult(action=answer, content={"run": True} if answer == "accept" else None)

    result = run(server, lambda c: c.call_tool("bench", {"tests": ["h2d"]}), mode=mode, elicitation_callback=elicit)
    assert asked and "envdoctor bench" in asked[0]
    assert result.is_error
    text = result.content[0].text
    if answer == "accept":
        assert text.startswith("envdoctor bench: ") and "did not run" not in text and "bug" not in text, text
    else:
        assert "did not run: the user did not agree" in text


@pytest.mark.parametrize("mode", ERAS)
def test_envdoctor_mcp_allow_bench_measures_after_the_user_agrees(tmp_path: Any, mode: str) -> None:
    """The real command, `envdoctor mcp --allow-bench`, started over stdio as an agent starts it, on a machine
    whose GPU is the suite's stand-ins: libcuda.so.1 (tests/fakecuda: copies at the rates in its file) and NVML
    (tests/fakenvml: an A100 PCIe on a PCIe 4.0 x16 link), as tests/test_bench.py runs `envdoctor bench`. No GPU
    runs here. Declined, the copies do not run; accepted, the answer is `envdoctor bench --format json`'s."""
    from tests.fakecuda.build import build as build_cuda
    from tests.fakenvml.build import build as build_nvml
    from tests.fakenvml.build import compiler
    from tests.test_bench import a100_pcie, cuda_config, environ

    if compiler() is None:
        pytest.skip("no C compiler to build the stand-in libraries")
    libs = str(tmp_path / "libs")
    os.makedirs(libs)
    build_cuda(libs)
    build_nvml(libs)
    env = environ(libs, tmp_path, a100_pcie(), cuda_config(rate={"h2d": {"pinned": 25.9, "pageable": 9.8},
                                                                  "d2h": {"pinned": 26.3}, "d2d": 1600}))
    params = mcp.StdioServerParameters(command=sys.executable, args=["-m", "envdoctor", "mcp", "--allow-bench"],
                                       env={k: env[k] for k in env if k.startswith(("FAKE_", "LD_LIBRARY_PATH",
                                                                                    "PYTHONPATH"))}, cwd=ROOT)
    answers = ["decline", "accept"]
    asked: List[str] = []

    async def elicit(context: Any, p: Any) -> Any:
        asked.append(p.message)
        action = answers.pop(0)
        return mcp.types.ElicitResult(action=action, content={"run": True} if action == "accept" else None)

    async def body(c: Any) -> Any:
        declined = await c.call_tool("bench", {"size_mib": 16})
        accepted = await c.call_tool("bench", {"size_mib": 16})
        return declined, accepted

    declined, accepted = run(params, body, mode=mode, elicitation_callback=elicit)
    assert len(asked) == 2 and "envdoctor bench" in asked[0]
    assert declined.is_error and "did not run: the user did not agree" in declined.content[0].text
    assert not accepted.is_error, accepted.content[0].text
    doc = accepted.structured_content
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(doc, load_schema("bench"))
    facts = {f["key"]: f["value"] for f in doc["probes"][0]["facts"]}
    assert facts["bench.h2d_ratio"] == 0.822 and facts["bench.d2d_ratio"] == 0.827
    assert doc["summary"] == {"error": 0, "warning": 0, "info": 0}
    assert accepted.content[0].text.startswith("envdoctor bench: 0 errors, 0 warnings, 0 info.")


# --------------------------------------------------------------------------- the executor, through the SDK


def test_generated_calls_through_the_sdk_never_reach_the_executor(no_executor: List[str]) -> None:
    from hypothesis import HealthCheck, given, settings

    from envdoctor.mcp.tools import Tools

    allowed = [MACHINES, FIT_CONFIGS]
    server = build(Settings(allow_paths=allowed, machine=replaying(GENERATED_MACHINE)))
    calls: List[Any] = []

    @settings(max_examples=400, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(_calls(Tools(Settings(allow_paths=allowed))))
    def collect(call: Any) -> None:
        calls.append(call)

    collect()
    answered: Dict[str, int] = {}

    async def body(c: Any) -> None:
        for name, args in calls:
            result = await c.call_tool(name, args if isinstance(args, dict) else {})
            if result.is_error:
                assert "a bug in envdoctor" not in result.content[0].text, (name, args, result.content[0].text)
            else:
                answered[name] = answered.get(name, 0) + 1

    run(server, body)
    assert no_executor == []
    assert set(answered) == {t.name for t in Tools(Settings()).list()}, answered


# --------------------------------------------------------------------------- the command


def test_envdoctor_mcp_over_stdio(tmp_path: Any) -> None:
    """The real command, started by the SDK's stdio client as an agent starts it."""
    from mcp import StdioServerParameters

    shutil.copy(os.path.join(MACHINES, "debian12-nogpu", "snapshot.json"), tmp_path / "node.json")
    params = StdioServerParameters(command=sys.executable, args=["-m", "envdoctor", "mcp", "--allow-path",
                                                                 str(tmp_path)])

    async def body(c: Any) -> Any:
        listed = await c.list_tools()
        result = await c.call_tool("diagnose", {"snapshot": str(tmp_path / "node.json"), "layers": ["gpu"]})
        return listed, result

    listed, result = run(params, body)
    assert len(listed.tools) == 10
    assert not result.is_error and result.structured_content["layers"]["examined"] == ["gpu"]
    assert [f["code"] for f in result.structured_content["findings"]] == ["gpu.none"]
