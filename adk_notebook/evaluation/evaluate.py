"""Run an eval set against an agent and score it: `evaluate`, `evaluate_sync`, `run_batch`.

Each case runs in a fresh session holding its `session_input` state, its user turns replayed
in order; what the agent did in each turn becomes an actual `Invocation` (tool calls in order,
the final answer). Every metric then scores every invocation — none stops the others — and a
case passes when each metric's mean meets its threshold. A case that cannot run is `error`,
with the turns it did finish; the other cases go on.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._sync import run_sync
from ..agents.base import Agent
from ..core.content import Content, Part
from ..core.errors import AdkError
from ..core.events import Event
from ..runner import Runner, RunResult
from ..sessions.in_memory import InMemorySessionService
from .criteria import CRITERIA_SOURCE, check_criteria
from .evalset import (
    EvalCase,
    EvalContent,
    EvalSet,
    IntermediateData,
    Invocation,
    SessionInput,
    ToolUse,
)
from .executors import AgentSource, Executor, map_agent
from .metrics import CustomMetric, Metric, ScoreFunction, metric_from_criterion
from .report import CaseResult, EvalReport, InvocationResult, MetricResult

__all__ = ["case_from_events", "evaluate", "evaluate_sync", "run_batch"]


@dataclass(slots=True)
class CaseRun:
    """What replaying one case produced (picklable, so it can come back from a Ray worker)."""

    invocations: list[Invocation] = field(default_factory=list)
    error: str | None = None


async def evaluate(
    agent: AgentSource,
    evalset: EvalSet | str | Path,
    criteria: Mapping[str, Any] | None = None,
    *,
    metrics: Mapping[str, Metric | ScoreFunction] | None = None,
    max_concurrency: int = 1,
    executor: Executor = "local",
    ray_address: str | None = None,
    ray_options: Mapping[str, Any] | None = None,
) -> EvalReport:
    """Replay every case of `evalset` on `agent` and score it.

    Args:
        agent: An agent, or a zero-argument function building one (required for Ray: it runs
            on the worker).
        evalset: An `EvalSet`, or the path of a google-adk `.evalset.json` / `.test.json` file.
        criteria: Metric name → threshold (or a `test_config.json` criterion object); default:
            the eval set's `test_config.json`, else google-adk's defaults.
        metrics: Your own metrics by name, each a `Metric` or `fn(expected, actual) -> score`;
            give each a threshold in `criteria`.
        max_concurrency: Cases run at the same time (locally).
        executor: "local", or "ray" to run each case as a Ray task.
        ray_address: A Ray cluster's address; None starts a local Ray for this run (unless one
            is already running in this process).
        ray_options: More `ray.init` arguments for a Ray this run starts, e.g. `{"num_cpus": 2}`.
    """
    if not isinstance(evalset, EvalSet):
        evalset = EvalSet.load(evalset)
    custom: dict[str, Metric] = {
        name: m if isinstance(m, Metric) else CustomMetric(name, m) for name, m in (metrics or {}).items()
    }
    chosen = evalset.criteria if criteria is None else criteria
    check_criteria(chosen, CRITERIA_SOURCE)  # every problem told at once, before any case runs
    unjudged = sorted(set(custom) - set(chosen))
    if unjudged:
        raise AdkError(
            "eval",
            "invalid_input",
            "missing_threshold",
            f"metrics {unjudged} have no threshold: add them to criteria, e.g. {{{unjudged[0]!r}: 0.5}}.",
        )
    scorers = [metric_from_criterion(name, value, custom) for name, value in chosen.items()]
    runs = await map_agent(
        agent,
        run_case,
        evalset.eval_cases,
        _lost_case,
        executor=executor,
        max_concurrency=max_concurrency,
        ray_address=ray_address,
        ray_options=ray_options,
    )
    cases = await asyncio.gather(
        *(_score(case, run, scorers) for case, run in zip(evalset.eval_cases, runs, strict=True))
    )
    thresholds = {metric.name: threshold for metric, threshold in scorers}
    return EvalReport(evalset.eval_set_id, thresholds, list(cases))


def evaluate_sync(
    agent: AgentSource,
    evalset: EvalSet | str | Path,
    criteria: Mapping[str, Any] | None = None,
    **options: Any,
) -> EvalReport:
    """The blocking form of `evaluate`, for scripts and pytest (also safe inside a kernel)."""
    return run_sync(evaluate(agent, evalset, criteria, **options))


async def run_batch(
    agent: AgentSource,
    inputs: Iterable[str | Content],
    *,
    max_concurrency: int = 1,
    executor: Executor = "local",
    ray_address: str | None = None,
    ray_options: Mapping[str, Any] | None = None,
) -> list[RunResult | AdkError]:
    """Run one agent over many messages, each in a new session: a `RunResult` per input, in order,
    or the `AdkError` that ended it."""
    return await map_agent(
        agent,
        _run_one,
        list(inputs),
        _lost_input,
        executor=executor,
        max_concurrency=max_concurrency,
        ray_address=ray_address,
        ray_options=ray_options,
    )


async def run_case(agent: Agent, case: EvalCase) -> CaseRun:
    """Replay a case's user turns in a fresh session; never raises (a failure ends the run with `error`)."""
    start = case.session_input or SessionInput()
    app = start.app_name or agent.name
    sessions = InMemorySessionService()
    runner = Runner(app_name=app, agent=agent, session_service=sessions)
    run = CaseRun()
    try:
        session = await sessions.create(app_name=app, user_id=start.user_id, state=dict(start.state))
        for expected in case.conversation:
            message = Content(
                "user",
                [Part(text=p.text) for p in expected.user_content.parts if p.text is not None],
            )
            result = await runner.run_to_result(user_id=start.user_id, session_id=session.id, content=message)
            run.invocations.append(_invocation(expected.user_content, result.events, result.text))
    except Exception as exc:  # noqa: BLE001 - the case is marked error; the others go on
        run.error = str(exc) or type(exc).__name__
    return run


def case_from_events(
    events: Sequence[Event],
    eval_id: str,
    state: Mapping[str, Any] | None = None,
    app_name: str = "",
    user_id: str = "user",
) -> EvalCase:
    """An eval case from a conversation that ran: one invocation per user message, with the tool
    calls and the answer that followed it (google-adk's web UI "add current session")."""
    turns: list[tuple[EvalContent, list[Event]]] = []
    for event in events:
        if event.partial:
            continue
        if event.author == "user" and event.content is not None and not event.function_responses():
            turns.append((EvalContent.from_text(event.text, "user"), []))
        elif turns:
            turns[-1][1].append(event)
    conversation = [_invocation(user, after, RunResult.from_events(after, "", {}).text) for user, after in turns]
    start = SessionInput(app_name=app_name, user_id=user_id, state=dict(state or {}))
    return EvalCase(
        eval_id=eval_id,
        conversation=conversation,
        session_input=start,
        creation_timestamp=conversation[0].creation_timestamp if conversation else 0.0,
    )


def _invocation(user: EvalContent, events: Iterable[Event], answer: str) -> Invocation:
    calls = [
        ToolUse(name=c.name, args=c.args, id=c.id)
        for e in events
        if not e.partial and e.author != "user"
        for c in e.function_calls()
    ]
    return Invocation(
        invocation_id=f"e-{uuid.uuid4()}",
        user_content=user.model_copy(deep=True),
        final_response=EvalContent.from_text(answer, "model"),
        intermediate_data=IntermediateData(tool_uses=calls),
        creation_timestamp=time.time(),
    )


async def _score(case: EvalCase, run: CaseRun, scorers: list[tuple[Metric, float]]) -> CaseResult:
    pairs = list(zip(case.conversation, run.invocations, strict=False))
    result = CaseResult(case.eval_id, [InvocationResult(e, a) for e, a in pairs], error=run.error)
    problems: list[str] = []

    async def one(metric: Metric, expected: Invocation, actual: Invocation) -> float | None:
        try:
            return await metric.score(expected, actual)
        except Exception as exc:  # noqa: BLE001 - one metric failing never stops the others
            problems.append(f"{metric.name}: {exc}")
            return None

    for invocation in result.invocations:
        scores = await asyncio.gather(*(one(m, invocation.expected, invocation.actual) for m, _ in scorers))
        invocation.scores = {m.name: s for (m, _), s in zip(scorers, scores, strict=True)}
    for metric, threshold in scorers:
        values = [s for i in result.invocations if (s := i.scores[metric.name]) is not None]
        result.metrics[metric.name] = MetricResult(
            metric.name, sum(values) / len(values) if values else None, threshold
        )
    if problems and result.error is None:
        result.error = "; ".join(dict.fromkeys(problems))
    return result


def _lost_case(case: EvalCase, reason: str) -> CaseRun:
    return CaseRun(error=f"the worker running it failed: {reason}")


async def _run_one(agent: Agent, message: str | Content) -> RunResult | AdkError:
    try:
        return await agent.run_async(message)
    except AdkError as exc:
        return exc
    except Exception as exc:  # noqa: BLE001 - returned in its place; the batch goes on
        return AdkError("agent", "internal", "run_failed", f"{type(exc).__name__}: {exc}")


def _lost_input(message: str | Content, reason: str) -> AdkError:
    return AdkError(
        "eval",
        "unavailable",
        "worker_failed",
        f"the worker running it failed: {reason}",
    )
