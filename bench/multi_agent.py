"""Multi-agent overhead: adk_notebook's SequentialAgent and ParallelAgent against google-adk's, offline.

One invocation: a fresh in-memory session, the user says "go", and a workflow of 10 LlmAgents
on a scripted model (one text answer each, no streaming) runs: one after another
(SequentialAgent) or as 10 concurrent branches (ParallelAgent). Reported: time per invocation,
and per agent hop (that time / 10). google-adk runs in its throwaway venv under bench/.venvs/
(bench/peers/venvs.py); ours in this interpreter. Usage:

    python bench/multi_agent.py [--n 200] [--skip-peers]
"""

from __future__ import annotations

import argparse
import asyncio

from peers.timing import ROUNDS, per_invocation
from peers.venvs import Peer, log, run_peer

AGENTS = 10
SHAPES = ("sequential", "parallel")
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


if __name__ == "__main__":
    main()
