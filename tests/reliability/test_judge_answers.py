"""The LLM judge's answer is parsed in time linear in its length, whatever the judge wrote.

`final_response_match` reads the verdict out of free text. Blank lines after the label (12k of
them took 10 s), brackets, and the label repeated thousands of times go through the public
metric with a scripted judge; each must finish far inside the time limit and give the verdict
the text holds.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from adk_notebook import ScriptedModel
from adk_notebook.evaluation import FinalResponseMatch, Invocation


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Fail with TimeoutError after `seconds`: the regex engine checks signals, so this also stops
    a pattern backtracking in C."""

    def expire(signum: int, frame: Any) -> None:
        raise TimeoutError(f"still parsing after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


LABEL = '"is_the_agent_response_valid"'
HOSTILE_JUDGE_ANSWERS: list[tuple[str, str, float | None]] = [
    ("200k blank lines after the label", LABEL + ":" + "\n" * 200_000 + "}", None),
    ("200k blank lines, then the verdict", LABEL + ":" + "\n" * 200_000 + '"valid"}', 1.0),
    ("200k blank lines around a bracket", LABEL + ":" + "\n" * 100_000 + "[" + "\n" * 100_000 + "x", None),
    ("20k labels, each before 50 blank lines", (LABEL + ":" + " " * 50) * 20_000, None),
    ("20k labels without colons", (LABEL + "\n" * 10) * 20_000 + LABEL + ': "invalid"', 0.0),
]


@pytest.mark.parametrize(("what", "answer", "score"), HOSTILE_JUDGE_ANSWERS, ids=[h[0] for h in HOSTILE_JUDGE_ANSWERS])
async def test_the_judge_answer_is_parsed_in_linear_time(
    tally: Any, what: str, answer: str, score: float | None
) -> None:
    expected = Invocation.build("Weather in Oslo?", "Sunny.")
    actual = Invocation.build("Weather in Oslo?", "It is sunny.")
    metric = FinalResponseMatch(judge=ScriptedModel([answer]), samples=1)
    with tally.case("eval files: hostile judge answers, parsed in linear time"):
        started = time.perf_counter()
        with time_limit(20):  # linear: milliseconds; the old pattern: 7 s for 12k lines, ~30 min for 200k
            assert await metric.score(expected, actual) == score
        print(f"{what}: {time.perf_counter() - started:.3f} s")
