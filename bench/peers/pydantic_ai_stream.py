"""pydantic-ai streaming workload for bench/stream.py: the same loopback stream, read raw and by an Agent.

Run in the pydantic-ai-openai venv: `python pydantic_ai_stream.py URL CHUNKS ROUNDS`. Each round
times, in rotating order, the raw floor (the venv's httpx, `aiter_lines` + `json.loads`), the
openai SDK alone (where the provider's share ends) and `Agent.run_stream` over OpenAIChatModel,
every text delta consumed (`debounce_by=None`). Prints one JSON line: medians and per-round ratios.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time

from openai import AsyncOpenAI
from pydantic_ai import Agent, __version__
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from raw_stream import paired_ratio, raw_round

try:
    import httpx
except ImportError:  # newer pydantic-ai releases depend on the `httpx2` distribution instead
    import httpx2 as httpx


async def sdk_round(client: AsyncOpenAI, n: int) -> float:
    started = time.perf_counter()
    texts = 0
    stream = await client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}], stream=True
    )
    async for chunk in stream:
        texts += bool(chunk.choices and chunk.choices[0].delta.content)
    elapsed = time.perf_counter() - started
    assert texts == n, texts
    return elapsed


async def agent_round(agent: Agent, n: int) -> float:
    started = time.perf_counter()
    deltas = 0
    async with agent.run_stream("Hi") as result:
        async for _ in result.stream_text(delta=True, debounce_by=None):
            deltas += 1
    elapsed = time.perf_counter() - started
    assert deltas == n, deltas
    return elapsed


async def main(url: str, n: int, rounds: int) -> None:
    sdk = AsyncOpenAI(base_url=url + "/v1", api_key="bench")
    agent = Agent(OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=sdk)))
    async with httpx.AsyncClient() as client:
        steps = {
            "raw_ms": lambda: raw_round(client, url, n),
            "sdk_ms": lambda: sdk_round(sdk, n),
            "framework_ms": lambda: agent_round(agent, n),
        }
        for step in steps.values():  # warm up
            await step()
        times: dict[str, list[float]] = {name: [] for name in steps}
        names = list(steps)
        for i in range(rounds):
            for j in range(len(names)):
                name = names[(i + j) % len(names)]
                times[name].append(await steps[name]())
        medians = {name: statistics.median(t) * 1000 for name, t in times.items()}
    ratios = {  # per round, as bench/stream.py computes ours
        "sdk_ratio": paired_ratio(times["sdk_ms"], times["raw_ms"]),
        "framework_ratio": paired_ratio(times["framework_ms"], times["raw_ms"]),
    }
    print(json.dumps({"framework": "pydantic-ai", "version": __version__, "n": n, **medians, **ratios}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
