"""google-adk's criteria (`test_config.json`, or `evaluate(criteria=...)`), checked when read.

A criterion maps a metric's name to its threshold, or to an object with `threshold` and the
metric's options: `match_type` (and this project's `args_match`) for
`tool_trajectory_avg_score`, `judge_model_options` for the LLM judge. A threshold is a score,
a finite number from 0 to 1; `num_samples` a whole number above 0. Metrics and options this
project does not know are kept, as google-adk may add them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator

from ..core.errors import AdkError
from ..core.json_text import json_kind, shown
from ._files import FileModel, field_path, problem_lines, read_json

__all__ = [
    "CRITERIA_SOURCE",
    "DEFAULT_CRITERIA",
    "ArgsMatch",
    "Criterion",
    "JudgeCriterion",
    "JudgeOptions",
    "MatchType",
    "TrajectoryCriterion",
    "check_criteria",
    "check_criterion",
    "load_criteria",
]

# google-adk's AgentEvaluator.DEFAULT_CRITERIA, used when no test_config.json says otherwise.
DEFAULT_CRITERIA: dict[str, Any] = {
    "tool_trajectory_avg_score": 1.0,
    "response_match_score": 0.8,
}

#: How errors name criteria given in code rather than in a file.
CRITERIA_SOURCE = "evaluate's criteria"

MatchType = Literal["exact", "in_order", "any_order"]
ArgsMatch = Literal["exact", "ignore", "subset"]

# google-adk's ToolTrajectoryCriterion.MatchType, by name or by its enum value.
_MATCH_TYPES: dict[str, MatchType] = {
    "EXACT": "exact",
    "IN_ORDER": "in_order",
    "ANY_ORDER": "any_order",
    "0": "exact",
    "1": "in_order",
    "2": "any_order",
}

Score = Annotated[float, Field(ge=0.0, le=1.0, strict=True, allow_inf_nan=False)]


class Criterion(FileModel):
    """Any metric's criterion: the mean score a case needs."""

    threshold: Score


class TrajectoryCriterion(Criterion):
    """`tool_trajectory_avg_score`: how calls are matched (google-adk's EXACT / IN_ORDER / ANY_ORDER)."""

    match_type: MatchType = "exact"
    args_match: ArgsMatch | None = None
    ignore_args: bool = False

    @field_validator("match_type", mode="before")
    @classmethod
    def _google_adk_name(cls, value: Any) -> MatchType:
        found = _MATCH_TYPES.get(str(value).upper()) if isinstance(value, str | int) else None
        if found is None:
            raise ValueError("should be EXACT, IN_ORDER or ANY_ORDER")
        return found

    @property
    def args(self) -> ArgsMatch:
        """How arguments compare: `args_match`, else google-adk's `ignore_args`."""
        return self.args_match or ("ignore" if self.ignore_args else "exact")


class JudgeOptions(FileModel):
    """google-adk's JudgeModelOptions: which model judges, and how many times it is asked."""

    judge_model: str = "gemini-2.5-flash"
    num_samples: Annotated[int, Field(gt=0, strict=True)] = 5


class JudgeCriterion(Criterion):
    """`final_response_match` (google-adk: `final_response_match_v2`): the LLM judge's options."""

    judge_model_options: JudgeOptions = Field(default_factory=JudgeOptions)


_KINDS: dict[str, type[Criterion]] = {
    "tool_trajectory_avg_score": TrajectoryCriterion,
    "response_match_score": Criterion,
    "final_response_match": JudgeCriterion,
    "final_response_match_v2": JudgeCriterion,
}


def check_criterion(name: str, value: Any, source: str) -> Criterion:
    """`value` as the checked criterion of metric `name`; AdkError naming `source` and the field."""
    criterion, lines = _checked(name, value, source)
    if criterion is None:
        raise _error("\n".join(lines))
    return criterion


def check_criteria(criteria: Any, source: str) -> None:
    """Check every criterion of a `criteria` object; AdkError telling every problem at once, one line each."""
    if not isinstance(criteria, Mapping):
        raise _error(
            f'{source}: criteria should be an object of metric name → threshold, e.g. {{"criteria": '
            f"{json.dumps(DEFAULT_CRITERIA)}}} (got {json_kind(criteria)})."
        )
    lines = [line for name, value in criteria.items() for line in _checked(name, value, source)[1]]
    if lines:
        raise _error("\n".join(lines))


def load_criteria(config: Path) -> dict[str, Any]:
    """The checked `criteria` of a `test_config.json`, or google-adk's defaults when the file is absent."""
    if not config.exists():
        return dict(DEFAULT_CRITERIA)
    data = read_json(config, "test_config.json", _error)
    name = repr(str(config))
    if not isinstance(data, dict):
        raise _error(
            f'{name} holds {json_kind(data)} at the top level; it should be an object: {{"criteria": {{...}}}}.'
        )
    if "criteria" not in data:
        raise _error(f'{name}: criteria is missing, e.g. {{"criteria": {json.dumps(DEFAULT_CRITERIA)}}}.')
    check_criteria(data["criteria"], name)
    return dict(data["criteria"])


def _checked(name: str, value: Any, source: str) -> tuple[Criterion | None, list[str]]:
    place = f"criteria.{name}"
    kind = _KINDS.get(name, Criterion)
    if isinstance(value, dict):
        data = value
    elif isinstance(value, int | float) and not isinstance(value, bool):
        data = {"threshold": value}  # the bare form: its problem is the criterion's own value
    else:
        example = '{"threshold": 1.0, "match_type": "IN_ORDER"}' if kind is TrajectoryCriterion else "0.8"
        return None, [
            f"{source}: {place} should be a threshold (a number from 0 to 1) or an object with "
            f'"threshold", e.g. {example} (got {shown(value)})'
        ]
    try:
        return kind.model_validate(data), []
    except ValidationError as exc:
        return None, problem_lines(exc, lambda loc: (f"{source}: ", field_path(loc, place) if data is value else place))


def _error(message: str) -> AdkError:
    return AdkError("eval", "invalid_input", "invalid_criteria", message)
