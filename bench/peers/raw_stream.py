"""The floor of bench/stream.py, shared by our side and the peers' (stdlib only: each venv has its own httpx)."""

from __future__ import annotations

import json
import statistics
import time
from typing import Any

REQUEST = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}], "stream": True}


async def raw_round(client: Any, url: str, n: int) -> float:
    """Seconds to read the stream with an `httpx.AsyncClient`: `aiter_lines` + `json.loads` per data line."""
    started = time.perf_counter()
    texts = []
    async with client.stream("POST", url + "/v1/chat/completions", json=REQUEST) as response:
        async for line in response.aiter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                choices = json.loads(line[6:])["choices"]
                if choices and choices[0]["delta"].get("content"):
                    texts.append(choices[0]["delta"]["content"])
    elapsed = time.perf_counter() - started
    assert len(texts) == n, len(texts)
    return elapsed


def paired_ratio(side: list[float], raw: list[float]) -> float:
    """The median of the per-round ratios: each round's sides ran back to back, so a machine
    that speeds up or slows down between rounds (these are shared) moves both alike."""
    return statistics.median(s / r for s, r in zip(side, raw, strict=True))
