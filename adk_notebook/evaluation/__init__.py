"""Evaluation: google-adk's eval sets, scored as google-adk scores them, here or on Ray.

    from adk_notebook.evaluation import EvalSet, assert_passes, evaluate

    evalset = EvalSet.load("home.evalset.json")     # or .test.json; test_config.json beside it
    report = await evaluate(agent, evalset, {"tool_trajectory_avg_score": 1.0}, max_concurrency=8)
    report                                          # a table in a notebook; str(report) elsewhere
    assert_passes(report)                           # in pytest: the failing diffs in the message

`response_match_score` needs `rouge-score` (extra `[eval]`); `executor="ray"` needs `[ray]`.
"""

from .criteria import DEFAULT_CRITERIA
from .evalset import (
    EvalCase,
    EvalContent,
    EvalPart,
    EvalSet,
    IntermediateData,
    Invocation,
    InvocationEvent,
    SessionInput,
    ToolUse,
)
from .evaluate import case_from_events, evaluate, evaluate_sync, run_batch
from .metrics import (
    CustomMetric,
    FinalResponseMatch,
    Metric,
    ResponseMatch,
    ToolTrajectory,
)
from .report import (
    CaseResult,
    EvalReport,
    InvocationResult,
    MetricResult,
    assert_passes,
)

__all__ = [
    "DEFAULT_CRITERIA",
    "CaseResult",
    "CustomMetric",
    "EvalCase",
    "EvalContent",
    "EvalPart",
    "EvalReport",
    "EvalSet",
    "FinalResponseMatch",
    "IntermediateData",
    "Invocation",
    "InvocationEvent",
    "InvocationResult",
    "Metric",
    "MetricResult",
    "ResponseMatch",
    "SessionInput",
    "ToolTrajectory",
    "ToolUse",
    "assert_passes",
    "case_from_events",
    "evaluate",
    "evaluate_sync",
    "run_batch",
]
