"""Our scores equal google-adk's for the same invocations, on eval-set files in both of its shapes.

`data/google_adk_scores.json` is what google-adk's own TrajectoryEvaluator and RougeEvaluator
(google-adk 2.13.0) gave for the invocations of `data/actual.json`, printed by
`python bench/eval.py --google-adk-scores` (bench/peers/google_adk_eval.py in a throwaway venv).
Here the scripted agent of `eval_agents.py` really runs, and adk-notebook scores what it did.
"""

from __future__ import annotations

import json

import pytest
from eval_agents import DATA, make_agent

from adk_notebook.evaluation import EvalReport, EvalSet, evaluate

GOOGLE_ADK = json.loads((DATA / "google_adk_scores.json").read_text(encoding="utf-8"))["cases"]
MATCHES = [(m, a) for m in ("exact", "in_order", "any_order") for a in ("exact", "ignore")]


def evalsets() -> dict[str, EvalSet]:
    weather = EvalSet.load(DATA / "weather.evalset.json")
    legacy = EvalSet.load(DATA / "legacy" / "home.test.json")
    legacy.eval_cases[0].eval_id = "legacy"
    return {"weather": weather, "legacy": legacy}


async def run(evalset: EvalSet, match: str, args: str) -> EvalReport:
    trajectory = {
        "threshold": 1.0,
        "match_type": match.upper(),
        "ignore_args": args == "ignore",
    }
    return await evaluate(
        make_agent,
        evalset,
        {"tool_trajectory_avg_score": trajectory, "response_match_score": 0.8},
    )


@pytest.mark.parametrize(("match", "args"), MATCHES)
async def test_trajectory_and_rouge_scores_equal_google_adks(match: str, args: str) -> None:
    for evalset in evalsets().values():
        report = await run(evalset, match, args)
        for case in report.cases:
            assert case.error is None, case.text()
            theirs = GOOGLE_ADK[case.eval_id]
            overall, per_invocation = theirs[f"trajectory/{match}/{args}"]
            trajectory = case.metrics["tool_trajectory_avg_score"]
            assert trajectory.score == overall, case.text()
            assert [i.scores["tool_trajectory_avg_score"] for i in case.invocations] == per_invocation
            overall, per_invocation = theirs["response_match_score"]
            assert case.metrics["response_match_score"].score == pytest.approx(overall, abs=1e-12), case.text()
            assert [i.scores["response_match_score"] for i in case.invocations] == pytest.approx(per_invocation)


async def test_the_modes_tell_the_cases_apart() -> None:
    """What each mode is for, in the numbers google-adk agrees with (above)."""
    weather = evalsets()["weather"]
    passed = {}
    for match, args in MATCHES:
        report = await run(weather, match, args)
        passed[match, args] = sorted(c.eval_id for c in report.cases if c.metrics["tool_trajectory_avg_score"].passed)
    assert "extra_call" not in passed["exact", "exact"] and "extra_call" in passed["in_order", "exact"]
    assert "swapped" not in passed["in_order", "exact"] and "swapped" in passed["any_order", "exact"]
    assert "more_args" not in passed["any_order", "exact"] and "more_args" in passed["exact", "ignore"]


async def test_args_subset_accepts_more_actual_args_not_fewer() -> None:
    weather = evalsets()["weather"]
    criteria = {
        "tool_trajectory_avg_score": {
            "threshold": 1.0,
            "match_type": "EXACT",
            "args_match": "subset",
        }
    }
    report = await evaluate(make_agent, weather, criteria)
    scores = {c.eval_id: c.metrics["tool_trajectory_avg_score"].score for c in report.cases}
    assert scores["more_args"] == 1.0  # expected {city}, called {city, unit}
    assert scores["fewer_args"] == 0.0  # expected {city, unit}, called {city}
    assert scores["exact_match"] == 1.0 and scores["swapped"] == 0.0


async def test_old_test_json_takes_its_criteria_from_test_config() -> None:
    legacy = evalsets()["legacy"]
    assert legacy.criteria == GOOGLE_ADK_CRITERIA
    report = await evaluate(make_agent, legacy)  # no criteria: test_config.json's
    assert report.criteria == {
        "tool_trajectory_avg_score": 1.0,
        "response_match_score": 0.6,
    }
    (case,) = report.cases
    assert [i.expected.user_text for i in case.invocations] == [
        "Turn on the kitchen light",
        "Is the kitchen light on?",
    ]
    assert [c.name for i in case.invocations for c in i.actual.tool_uses] == [
        "set_light",
        "get_light",
    ]
    assert report.passed, str(report)


GOOGLE_ADK_CRITERIA = json.loads((DATA / "google_adk_scores.json").read_text(encoding="utf-8"))["legacy_criteria"]
