"""Tool dispatch strategies: 8 calls in one model turn to tools that each sleep 100 ms.

Prints the wall time of the tool batch per strategy: AUTO (all read-only and
concurrency-safe) and PARALLEL should take about one sleep (target < 150 ms), SEQUENTIAL
about eight (~800 ms), and a mixed batch the safe subset at once, then the rest in order.

    python bench/dispatch.py [--sleep 0.1] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics

from adk_notebook import FunctionCall, FunctionTool, LlmAgent, ScriptedModel, ToolExecutionStrategy


def make_tool(name: str, sleep: float, *, safe: bool) -> FunctionTool:
    async def handler(ctx, args):
        await asyncio.sleep(sleep)
        return {"i": args["i"]}

    made = FunctionTool(name, f"Sleeps {sleep * 1000:.0f} ms.", handler)
    return made.with_read_only(safe).with_concurrency_safe(safe)


async def batch_seconds(strategy: ToolExecutionStrategy, calls: list[FunctionCall], tools: list[FunctionTool]) -> float:
    agent = LlmAgent(name="bench", model=ScriptedModel([calls, "done"]), tools=tools, tool_execution_strategy=strategy)
    started = finished = 0.0
    result = await agent.run_async("go", streaming=False)
    for event in result.events:  # the batch runs between the call event and the response event
        if event.function_calls():
            started = event.timestamp
        if event.function_responses():
            finished = event.timestamp
    assert result.text == "done" and len(result.events[2].function_responses()) == len(calls)
    return finished - started


async def main(sleep: float, rounds: int) -> None:
    safe = make_tool("lookup", sleep, safe=True)
    unsafe = make_tool("save", sleep, safe=False)
    all_safe = [FunctionCall("lookup", {"i": i}) for i in range(8)]
    mixed = [FunctionCall("lookup" if i % 2 == 0 else "save", {"i": i}) for i in range(8)]
    cases = [
        ("auto, 8 safe", ToolExecutionStrategy.AUTO, all_safe, f"< {1.5 * sleep * 1000:.0f} ms"),
        ("parallel, 8 safe", ToolExecutionStrategy.PARALLEL, all_safe, f"< {1.5 * sleep * 1000:.0f} ms"),
        ("sequential, 8 safe", ToolExecutionStrategy.SEQUENTIAL, all_safe, f"~ {8 * sleep * 1000:.0f} ms"),
        ("auto, 4 safe + 4 unsafe", ToolExecutionStrategy.AUTO, mixed, f"~ {5 * sleep * 1000:.0f} ms (1 + 4)"),
        ("parallel, 4 safe + 4 unsafe", ToolExecutionStrategy.PARALLEL, mixed, f"< {1.5 * sleep * 1000:.0f} ms"),
    ]
    print(f"8 tool calls in one turn, each sleeping {sleep * 1000:.0f} ms; median of {rounds} rounds\n")
    print(f"{'case':32} {'batch':>10}   expected")
    for label, strategy, calls, expected in cases:
        times = [await batch_seconds(strategy, calls, [safe, unsafe]) for _ in range(rounds)]
        print(f"{label:32} {statistics.median(times) * 1000:8.1f} ms   {expected}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sleep", type=float, default=0.1)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    asyncio.run(main(options.sleep, options.rounds))
