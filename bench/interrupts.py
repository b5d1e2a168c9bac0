"""Interrupt latency: from the interrupt to the end of the cell, in a real Jupyter kernel.

For each way a run is started and each kind of work in progress (see tests/interrupt_scenarios.py,
which the reliability tests share), the kernel is interrupted with `km.interrupt_kernel()` (a
script gets SIGINT) while the run is under way, `--rounds` times, and the time from the interrupt
to the end of the cell (the script's exit) is measured. Every round is also checked the way the
tests check it: no tool call starts after the interrupt, every stored call is answered once, and
the next message on the session gets its answer. Prints the median, min and max per scenario;
the target is a median under 1 s everywhere. `--load N` runs N processes spinning on the CPU
meanwhile, as on a busy machine. Usage:

    python bench/interrupts.py [--rounds 5] [--only chat] [--load 2]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from interrupt_scenarios import SCENARIOS, cpu_load, interrupt

TARGET = 1.0  # seconds
WHAT = {
    "sync": "a sync tool (on its worker thread)",
    "ticks": "a sync tool with a side effect every 50 ms",
    "async": "an async tool awaiting",
    "blocking": "an async tool that blocks the loop (time.sleep)",
    "stream": "the model streaming text (loopback SSE)",
}
WHERE = {
    "chat": "%%chat (awaited on the kernel loop)",
    "fallback": "%%chat, worker-thread fallback",
    "agent.run": "agent.run() in a cell",
    "script": "agent.run() in python script.py, SIGINT",
}


async def main(rounds: int, only: str | None, load: int) -> int:
    rows = []
    with tempfile.TemporaryDirectory() as folder, cpu_load(load):
        for scenario in SCENARIOS:
            if only and only not in scenario.name:
                continue
            outcomes = await interrupt(scenario, rounds, Path(folder))
            latencies = [o.latency for o in outcomes]
            failed = sum(1 for o in outcomes if o.check(scenario, limit=float("inf")))
            rows.append(
                (
                    WHERE[scenario.path],
                    WHAT[scenario.work],
                    statistics.median(latencies),
                    min(latencies),
                    max(latencies),
                    len(outcomes),
                    failed,
                )
            )
            print(f"  measured {scenario.name}: {', '.join(f'{x:.3f}' for x in latencies)}", file=sys.stderr)
    width = max(len(r[0]) for r in rows), max(len(r[1]) for r in rows)
    busy = f", {load} processes spinning on the CPU" if load else ""
    print(
        f"\ninterrupt -> cell ended, seconds ({rounds} rounds each, real kernel{busy}; target: median < {TARGET:g} s)"
    )
    print(f"{'where':<{width[0]}}  {'work in progress':<{width[1]}}  median     min     max  rounds  not clean")
    for where, what, median, low, high, n, failed in rows:
        print(f"{where:<{width[0]}}  {what:<{width[1]}}  {median:6.3f}  {low:6.3f}  {high:6.3f}  {n:6d}  {failed:9d}")
    slow = [r for r in rows if r[2] >= TARGET or r[6]]
    print(
        "\nall under target, every run ended cleanly"
        if not slow
        else f"\n{len(slow)} scenario(s) over target or not clean"
    )
    return 1 if slow else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", help="run the scenarios whose name contains this (e.g. chat, script, stream)")
    parser.add_argument("--load", type=int, default=0, help="processes spinning on the CPU meanwhile")
    args = parser.parse_args()
    raise SystemExit(asyncio.run(main(args.rounds, args.only, args.load)))
