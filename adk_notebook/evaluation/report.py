"""What an evaluation found: per case and invocation, expected vs actual, every score.

`EvalReport` is a table in a notebook (`_repr_html_`, every value escaped), text in a terminal
(`str`), JSON for files and CI (`to_json`); `assert_passes(report)` fails a pytest test with the
failing cases' diffs in its message.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from html import escape
from typing import Any, Literal

from .evalset import Invocation, ToolUse

__all__ = [
    "CaseResult",
    "EvalReport",
    "InvocationResult",
    "MetricResult",
    "assert_passes",
]

Status = Literal["passed", "failed", "error"]


@dataclass(slots=True)
class MetricResult:
    """A metric over a whole case: the mean of its invocation scores against the threshold."""

    name: str
    score: float | None
    threshold: float

    @property
    def passed(self) -> bool:
        return self.score is not None and self.score >= self.threshold


@dataclass(slots=True)
class InvocationResult:
    """One user turn: what was expected, what the agent did, and each metric's score."""

    expected: Invocation
    actual: Invocation
    scores: dict[str, float | None] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "user": self.expected.user_text,
            "expected_tool_calls": [_call_dict(c) for c in self.expected.tool_uses],
            "actual_tool_calls": [_call_dict(c) for c in self.actual.tool_uses],
            "expected_response": self.expected.response_text,
            "actual_response": self.actual.response_text,
            "scores": self.scores,
        }


@dataclass(slots=True)
class CaseResult:
    """One eval case: passed when every metric meets its threshold; `error` when it could not run."""

    eval_id: str
    invocations: list[InvocationResult] = field(default_factory=list)
    metrics: dict[str, MetricResult] = field(default_factory=dict)
    error: str | None = None

    @property
    def status(self) -> Status:
        if self.error is not None:
            return "error"
        return "passed" if all(m.passed for m in self.metrics.values()) else "failed"

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def to_dict(self) -> dict[str, Any]:
        return {
            "eval_id": self.eval_id,
            "status": self.status,
            "error": self.error,
            "metrics": {n: {**asdict(m), "passed": m.passed} for n, m in self.metrics.items()},
            "invocations": [i.to_dict() for i in self.invocations],
        }

    def text(self) -> str:
        """The case as plain lines: status, metric scores, and each turn's expected vs actual."""
        scores = ", ".join(
            f"{n} {_num(m.score)} (≥ {m.threshold:g}){'' if m.passed else ' ✗'}" for n, m in self.metrics.items()
        )
        lines = [f"{self.status.upper():7} {self.eval_id}" + (f": {scores}" if scores else "")]
        if self.error is not None:
            lines.append(f"    error: {self.error}")
        for number, inv in enumerate(self.invocations, 1):
            lines.append(f"  [{number}] user: {inv.expected.user_text}")
            lines.append(f"      expected calls: {_calls(inv.expected.tool_uses)}")
            lines.append(f"      actual calls:   {_calls(inv.actual.tool_uses)}")
            lines.append(f"      expected: {inv.expected.response_text}")
            lines.append(f"      actual:   {inv.actual.response_text}")
            lines.append("      scores: " + ", ".join(f"{n} {_num(s)}" for n, s in inv.scores.items()))
        return "\n".join(lines)


@dataclass(slots=True)
class EvalReport:
    """All cases of one evaluation, with the criteria they were held to."""

    eval_set_id: str
    criteria: dict[str, float]
    cases: list[CaseResult] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.cases)

    def summary(self) -> str:
        counts = {s: sum(c.status == s for c in self.cases) for s in ("passed", "failed", "error")}
        means = ", ".join(f"{n} {_num(self.mean(n))}" for n in self.criteria)
        return (
            f"{self.eval_set_id}: {counts['passed']}/{len(self.cases)} cases passed"
            + (f", {counts['failed']} failed" if counts["failed"] else "")
            + (f", {counts['error']} error" if counts["error"] else "")
            + (f"; mean {means}" if means else "")
        )

    def mean(self, metric: str) -> float | None:
        """The mean of a metric's case scores (cases that scored it)."""
        scores = [s for c in self.cases if metric in c.metrics and (s := c.metrics[metric].score) is not None]
        return sum(scores) / len(scores) if scores else None

    def to_json(self, **dumps: Any) -> str:
        data = {
            "eval_set_id": self.eval_set_id,
            "criteria": self.criteria,
            "passed": self.passed,
            "cases": [c.to_dict() for c in self.cases],
        }
        return json.dumps(data, ensure_ascii=False, **dumps)

    def __str__(self) -> str:
        return "\n".join([self.summary(), *(c.text() for c in self.cases)])

    def __repr__(self) -> str:
        return f"EvalReport({self.summary()!r})"

    def _repr_html_(self) -> str:
        names = list(self.criteria)
        head = "".join(f"<th>{escape(n)}<br><small>≥ {t:g}</small></th>" for n, t in self.criteria.items())
        rows = []
        for case in self.cases:
            span = max(len(case.invocations), 1)
            first = (
                f'<td rowspan="{span}"><b>{escape(case.eval_id)}</b><br>'
                f'<span class="adk-eval-{case.status}">{case.status}</span>'
                + (f"<br><small>{escape(case.error)}</small>" if case.error else "")
                + "</td>"
            )
            case_scores = "".join(_score_cell(case.metrics.get(n), span) for n in names)
            if not case.invocations:
                rows.append(f"<tr>{first}<td colspan=5></td>{case_scores}</tr>")
            for number, inv in enumerate(case.invocations):
                cells = (
                    f"<td>{escape(inv.expected.user_text)}</td>"
                    f"<td><code>{escape(_calls(inv.expected.tool_uses))}</code></td>"
                    f"<td><code>{escape(_calls(inv.actual.tool_uses))}</code></td>"
                    f"<td>{escape(inv.actual.response_text)}<br><small>expected: "
                    f"{escape(inv.expected.response_text)}</small></td>"
                )
                turn = "".join(f"<small>{escape(n)}: {_num(inv.scores.get(n))}</small><br>" for n in inv.scores)
                lead, tail = (first, case_scores) if number == 0 else ("", "")
                rows.append(f"<tr>{lead}{cells}<td>{turn}</td>{tail}</tr>")
        return (
            f"<div class='adk-eval'><p><b>{escape(self.summary())}</b></p>"
            "<style>.adk-eval-passed{color:#1a7f37}.adk-eval-failed{color:#cf222e}"
            ".adk-eval-error{color:#9a6700}.adk-eval td{vertical-align:top;text-align:left}</style>"
            "<table><thead><tr><th>case</th><th>user</th><th>expected calls</th><th>actual calls</th>"
            f"<th>response</th><th>turn scores</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
        )


def assert_passes(report: EvalReport) -> None:
    """Fail (AssertionError) unless every case passed; the message shows each failing case in full."""
    failing = [c for c in report.cases if not c.passed]
    if failing:
        raise AssertionError("\n".join([report.summary(), *(c.text() for c in failing)]))


def _score_cell(metric: MetricResult | None, rows: int) -> str:
    if metric is None:
        return f'<td rowspan="{rows}"></td>'
    status = "passed" if metric.passed else "failed"
    return f'<td rowspan="{rows}" class="adk-eval-{status}">{_num(metric.score)}</td>'


def _num(score: float | None) -> str:
    return "—" if score is None else f"{score:.3f}"


def _call_dict(call: ToolUse) -> dict[str, Any]:
    return {"name": call.name, "args": call.args}


def _calls(calls: list[ToolUse]) -> str:
    return ", ".join(f"{c.name}({json.dumps(c.args, ensure_ascii=False, sort_keys=True)})" for c in calls) or "—"
