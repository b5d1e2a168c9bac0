"""The embedded model's speed: time to first token and tokens per second, fast path on and off.

`LocalModel` runs SmolLM2-135M-Instruct in a child process (isolation: a crash there does not
take the kernel) with llama.cpp's extra CPU buffer types off by default (their AMX path crashed
on some Xeons). This prints, side by side and in paired rounds (the four sides back to back,
each round):

    LocalModel, fast path off          the default
    LocalModel, fast path on           extra_buffer_types=True
    llama.cpp in-process, off / on     the worker's own completion code run in this process:
                                       the floor, the same work without the process boundary

Time to first token: from the call to the first streamed text (the prompt is read again each
round). Tokens per second: the rest of the answer, greedy, `--tokens` long. Also the cold start
of LocalModel (a new process: import llama.cpp, load the model, first token). These machines
are shared: read the ratios within one run. Usage:

    python bench/local_model.py [--rounds 5] [--tokens 128]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import re
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adk_notebook import Content, GenerateContentConfig, LlmRequest
from adk_notebook.models.local import LocalModel, embedded_model_path
from adk_notebook.models.local_worker import Worker

PROMPT = "Write a short story about a lighthouse keeper and a storm."
SYSTEM = "You are a helpful assistant."


def cpu_flags() -> str:
    try:
        flags = set(re.search(r"^flags\s*:\s*(.*)$", Path("/proc/cpuinfo").read_text(), re.MULTILINE)[1].split())
    except (OSError, TypeError):
        return "unknown"
    shown = [f for f in ("avx2", "avx512f", "amx_tile", "amx_int8", "amx_bf16") if f in flags]
    return ", ".join(shown) or "none of avx2/avx512f/amx"


class Side:
    """One way to run the model; `round()` returns (seconds to first token, tokens/s)."""

    label: str

    def round(self) -> tuple[float, float]:
        raise NotImplementedError

    def close(self) -> None:
        pass


class LocalSide(Side):
    def __init__(self, extra: bool, tokens: int) -> None:
        self.label = f"LocalModel, fast path {'on' if extra else 'off'}"
        self.model = LocalModel(extra_buffer_types=extra, temperature=0.0)
        self.request = LlmRequest(
            self.model.name,
            [Content.user(PROMPT)],
            SYSTEM,
            config=GenerateContentConfig(max_output_tokens=tokens, temperature=0.0),
        )
        self.loop = asyncio.new_event_loop()
        start = time.perf_counter()
        self.cold = self.round()[0], time.perf_counter() - start  # includes the process start and the load

    def round(self) -> tuple[float, float]:
        return self.loop.run_until_complete(self._round())

    async def _round(self) -> tuple[float, float]:
        start = time.perf_counter()
        first = None
        async for response in self.model.generate_content(self.request, stream=True):
            if response.partial and first is None:
                first = time.perf_counter()
        end = time.perf_counter()
        assert first is not None and response.usage is not None
        return first - start, (response.usage.output_tokens - 1) / (end - first)

    def close(self) -> None:
        self.model.close()
        self.loop.close()


class _Sink:
    """Stands in for the worker's pipe: notes when each protocol line was written."""

    def __init__(self) -> None:
        self.lines: list[tuple[float, str]] = []

    def write(self, line: str) -> int:
        self.lines.append((time.perf_counter(), line))
        return len(line)

    def flush(self) -> None:
        pass


class InProcessSide(Side):
    """The worker's own code (`local_worker.Worker`) in this process: the same completion, no pipe."""

    def __init__(self, extra: bool, tokens: int) -> None:
        self.label = f"llama.cpp in-process, fast path {'on' if extra else 'off'}"
        self.sink = _Sink()
        self.worker = Worker(self.sink)  # type: ignore[arg-type]
        self.worker.load(
            {
                "model_path": str(embedded_model_path()),
                "llama": {"n_ctx": 4096, "verbose": False},
                "extra_buffer_types": extra,
            }
        )
        self.request = {
            "id": 1,
            "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPT}],
            "max_tokens": tokens,
            "temperature": 0.0,
            "top_p": 0.95,
            "top_k": 40,
            "stream": True,
        }

    def round(self) -> tuple[float, float]:
        self.sink.lines.clear()
        start = time.perf_counter()
        self.worker.complete(self.request, threading.Event())
        texts = [t for t, line in self.sink.lines if line.startswith('{"type": "text"')]
        done = json.loads(self.sink.lines[-1][1])
        return texts[0] - start, (done["output_tokens"] - 1) / (self.sink.lines[-1][0] - texts[0])

    def close(self) -> None:
        self.worker.llama.close()


def paired(sides: list[Side], rounds: int) -> dict[str, list[tuple[float, float]]]:
    results: dict[str, list[tuple[float, float]]] = {s.label: [] for s in sides}
    for side in sides:
        side.round()  # warm: caches, the first grammar-free completion
    for n in range(rounds):
        order = sides if n % 2 == 0 else sides[::-1]  # neither side always goes first
        for side in order:
            results[side.label].append(side.round())
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=128)
    args = parser.parse_args()
    path = embedded_model_path()
    print(
        f"{path.name} ({path.stat().st_size / 1e6:.0f} MB), {args.tokens} tokens greedy, {args.rounds} paired "
        f"rounds; CPU {platform.processor() or platform.machine()}, flags: {cpu_flags()}"
    )
    makers: list[Callable[[], Side]] = [
        lambda: LocalSide(False, args.tokens),
        lambda: LocalSide(True, args.tokens),
        lambda: InProcessSide(False, args.tokens),
        lambda: InProcessSide(True, args.tokens),
    ]
    sides = [make() for make in makers]
    try:
        results = paired(sides, args.rounds)
    finally:
        for side in sides:
            side.close()
    print(f"  {'':<38} {'first token':>12} {'tokens/s':>10}")
    medians: dict[str, tuple[float, float]] = {}
    for label, values in results.items():
        ttft = statistics.median(v[0] for v in values) * 1000
        rate = statistics.median(v[1] for v in values)
        medians[label] = (ttft, rate)
        print(f"  {label:<38} {ttft:9.1f} ms {rate:10.1f}")
    for side in sides:
        if isinstance(side, LocalSide):
            first, _ = side.cold
            print(f"  cold start, {side.label:<26} {first * 1000:9.0f} ms to the first token (new process + load)")
    off, on = medians["LocalModel, fast path off"], medians["LocalModel, fast path on"]
    floor = medians["llama.cpp in-process, fast path off"]
    print(f"  fast path on / off (LocalModel): first token x{on[0] / off[0]:.2f}, tokens/s x{on[1] / off[1]:.2f}")
    print(f"  LocalModel / in-process (off):   first token x{off[0] / floor[0]:.2f}, tokens/s x{off[1] / floor[1]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
