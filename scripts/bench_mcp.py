#!/usr/bin/env python3
"""How fast ``envdoctor mcp`` answers an agent: ``tools/list`` (in process, and over stdio from a cold start) and a
``diagnose`` of a captured machine through MCP against the same replay without it (the adapter's overhead, a ratio).

    python scripts/bench_mcp.py [--runs 20]

Needs the mcp extra (Python 3.10+). Prints numbers; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
SNAPSHOT = os.path.join(ROOT, "tests", "machines", "centosstream9-8xh100", "snapshot.json")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    runs = parser.parse_args().runs

    import anyio
    from mcp import Client, StdioServerParameters

    from envdoctor.host.snapshot import SnapshotHost, load_snapshot
    from envdoctor.mcp.server import build
    from envdoctor.mcp.tools import Settings
    from envdoctor.report import diagnose

    server = build(Settings(allow_paths=[os.path.dirname(SNAPSHOT)]))

    async def in_process() -> tuple:
        lists, calls = [], []
        async with Client(server) as c:
            for _ in range(runs):
                t = time.perf_counter()
                await c.list_tools()
                lists.append(time.perf_counter() - t)
                t = time.perf_counter()
                await c.call_tool("diagnose", {"snapshot": SNAPSHOT})
                calls.append(time.perf_counter() - t)
        return lists, calls

    lists, calls = anyio.run(in_process)
    direct = []
    for _ in range(runs):
        t = time.perf_counter()
        diagnose(SnapshotHost(load_snapshot(SNAPSHOT), "x")).to_dict()
        direct.append(time.perf_counter() - t)

    async def cold() -> float:
        t = time.perf_counter()
        params = StdioServerParameters(command=sys.executable, args=["-m", "envdoctor", "mcp"])
        async with Client(params) as c:
            await c.list_tools()
        return time.perf_counter() - t

    starts = [anyio.run(cold) for _ in range(3)]
    print("tools/list in process:              median %.2f ms, worst %.2f ms (%d runs)"
          % (statistics.median(lists) * 1e3, max(lists) * 1e3, runs))
    print("start `envdoctor mcp` + tools/list:  median %.0f ms (stdio, 3 runs)" % (statistics.median(starts) * 1e3))
    print("diagnose of an 8-GPU snapshot:       %.0f ms through MCP, %.0f ms direct: %.2fx"
          % (statistics.median(calls) * 1e3, statistics.median(direct) * 1e3,
             statistics.median(calls) / statistics.median(direct)))


if __name__ == "__main__":
    main()
