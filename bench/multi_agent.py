"""Multi-agent overhead: adk_notebook's SequentialAgent and ParallelAgent against google-adk's, offline.

One invocation: a fresh in-memory session, the user says "go", and a workflow of 10 LlmAgents
on a scripted model (one text answer each, no streaming) runs: one after another
(SequentialAgent) or as 10 concurrent branches (ParallelAgent). Reported: time per invocation,
and per agent hop (that time / 10). google-adk runs in its throwaway venv under bench/.venvs/
(bench/peers/venvs.py); ours in this interpreter. Then adk_notebook's MapAgent alone: its time
per item over 100 and 400 items, which stays flat when a map is linear in its items. Usage:

    python bench/multi_agent.py [--n 200] [--skip-peers]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
from typing import TYPE_CHECKING, Any

from peers.timing import ROUNDS, per_invocation
from peers.venvs import Peer, log, run_peer

if TYPE_CHECKING:
    from adk_notebook import LlmRequest

AGENTS = 10
SHAPES = ("sequential", "parallel")
MAP_ITEMS = (100, 400)
PEER = Peer("google-adk", "google-adk", "google.adk.runners", "google_adk_multi.py")


def ours(shape: str, n: int) -> tuple[str, str, float]:
    """Time adk_notebook's workflow in this interpreter, through its public API."""
    import adk_notebook
    from adk_notebook import (
        Content,
        FunctionModel,
        InMemorySessionService,
        LlmAgent,
        ParallelAgent,
        RunConfig,
        Runner,
        SequentialAgent,
    )

    workers = [
        LlmAgent(
            name=f"a{i}",
            model=FunctionModel(lambda request: "done"),
            instruction="Work.",
        )
        for i in range(AGENTS)
    ]
    root = (SequentialAgent if shape == "sequential" else ParallelAgent)(name="root", sub_agents=workers)
    sessions = InMemorySessionService()
    runner = Runner(
        app_name="bench",
        agent=root,
        session_service=sessions,
        run_config=RunConfig(streaming=False),
    )
    message = Content.user("go")

    async def invoke() -> None:
        session = await sessions.create(app_name="bench", user_id="u1")
        authors = set()
        async for event in runner.run(user_id="u1", session_id=session.id, content=message):
            if event.is_final_response() and event.author != "user":
                authors.add(event.author)
        assert len(authors) == AGENTS, authors

    log(f"[adk_notebook] {shape}: timing {ROUNDS} rounds of {n} invocations...")
    return (
        f"adk_notebook {shape}",
        adk_notebook.__version__,
        asyncio.run(per_invocation(invoke, n)),
    )


def map_per_item(items: int) -> float:
    """Median over ROUNDS runs of seconds per item of one MapAgent run over `items` items, 8 at a
    time, each item a tool call and then an answer (two model calls, the second after its
    siblings have stored events: what a map whose cost grew with its siblings paid for).

    Each run gets a fresh session service, after a full garbage collection: what earlier runs
    left behind would make the collector's passes, not the map, grow with the rounds.
    """
    from adk_notebook import FunctionCall, FunctionModel, InMemorySessionService, LlmAgent, MapAgent, RunConfig, Runner

    async def lookup(query: str) -> dict[str, str]:
        """Look something up.

        Args:
            query: What to look up.
        """
        return {"found": query}

    def look_then_answer(request: LlmRequest) -> Any:
        return "done" if request.contents[-1].role == "tool" else FunctionCall("lookup", {"query": "x"})

    worker = LlmAgent(
        name="worker", model=FunctionModel(look_then_answer), instruction="Sum up {temp:item}.", tools=[lookup]
    )
    each = MapAgent(name="each", sub_agent=worker, items_key="docs", output_key="out", max_concurrency=8)

    async def once() -> float:
        runner = Runner(
            app_name="bench",
            agent=each,
            session_service=InMemorySessionService(),
            run_config=RunConfig(streaming=False),
        )
        session = await runner.session_service.create(
            app_name="bench", user_id="u1", state={"docs": list(range(items))}
        )
        gc.collect()
        start = time.perf_counter()
        async for _ in runner.run(user_id="u1", session_id=session.id, content="go"):
            pass
        return time.perf_counter() - start

    async def rounds() -> float:
        await once()  # warm-up
        return statistics.median([await once() for _ in range(ROUNDS)])

    log(f"[adk_notebook] map: timing {ROUNDS} runs over {items} items...")
    return asyncio.run(rounds()) / items


def print_table(rows: list[tuple[str, str, float]]) -> None:
    print(f"\n{'workload':<26}{'version':<10}{'µs/invocation':>15}{'µs/agent hop':>14}")
    for name, version, seconds in rows:
        print(f"{name:<26}{version:<10}{seconds * 1e6:>15.1f}{seconds * 1e6 / AGENTS:>14.1f}")
    by_name = {name: seconds for name, _, seconds in rows}
    for shape in SHAPES:
        mine, theirs = (
            by_name.get(f"adk_notebook {shape}"),
            by_name.get(f"google-adk {shape}"),
        )
        if mine and theirs:
            print(f"{shape}: google-adk / adk_notebook = {theirs / mine:.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="invocations per timed round")
    parser.add_argument("--skip-peers", action="store_true", help="time adk_notebook only")
    args = parser.parse_args()
    rows = [ours(shape, args.n) for shape in SHAPES]
    if not args.skip_peers:
        for shape in SHAPES:
            log(f"[google-adk] {shape}: timing {ROUNDS} rounds of {args.n} invocations...")
            data = run_peer(PEER, shape, str(args.n))
            if data is not None:
                rows.append((data["framework"], data["version"], data["per_invocation_s"]))
    print_table(rows)
    per_item = {items: map_per_item(items) for items in MAP_ITEMS}
    print(f"\n{'MapAgent items':<26}{'µs/item':>15}")
    for items, seconds in per_item.items():
        print(f"{items:<26}{seconds * 1e6:>15.1f}")
    small, large = MAP_ITEMS
    print(f"map: {large} items / {small} items, time per item = {per_item[large] / per_item[small]:.2f}x (1.0: linear)")


if __name__ == "__main__":
    main()
