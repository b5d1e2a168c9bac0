"""openai SDK workload for bench/sse.py: one big streamed event, read raw and through AsyncOpenAI.

Run in the openai-sdk venv: `python openai_sse.py URL SIZE ROUNDS`. Each round times, in
rotating order, the raw floor (the venv's httpx, `aiter_bytes`, nothing decoded) and
`AsyncOpenAI().chat.completions.create(stream=True)` consumed to the end. Prints one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time

from openai import AsyncOpenAI, __version__
from raw_stream import REQUEST, paired_ratio

try:
    import httpx
except ImportError:  # newer openai releases depend on the `httpx2` distribution instead
    import httpx2 as httpx


async def raw_round(client: httpx.AsyncClient, url: str) -> float:
    started = time.perf_counter()
    async with client.stream("POST", url + "/v1/chat/completions", json=REQUEST) as response:
        async for _ in response.aiter_bytes():
            pass
    return time.perf_counter() - started


async def sdk_round(client: AsyncOpenAI, size: int) -> float:
    started = time.perf_counter()
    text = 0
    stream = await client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}], stream=True
    )
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            text += len(chunk.choices[0].delta.content)
    elapsed = time.perf_counter() - started
    assert text == size, text
    return elapsed


async def main(url: str, size: int, rounds: int) -> None:
    sdk = AsyncOpenAI(base_url=url + "/v1", api_key="bench", max_retries=0, timeout=600)
    raw: list[float] = []
    ours: list[float] = []
    async with httpx.AsyncClient(timeout=600) as client:
        await raw_round(client, url)
        await sdk_round(sdk, size)
        for i in range(rounds):
            if i % 2:
                ours.append(await sdk_round(sdk, size))
                raw.append(await raw_round(client, url))
            else:
                raw.append(await raw_round(client, url))
                ours.append(await sdk_round(sdk, size))
    print(
        json.dumps(
            {
                "version": __version__,
                "raw_ms": statistics.median(raw) * 1000,
                "sdk_ms": statistics.median(ours) * 1000,
                "sdk_ratio": paired_ratio(ours, raw),
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
