"""The metrics: each scores one actual invocation against its expected one.

A metric is anything with a `name` and an async `score(expected, actual) -> float | None`
(None: it could not say). The built-ins use google-adk's names and give its numbers:

- `tool_trajectory_avg_score` → `ToolTrajectory`: 1.0 when the calls match, else 0.0;
- `response_match_score` → `ResponseMatch`: ROUGE-1 F-measure, stemmed (`rouge-score`);
- `final_response_match` (google-adk: `final_response_match_v2`) → `FinalResponseMatch`: an
  LLM judge sampled N times, majority vote.

`metric_from_criterion` reads a `test_config.json` criterion (a threshold, or an object with
`threshold` and the metric's options) into a metric and its threshold.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import unicodedata
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..core.content import Content
from ..core.errors import AdkError
from ..extras import requires
from ..models.base import Llm, LlmRequest
from .criteria import CRITERIA_SOURCE, ArgsMatch, JudgeCriterion, MatchType, TrajectoryCriterion, check_criterion
from .evalset import Invocation, ToolUse

__all__ = [
    "ArgsMatch",
    "CustomMetric",
    "FinalResponseMatch",
    "MatchType",
    "Metric",
    "ResponseMatch",
    "ToolTrajectory",
    "metric_from_criterion",
]


@runtime_checkable
class Metric(Protocol):
    """Scores an actual invocation against the expected one; higher is better, 0 to 1."""

    @property
    def name(self) -> str: ...

    async def score(self, expected: Invocation, actual: Invocation) -> float | None: ...


@dataclass(frozen=True, slots=True)
class ToolTrajectory:
    """Did the agent call the expected tools? `match`: google-adk's EXACT / IN_ORDER / ANY_ORDER.

    `args`: "exact" (google-adk's default), "ignore" (its `ignore_args`), or "subset" (the
    expected arguments must appear with equal values; the actual call may have more). Calls
    compare by name and arguments only: call ids never count.
    """

    match: MatchType = "exact"
    args: ArgsMatch = "exact"
    name: str = "tool_trajectory_avg_score"

    async def score(self, expected: Invocation, actual: Invocation) -> float | None:
        return 1.0 if self.matches(expected.tool_uses, actual.tool_uses) else 0.0

    def matches(self, expected: list[ToolUse], actual: list[ToolUse]) -> bool:
        if self.match == "exact":
            return len(actual) == len(expected) and all(map(self._same, expected, actual))
        if self.match == "in_order":
            remaining = iter(actual)
            return all(any(self._same(want, got) for got in remaining) for want in expected)
        unmatched = list(actual)
        for want in expected:
            found = next((i for i, got in enumerate(unmatched) if self._same(want, got)), None)
            if found is None:
                return False
            del unmatched[found]
        return True

    def _same(self, want: ToolUse, got: ToolUse) -> bool:
        if want.name != got.name:
            return False
        if self.args == "ignore":
            return True
        if self.args == "subset":
            return all(key in got.args and got.args[key] == value for key, value in want.args.items())
        return want.args == got.args


@dataclass(frozen=True, slots=True)
class ResponseMatch:
    """ROUGE-1 F-measure of the response against the reference, stemmed, as google-adk scores it.

    Without rouge-score (extra `[eval]`) it refuses to be made, so `evaluate` fails before any
    case runs with the extra named, rather than scoring every case None."""

    name: str = "response_match_score"

    def __post_init__(self) -> None:
        requires("eval", what=self.name)

    async def score(self, expected: Invocation, actual: Invocation) -> float | None:
        return rouge_1(actual.response_text, expected.response_text)


def rouge_1(candidate: str, reference: str) -> float:
    from rouge_score import rouge_scorer  # [eval]; ResponseMatch checked it is there

    scorer = rouge_scorer.RougeScorer(["rouge1"], tokenizer=_UnicodeTokenizer())
    return float(scorer.score(reference, candidate)["rouge1"].fmeasure)


class _UnicodeTokenizer:
    """google-adk's tokenizer for ROUGE (final_response_match_v1): rouge-score's default one with
    stemming for ASCII words, non-Latin words kept whole, CJK and Thai-like scripts split per
    character. rouge-score alone drops every non-ASCII character."""

    def __init__(self) -> None:
        from rouge_score import tokenizers

        self._ascii = tokenizers.DefaultTokenizer(use_stemmer=True)

    def tokenize(self, text: str) -> list[str]:
        chars: list[str] = []
        for char in unicodedata.normalize("NFKC", text).lower():
            mark = unicodedata.category(char).startswith("M")
            if _in(char, _CJK):
                chars += [" ", char, " "]
            elif _in(char, _UNSPACED):
                chars += [char] if mark else [" ", char]
            else:
                chars.append(char if char.isalnum() or mark else " ")
        tokens: list[str] = []
        for word in "".join(chars).split():
            tokens += self._ascii.tokenize(word) if word.isascii() else [word]
        return tokens


_CJK = ((0x4E00, 0x9FFF), (0x3040, 0x309F), (0x30A0, 0x30FF), (0xAC00, 0xD7AF))
_UNSPACED = (
    (0x0E00, 0x0E7F),
    (0x0E80, 0x0EFF),
    (0x1780, 0x17FF),
    (0x1000, 0x109F),
)  # Thai, Lao, Khmer, Myanmar


def _in(char: str, ranges: tuple[tuple[int, int], ...]) -> bool:
    return any(low <= ord(char) <= high for low, high in ranges)


_JUDGE_PROMPT = """You rate an AI agent's answer against a reference answer written by a human expert.
The agent's answer is valid when it gives the same final answer as the reference (more detail is
fine; a different fact, number or unit is not). Reply with JSON only:
{{"reasoning": "<one or two sentences>", "is_the_agent_response_valid": "valid" or "invalid"}}

User prompt:
{prompt}

Reference answer:
{reference}

Agent's answer:
{response}
"""
# Linear in the judge's answer: possessive `*+` never gives whitespace back, and the bracket's
# whitespace is only tried after a bracket. (`\s*\[?\s*` tried every split of a run of blanks
# between its two `\s*`: quadratic, 12k blank lines after the label took 7 s, 200k half an hour.)
_LABEL = re.compile(
    r'"is_the_agent_response_valid"\s*+:\s*+(?:\[\s*+)?"?(valid|invalid|true|false)',
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class FinalResponseMatch:
    """An LLM judge: is the response as good as the reference? 1.0 when most samples say valid.

    `judge` is any model string (`gemini-2.5-flash`, `openai:gpt-4o-mini`, ...) or an `Llm`;
    the `samples` calls for one invocation run at the same time. A tie counts as invalid, as in
    google-adk; None when no sample gave a verdict.
    """

    judge: Llm | str = "gemini-2.5-flash"
    samples: int = 5
    name: str = "final_response_match"

    async def score(self, expected: Invocation, actual: Invocation) -> float | None:
        from ..models.registry import resolve_model

        model = resolve_model(self.judge)
        prompt = _JUDGE_PROMPT.format(
            prompt=expected.user_text,
            reference=expected.response_text,
            response=actual.response_text,
        )
        verdicts = await asyncio.gather(*(self._verdict(model, prompt) for _ in range(self.samples)))
        labelled = [v for v in verdicts if v is not None]
        if not labelled:
            return None
        return 1.0 if sum(labelled) * 2 > len(labelled) else 0.0

    async def _verdict(self, model: Llm, prompt: str) -> bool | None:
        request = LlmRequest(model=getattr(model, "model", ""), contents=[Content.user(prompt)])
        text = ""
        async for response in model.generate_content(request, stream=False):
            if not response.partial and response.content is not None:
                text += response.content.text
        found = _LABEL.search(text)
        return None if found is None else found.group(1).lower() in ("valid", "true")


ScoreFunction = Callable[[Invocation, Invocation], float | None | Awaitable[float | None]]


@dataclass(frozen=True, slots=True)
class CustomMetric:
    """Your own metric: `fn(expected, actual)` returns a score (sync or async)."""

    name: str
    fn: ScoreFunction = field(repr=False)

    async def score(self, expected: Invocation, actual: Invocation) -> float | None:
        value = self.fn(expected, actual)
        if inspect.isawaitable(value):
            value = await value
        return None if value is None else float(value)


def metric_from_criterion(
    name: str, criterion: Any, custom: dict[str, Metric], source: str = CRITERIA_SOURCE
) -> tuple[Metric, float]:
    """A criterion of `test_config.json` (or `evaluate(criteria=...)`) as a metric and its threshold;
    AdkError naming `source` and the field when the criterion is not one."""
    checked = check_criterion(name, criterion, source)
    if name in custom:
        return custom[name], checked.threshold
    if isinstance(checked, TrajectoryCriterion):
        return ToolTrajectory(match=checked.match_type, args=checked.args), checked.threshold
    if name == "response_match_score":
        return ResponseMatch(), checked.threshold
    if isinstance(checked, JudgeCriterion):
        options = checked.judge_model_options
        return FinalResponseMatch(options.judge_model, options.num_samples, name), checked.threshold
    known = "tool_trajectory_avg_score, response_match_score, final_response_match"
    raise AdkError(
        "eval",
        "invalid_input",
        "invalid_criteria",
        f"unknown metric {name!r}: use one of {known}, or pass metrics={{{name!r}: fn}} for your own.",
    )
