"""SSE decoding of big events: one server-sent event of 16 MB and one of 50 MB, beside the raw read.

A loopback server (bench/stream.py's raw socket in a child process, the response pre-encoded)
answers with an OpenAI-style stream whose first chunk carries the whole answer as one text
delta of SIZE bytes, then the finish chunk and [DONE]. Side by side, each round times:

  raw        httpx `aiter_bytes`, nothing decoded (the floor: what reading the bytes costs),
  transport  HttpTransport.stream_sse: the SSE decoder (and the secrets scrub) over those reads,
  model      OpenAIModel.generate_content(stream=True): the above, the JSON of the event, the answer.

It prints the medians and the paired ratio to raw of each. A quadratic decoder shows here as a
ratio that grows with the size (it was 1.5 s for 16 MB and 34 s for 50 MB); a linear one keeps
it flat. Then the openai SDK (its own venv under bench/.venvs/, made on first use) reads the same
stream through `AsyncOpenAI` streaming, for comparison. Usage:

    python bench/sse.py [--sizes 16,50] [--rounds 5] [--skip-peers]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
from peers.raw_stream import REQUEST, paired_ratio
from peers.venvs import Peer, log, run_peer
from stream import RawServer

from adk_notebook import Content, LlmRequest
from adk_notebook.models.http import HttpTransport
from adk_notebook.models.openai import OpenAIModel

MB = 1_000_000
OPENAI_SDK = Peer("openai-sdk", "openai", "openai", "openai_sse.py")


def big_event_body(size: int) -> bytes:
    head = '{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":'
    text = "x" * size
    return (
        f'data: {head}[{{"index":0,"delta":{{"role":"assistant","content":"{text}"}},"finish_reason":null}}]}}\n\n'
        f'data: {head}[{{"index":0,"delta":{{}},"finish_reason":"stop"}}]}}\n\n'
        "data: [DONE]\n\n"
    ).encode()


async def raw_round(client: httpx.AsyncClient, url: str, body_size: int) -> float:
    started = time.perf_counter()
    received = 0
    async with client.stream("POST", url + "/v1/chat/completions", json=REQUEST) as response:
        async for chunk in response.aiter_bytes():
            received += len(chunk)
    elapsed = time.perf_counter() - started
    assert received == body_size, received
    return elapsed


async def transport_round(transport: HttpTransport, size: int) -> float:
    started = time.perf_counter()
    events = [event async for event in transport.stream_sse("/chat/completions", REQUEST)]
    elapsed = time.perf_counter() - started
    assert len(events) == 3 and len(events[0].data) > size, [len(e.data) for e in events]
    return elapsed


async def model_round(model: OpenAIModel, size: int) -> float:
    request = LlmRequest(model="gpt-4o-mini", contents=[Content.user("Hi")])
    started = time.perf_counter()
    responses = [r async for r in model.generate_content(request, stream=True)]
    elapsed = time.perf_counter() - started
    assert len(responses[-1].content.text) == size
    return elapsed


async def time_ours(url: str, size: int, body_size: int, rounds: int) -> tuple[list[float], list[float], list[float]]:
    transport = HttpTransport(provider="bench", base_url=url + "/v1")
    model = OpenAIModel("gpt-4o-mini", base_url=url + "/v1", provider_name="bench-openai")
    sides: tuple[list[float], list[float], list[float]] = ([], [], [])
    async with httpx.AsyncClient(timeout=600) as client:
        steps = [
            lambda: raw_round(client, url, body_size),
            lambda: transport_round(transport, size),
            lambda: model_round(model, size),
        ]
        for step in steps:  # warm up: connections, imports
            await step()
        for i in range(rounds):
            for j in range(3):  # rotate the order: these machines are noisy
                k = (i + j) % 3
                sides[k].append(await steps[k]())
    await transport.aclose()
    await model.aclose()
    return sides


def main(sizes: list[int], rounds: int, peers: bool) -> None:
    print(
        f"{'one event of':<14} {'raw httpx':>10} {'transport':>18} {'OpenAIModel':>18}   (median ms; x paired ratio to raw)"
    )
    for mb in sizes:
        body = big_event_body(mb * MB)
        server = RawServer(body)
        try:
            raw, transport, model = asyncio.run(time_ours(server.url, mb * MB, len(body), rounds))
            peer = None
            if peers:
                log(f"[{OPENAI_SDK.name}] timing {rounds} rounds of the {mb} MB event...")
                peer = run_peer(OPENAI_SDK, server.url, str(mb * MB), str(rounds))
        finally:
            server.close()
        raw_ms, transport_ms, model_ms = (statistics.median(side) * 1000 for side in (raw, transport, model))
        print(
            f"{mb:>4} MB        {raw_ms:8.0f} ms {transport_ms:8.0f} ms x{paired_ratio(transport, raw):5.2f}"
            f" {model_ms:8.0f} ms x{paired_ratio(model, raw):5.2f}"
        )
        if peer is not None:
            print(
                f"{'':14} openai {peer['version']} (own venv): raw {peer['raw_ms']:.0f} ms, "
                f"AsyncOpenAI stream {peer['sdk_ms']:.0f} ms x{peer['sdk_ratio']:.2f}"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="16,50", help="event sizes in MB, comma-separated")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--skip-peers", action="store_true", help="time adk_notebook only")
    args = parser.parse_args()
    main([int(s) for s in args.sizes.split(",")], args.rounds, not args.skip_peers)
