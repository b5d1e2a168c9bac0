"""Agent-loop overhead: adk_notebook against google-adk and pydantic-ai, offline.

One invocation: a fresh in-memory session, the user asks "Weather in Tokyo?", a scripted model
calls get_weather(city="Tokyo"), the tool runs, the model answers "It is sunny in Tokyo.".
Each peer runs in its own throwaway venv under bench/.venvs/ (created on first use); ours runs
in this interpreter, three ways: as shipped (the trace tree always on), with the trace tree
switched off (spans made no-ops, to price the tree: it must cost under 10% of our overhead),
and with an OpenTelemetryPlugin exporting to memory. Usage:

    python bench/loop.py [--n 2000] [--skip-peers]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from peers.timing import ROUNDS, per_invocation
from peers.venvs import Peer, log, run, run_peer

LOOP_TARGET = 5.0  # the faster peer's time / ours
TRACE_BUDGET = 0.10  # the trace tree's share of our per-invocation time
IMPORT_TARGET_MS = 150.0
ANSWER = "It is sunny in Tokyo."
PEERS = [
    Peer("google-adk", "google-adk", "google.adk.runners", "google_adk_loop.py"),
    # The slim distribution already has Agent and FunctionModel, without any provider SDK.
    Peer("pydantic-ai", "pydantic-ai-slim", "pydantic_ai.models.function", "pydantic_ai_loop.py"),
]


@dataclass(frozen=True, slots=True)
class Result:
    framework: str
    version: str
    per_invocation_s: float
    n: int


def time_peer(peer: Peer, n: int) -> Result | None:
    """Run the peer's workload in its venv; None (with the reason on stderr) if it cannot run."""
    log(f"[{peer.name}] timing {ROUNDS} rounds of {n} invocations...")
    data = run_peer(peer, str(n))
    return Result(**data) if data is not None else None


def ours(n: int) -> list[Result]:
    """Time adk_notebook's loop in this interpreter, through its public API: as shipped, with
    no-op spans (rounds alternating with the shipped ones, so both meet the same noise), and
    with an OpenTelemetryPlugin."""
    import adk_notebook
    from adk_notebook import (
        Content,
        FunctionCall,
        FunctionModel,
        InMemorySessionService,
        LlmAgent,
        LlmRequest,
        Runner,
        tool,
    )

    tool_calls = 0

    @tool
    def get_weather(city: str) -> dict:
        """Get the current weather for a city."""
        nonlocal tool_calls
        tool_calls += 1
        return {"city": city, "condition": "sunny"}

    def respond(request: LlmRequest) -> str | FunctionCall:
        last = request.contents[-1]
        if last.parts and last.parts[0].function_response is not None:
            return ANSWER
        return FunctionCall("get_weather", {"city": "Tokyo"})

    agent = LlmAgent(
        name="weather", model=FunctionModel(respond), instruction="You help with weather.", tools=[get_weather]
    )
    sessions = InMemorySessionService()

    def invoker(runner: Runner) -> Callable[[], Awaitable[None]]:
        async def invoke() -> None:
            session = await sessions.create(app_name="bench", user_id="u1")
            final = ""
            content = Content.user("Weather in Tokyo?")
            async for event in runner.run(user_id="u1", session_id=session.id, content=content):
                if event.is_final_response():
                    final = event.text
            assert final == ANSWER, final

        return invoke

    invoke = invoker(Runner(app_name="bench", agent=agent, session_service=sessions))
    with_otel = invoker(Runner(app_name="bench", agent=agent, session_service=sessions, plugins=[_otel_plugin()]))

    async def measure() -> tuple[float, float, float]:
        await invoke()
        assert tool_calls == 1, tool_calls
        traced, untraced = await _alternating(invoke, n)
        return traced, untraced, await per_invocation(with_otel, n)

    log(f"[adk_notebook] timing {ROUNDS} rounds of {n} invocations, traced and untraced, then with OpenTelemetry...")
    traced, untraced, otel = asyncio.run(measure())
    version = adk_notebook.__version__
    return [
        Result("adk_notebook", version, traced, n),
        Result("adk_notebook+otel", version, otel, n),
        Result("adk_notebook+untraced", version, untraced, n),
    ]


async def _alternating(invoke: Callable[[], Awaitable[None]], n: int) -> tuple[float, float]:
    """Median seconds per invocation with the trace tree on and with it off, in alternate rounds."""
    for _ in range(max(50, n // 10)):
        await invoke()
    rounds: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(2 * ROUNDS):
        for off in (False, True):
            with _spans_off(off):
                start = time.perf_counter()
                for _ in range(n):
                    await invoke()
                rounds[off].append((time.perf_counter() - start) / n)
    return statistics.median(rounds[False]), statistics.median(rounds[True])


def tree_cost(n: int = 20_000) -> float:
    """Seconds to record the workload's trace tree alone (run, agent, two model calls, a tool
    call; tokens summed at the end): the figure the alternating rounds should agree with."""
    from adk_notebook.core.trace import Span, total_up

    def record() -> None:
        run = Span(name="run weather", kind="run", agent="weather")
        agent = run.child("invoke_agent weather", "agent", agent="weather")
        for step in ("model", "tool", "model"):
            span = agent.child("chat m" if step == "model" else "execute_tool get_weather", step, agent="weather")  # type: ignore[arg-type]
            span.finish()
        agent.finish()
        run.finish()
        total_up(run)

    samples = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(n):
            record()
        samples.append((time.perf_counter() - start) / n)
    return statistics.median(samples)


@contextmanager
def _spans_off(off: bool) -> Iterator[None]:
    """Make every span a no-op while timing (opening a child gives back the parent): the run
    costs what it would without its trace tree."""
    from adk_notebook.core.trace import Span

    if not off:
        yield
        return
    child, finish = Span.child, Span.finish
    Span.child = lambda self, *args, **fields: self  # type: ignore[method-assign]
    Span.finish = lambda self, error=None: None  # type: ignore[method-assign]
    try:
        yield
    finally:
        Span.child, Span.finish = child, finish  # type: ignore[method-assign]


def _otel_plugin() -> Any:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        SimpleSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )

    from adk_notebook import OpenTelemetryPlugin

    class Discard(SpanExporter):  # each span reaches an exporter, which drops it: memory stays flat
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(Discard()))
    return OpenTelemetryPlugin(provider)


def import_ms() -> float:
    """Median over ROUNDS fresh interpreters of `import adk_notebook`'s cumulative time (-X importtime).

    Bytecode is cached first, in a temporary PYTHONPYCACHEPREFIX, as an installed package has it:
    with PYTHONDONTWRITEBYTECODE set (as on this machine) we would time compiling the sources.
    """
    samples = []
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "PYTHONPYCACHEPREFIX": cache}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        for _ in range(1 + ROUNDS):  # the first run writes the bytecode
            stderr = run(sys.executable, "-X", "importtime", "-c", "import adk_notebook", env=env).stderr
            match = re.search(r"^import time:\s+\d+ \|\s+(\d+) \| adk_notebook$", stderr, re.MULTILINE)
            if match is None:
                raise RuntimeError(f"`import adk_notebook` failed:\n{stderr[-2000:]}")
            samples.append(int(match.group(1)) / 1000)
    return statistics.median(samples[1:])


def print_table(results: list[Result]) -> None:
    base = results[0]
    untraced = next((r for r in results if r.framework == "adk_notebook+untraced"), None)
    results = [r for r in results if r is not untraced] + ([untraced] if untraced else [])
    print(f"\n{'framework':<22}{'version':<10}{'µs/invocation':>15}{'s/invocation':>15}{'× ours':>9}")
    for r in results:
        ratio = f"{r.per_invocation_s / base.per_invocation_s:.1f}" if base.framework == "adk_notebook" else "-"
        print(f"{r.framework:<22}{r.version:<10}{r.per_invocation_s * 1e6:>15.1f}{r.per_invocation_s:>15.6f}{ratio:>9}")
    peers = [r for r in results[1:] if not r.framework.startswith("adk_notebook")]
    if base.framework == "adk_notebook" and peers:
        speedup = min(r.per_invocation_s for r in peers) / base.per_invocation_s
        verdict = "met" if speedup >= LOOP_TARGET else "MISSED"
        print(f"faster peer / ours: {speedup:.1f}x (target >= {LOOP_TARGET:.0f}x: {verdict})")
    if base.framework == "adk_notebook" and untraced is not None:
        share = (base.per_invocation_s - untraced.per_invocation_s) / base.per_invocation_s
        verdict = "met" if share < TRACE_BUDGET else "MISSED"
        print(
            f"trace tree, on minus off: {share:.1%} of our per-invocation time "
            f"({(base.per_invocation_s - untraced.per_invocation_s) * 1e6:+.1f} µs; target < {TRACE_BUDGET:.0%}: {verdict})"
        )
        alone = tree_cost()
        print(
            f"trace tree alone: {alone * 1e6:.1f} µs per invocation, "
            f"{alone / base.per_invocation_s:.1%} of our per-invocation time"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="invocations per timed round")
    parser.add_argument("--skip-peers", action="store_true", help="time adk_notebook only")
    args = parser.parse_args()

    results: list[Result] = []
    try:
        results += ours(args.n)
    except Exception as exc:  # noqa: BLE001  # a broken workload of ours must not hide the peers' figures
        log(f"[adk_notebook] skipped: {type(exc).__name__}: {exc}")
    if not args.skip_peers:
        results += [r for r in (time_peer(p, args.n) for p in PEERS) if r is not None]
    if results:
        print_table(results)
    try:
        ms = import_ms()
    except RuntimeError as exc:
        log(str(exc))
    else:
        verdict = "met" if ms < IMPORT_TARGET_MS else "MISSED"
        print(f"import adk_notebook: {ms:.0f} ms (target < {IMPORT_TARGET_MS:.0f} ms: {verdict})")


if __name__ == "__main__":
    main()
