"""Streaming overhead: an OpenAI-style SSE stream read raw with httpx, and through the agent stack.

A loopback server (a raw socket in a child process, the response pre-encoded, one `sendall`) streams
5,000 Chat Completions text chunks. Side by side in one run, each round times:

  raw    httpx `aiter_lines` + `json.loads` of every `data:` line (the floor),
  model  OpenAIModel.generate_content(stream=True) alone (where the provider's share ends), and
  agent  OpenAIModel + LlmAgent + Runner with streaming on, every partial event consumed.

It prints the medians and agent/raw, the median of the per-round ratios (target under 1.3). Then pydantic-ai, in its own venv under
bench/.venvs/ (created on first use), reads the same server raw and through `Agent.run_stream`,
and its ratio is printed beside ours. Usage:

    python bench/stream.py [--chunks 5000] [--rounds 40] [--profile] [--skip-peers]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import socket
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
from peers.raw_stream import paired_ratio, raw_round
from peers.venvs import Peer, log, run_peer

from adk_notebook import Content, InMemorySessionService, LlmAgent, LlmRequest, Runner
from adk_notebook.models.openai import OpenAIModel

TARGET = 1.3
PEER_ROUNDS = 5  # the peer takes far longer per round
# The openai extra brings the SDK that pydantic-ai's OpenAIChatModel streams through.
PYDANTIC_AI = Peer(
    "pydantic-ai-openai", "pydantic-ai-slim[openai]", "pydantic_ai.models.openai", "pydantic_ai_stream.py"
)


def sse_body(n: int) -> bytes:
    head = '{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":'
    lines = [
        f'data: {head}[{{"index":0,"delta":{{"role":"assistant","content":""}},"logprobs":null,"finish_reason":null}}]}}\n\n'
    ]
    for i in range(n):
        lines.append(
            f'data: {head}[{{"index":0,"delta":{{"content":"tok{i % 10} "}},"logprobs":null,"finish_reason":null}}]}}\n\n'
        )
    lines.append(f'data: {head}[{{"index":0,"delta":{{}},"logprobs":null,"finish_reason":"stop"}}]}}\n\n')
    usage = {"prompt_tokens": 12, "completion_tokens": n, "total_tokens": n + 12}
    lines.append(f'data: {head}[],"usage":{json.dumps(usage)}}}\n\n')
    lines.append("data: [DONE]\n\n")
    return "".join(lines).encode()


class RawServer:
    """Answers every POST with the same pre-encoded response; keep-alive; one thread per connection.

    It runs in a child process: a server thread in the timed process would compete with the
    reader for the GIL, and the figures would measure that contention as much as the reading.
    """

    def __init__(self, body: bytes) -> None:
        context = multiprocessing.get_context("spawn")
        parent, child = context.Pipe()
        self.process = context.Process(target=_serve_forever, args=(body, child), daemon=True)
        self.process.start()
        self.url = f"http://127.0.0.1:{parent.recv():d}"

    def close(self) -> None:
        self.process.terminate()
        self.process.join()


def _serve_forever(body: bytes, pipe: Any) -> None:
    response = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    pipe.send(sock.getsockname()[1])
    while True:
        conn, _ = sock.accept()
        threading.Thread(target=_serve, args=(conn, response), daemon=True).start()


def _serve(conn: socket.socket, response: bytes) -> None:
    buffer = b""
    with conn:
        while True:
            while b"\r\n\r\n" not in buffer:
                data = conn.recv(65536)
                if not data:
                    return
                buffer += data
            head, _, buffer = buffer.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            while len(buffer) < length:
                data = conn.recv(65536)
                if not data:
                    return
                buffer += data
            buffer = buffer[length:]
            conn.sendall(response)


async def model_round(model: OpenAIModel, n: int) -> float:
    request = LlmRequest(model="gpt-4o-mini", contents=[Content.user("Hi")])
    started = time.perf_counter()
    partials = 0
    async for response in model.generate_content(request, stream=True):
        partials += response.partial
    elapsed = time.perf_counter() - started
    assert partials == n, partials
    return elapsed


async def agent_round(runner: Runner, sessions: InMemorySessionService, n: int) -> float:
    session = await sessions.create(app_name="bench", user_id="u")
    started = time.perf_counter()
    partials = 0
    final = None
    async for event in runner.run(user_id="u", session_id=session.id, content=Content.user("Hi")):
        if event.partial:
            partials += 1
        elif event.author == "bench":
            final = event
    elapsed = time.perf_counter() - started
    assert partials == n and final is not None and final.usage.output_tokens == n, (partials, final)
    return elapsed


async def time_ours(url: str, n: int, rounds: int, profile: bool) -> tuple[list[float], ...] | None:
    """Seconds per round of raw, model alone and the whole stack; None when profiling instead."""
    model = OpenAIModel("gpt-4o-mini", base_url=url + "/v1", provider_name="bench-openai")
    sessions = InMemorySessionService()
    runner = Runner(app_name="bench", agent=LlmAgent(name="bench", model=model), session_service=sessions)
    async with httpx.AsyncClient() as client:
        for _ in range(2):  # warm up: connections, imports, caches
            await raw_round(client, url, n)
            await agent_round(runner, sessions, n)
        if profile:
            import cProfile
            import pstats

            profiler = cProfile.Profile()
            profiler.enable()
            for _ in range(3):
                await agent_round(runner, sessions, n)
            profiler.disable()
            pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
            return None
        raw: list[float] = []
        alone: list[float] = []
        full: list[float] = []
        steps = [
            lambda: raw_round(client, url, n),
            lambda: model_round(model, n),
            lambda: agent_round(runner, sessions, n),
        ]
        for i in range(rounds):
            # Rotate the order so no side always runs first (these machines are noisy).
            for j in range(3):
                k = (i + j) % 3
                (raw, alone, full)[k].append(await steps[k]())
    await model.aclose()
    return raw, alone, full


def main(n: int, rounds: int, profile: bool, peers: bool) -> None:
    server = RawServer(sse_body(n))
    try:
        figures = asyncio.run(time_ours(server.url, n, rounds, profile))
        if figures is None:
            return
        peer = None
        if peers:
            log(f"[{PYDANTIC_AI.name}] timing {PEER_ROUNDS} rounds against the same server...")
            peer = run_peer(PYDANTIC_AI, server.url, str(n), str(PEER_ROUNDS))
    finally:
        server.close()
    raw, alone, full = figures
    raw_ms, model_ms, full_ms = (statistics.median(x) * 1000 for x in figures)
    ratio, model_ratio = paired_ratio(full, raw), paired_ratio(alone, raw)
    print(f"chunks per stream, rounds      {n}, {rounds}")
    print(f"raw httpx + json.loads         {raw_ms:7.1f} ms  ({raw_ms * 1000 / n:5.2f} µs/chunk)")
    print(
        f"OpenAIModel alone              {model_ms:7.1f} ms  ({model_ms * 1000 / n:5.2f} µs/chunk)  x{model_ratio:.2f}"
    )
    print(f"OpenAIModel+LlmAgent+Runner    {full_ms:7.1f} ms  ({full_ms * 1000 / n:5.2f} µs/chunk)  x{ratio:.2f}")
    print(
        f"overhead per chunk             provider {(model_ms - raw_ms) * 1000 / n:+.2f} µs, "
        f"agent+runner {(full_ms - model_ms) * 1000 / n:+.2f} µs"
    )
    print(f"ratio agent/raw                {ratio:.2f}  (target < {TARGET}) {'OK' if ratio < TARGET else 'OVER'}")
    if peer is not None:
        peer_ratio = peer["framework_ratio"]
        print(f"\npydantic-ai {peer['version']} (its own venv, {PEER_ROUNDS} rounds; raw read there with its httpx):")
        print(f"raw httpx + json.loads         {peer['raw_ms']:7.1f} ms  ({peer['raw_ms'] * 1000 / n:5.2f} µs/chunk)")
        print(
            f"openai SDK alone               {peer['sdk_ms']:7.1f} ms  "
            f"({peer['sdk_ms'] * 1000 / n:5.2f} µs/chunk)  x{peer['sdk_ratio']:.2f}"
        )
        print(
            f"Agent.run_stream, every delta  {peer['framework_ms']:7.1f} ms  "
            f"({peer['framework_ms'] * 1000 / n:5.2f} µs/chunk)  x{peer_ratio:.2f}"
        )
        print(f"ratio to raw: adk_notebook x{ratio:.2f}, pydantic-ai x{peer_ratio:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--profile", action="store_true", help="cProfile the agent side instead of timing")
    parser.add_argument("--skip-peers", action="store_true", help="time adk_notebook only")
    args = parser.parse_args()
    main(args.chunks, args.rounds, args.profile, not args.skip_peers)
