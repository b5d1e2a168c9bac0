"""google-adk's own evaluators score the invocations of tests/evaluation/data/actual.json.

Run in the google-adk venv (`python bench/eval.py --google-adk-scores` makes it and runs this):
`python google_adk_eval.py DATA_DIR`; prints one JSON line: for every case of the eval sets in
DATA_DIR, each metric variant's overall score and per-invocation scores. tests/evaluation keep
these numbers and check that adk-notebook gives the same ones for the same invocations.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from google.adk import version
from google.adk.evaluation.agent_evaluator import AgentEvaluator
from google.adk.evaluation.eval_case import IntermediateData, Invocation
from google.adk.evaluation.eval_metrics import EvalMetric, ToolTrajectoryCriterion
from google.adk.evaluation.eval_set import EvalSet
from google.adk.evaluation.final_response_match_v1 import RougeEvaluator
from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator
from google.genai import types


def actual(expected: Invocation, plays: dict, state: dict) -> Invocation:
    """What the scripted agent does for this user message, as google-adk's Invocation."""
    message = "\n".join(p.text for p in expected.user_content.parts if p.text)
    play = plays[message]
    answer = play["answer"].replace("{user_name}", state.get("user_name", ""))
    return Invocation(
        user_content=expected.user_content,
        final_response=types.Content(role="model", parts=[types.Part(text=answer)]),
        intermediate_data=IntermediateData(
            tool_uses=[types.FunctionCall(name=name, args=args) for name, args in play["calls"]]
        ),
    )


def scores(expected: list[Invocation], actual_: list[Invocation]) -> dict:
    out = {}
    for match in ("EXACT", "IN_ORDER", "ANY_ORDER"):
        for ignore_args in (False, True):
            criterion = ToolTrajectoryCriterion(threshold=1.0, match_type=match, ignore_args=ignore_args)
            metric = EvalMetric(metric_name="tool_trajectory_avg_score", criterion=criterion)
            result = TrajectoryEvaluator(eval_metric=metric).evaluate_invocations(actual_, expected)
            key = f"trajectory/{match.lower()}/{'ignore' if ignore_args else 'exact'}"
            out[key] = [
                result.overall_score,
                [r.score for r in result.per_invocation_results],
            ]
    rouge = RougeEvaluator(EvalMetric(metric_name="response_match_score", threshold=0.8))
    result = rouge.evaluate_invocations(actual_, expected)
    out["response_match_score"] = [
        result.overall_score,
        [r.score for r in result.per_invocation_results],
    ]
    return out


def main(data: Path) -> None:
    plays = json.loads((data / "actual.json").read_text(encoding="utf-8"))
    cases = {}
    evalset = EvalSet.model_validate_json((data / "weather.evalset.json").read_text(encoding="utf-8"))
    old = str(data / "legacy" / "home.test.json")
    config = AgentEvaluator.find_config_for_test_file(old)  # test_config.json beside it
    legacy = AgentEvaluator._load_eval_set_from_file(old, config, {})
    for case in [
        *evalset.eval_cases,
        *(c.model_copy(update={"eval_id": "legacy"}) for c in legacy.eval_cases),
    ]:
        state = case.session_input.state if case.session_input else {}
        cases[case.eval_id] = scores(case.conversation, [actual(e, plays, state) for e in case.conversation])
    criteria = {k: getattr(v, "threshold", v) for k, v in config.criteria.items()}
    print(
        json.dumps(
            {
                "google_adk": version.__version__,
                "legacy_criteria": criteria,
                "cases": cases,
            },
            sort_keys=True,
        )
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
