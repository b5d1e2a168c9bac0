"""Files round-trip, every metric scores every invocation, reports show the diff, failures stay local."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

import pytest
from eval_agents import DATA, make_agent

from adk_notebook import AdkError, FunctionModel, LlmAgent, LlmRequest
from adk_notebook.evaluation import (
    EvalSet,
    FinalResponseMatch,
    Invocation,
    ToolTrajectory,
    assert_passes,
    case_from_events,
    evaluate,
    evaluate_sync,
    run_batch,
)
from adk_notebook.evaluation.metrics import metric_from_criterion


def test_a_google_adk_file_saves_back_unchanged(tmp_path: Path) -> None:
    source = json.loads((DATA / "weather.evalset.json").read_text(encoding="utf-8"))
    saved = EvalSet.load(DATA / "weather.evalset.json").save(tmp_path / "again.evalset.json")
    again = json.loads(saved.read_text(encoding="utf-8"))
    case = again["eval_cases"][0]
    assert case["reviewed_by"] == "a field google-adk does not know, kept as is"
    camel = again["eval_cases"][5]["conversation"][0]  # read from camelCase, written as google-adk writes
    assert camel["user_content"] == {
        "parts": [{"text": "Hi, who am I?"}],
        "role": "user",
    }
    source["eval_cases"][5]["conversation"][0] = camel
    assert again == source


def test_bad_files_say_what_is_wrong(tmp_path: Path) -> None:
    (tmp_path / "x.evalset.json").write_text('{"eval_cases": []}')
    with pytest.raises(AdkError, match="eval_set_id"):
        EvalSet.load(tmp_path / "x.evalset.json")
    with pytest.raises(AdkError, match="cannot read"):
        EvalSet.load(tmp_path / "missing.evalset.json")
    with pytest.raises(AdkError, match="unknown metric 'speed'"):
        evaluate_sync(make_agent, DATA / "weather.evalset.json", {"speed": 1.0})
    with pytest.raises(AdkError, match="threshold"):
        evaluate_sync(make_agent, DATA / "weather.evalset.json", {"response_match_score": "high"})


async def test_every_metric_scores_every_invocation_and_the_report_shows_the_diff() -> None:
    report = await evaluate(
        make_agent,
        DATA / "weather.evalset.json",
        {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.5},
    )
    swapped = next(c for c in report.cases if c.eval_id == "swapped")
    assert swapped.status == "failed"  # the trajectory failed; ROUGE still scored
    assert swapped.metrics["response_match_score"].score == pytest.approx(0.875)
    assert not report.passed
    text = str(report)
    assert 'get_weather({"city": "Oslo"}), get_time({"city": "Oslo"})' in text  # expected
    assert 'get_time({"city": "Oslo"}), get_weather({"city": "Oslo"})' in text  # actual
    with pytest.raises(AssertionError) as failed:
        assert_passes(report)
    message = str(failed.value)
    assert "FAILED  swapped" in message and "exact_match" not in message  # only failing cases, in full
    data = json.loads(report.to_json())
    assert data["cases"][2]["invocations"][0]["actual_tool_calls"][0] == {
        "name": "get_time",
        "args": {"city": "Oslo"},
    }
    assert data["cases"][0]["status"] == "passed"


async def test_the_html_table_escapes_model_and_tool_text() -> None:
    evalset = EvalSet(eval_set_id="<b>set</b>")
    evalset.eval_cases.append(case_from_events([], "<script>alert(1)</script>"))
    evalset.eval_cases[0].conversation.append(Invocation.build("<img src=x onerror=alert(1)>", "<i>answer</i>"))
    report = await evaluate(make_agent, evalset, {"response_match_score": 0.5})
    html = report._repr_html_()
    assert "<script>" not in html and "<img" not in html and "<i>answer" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;img src=x onerror=alert(1)&gt;" in html


async def test_custom_metrics_and_a_failing_agent_leave_the_other_cases_alone() -> None:
    def polite(expected: Invocation, actual: Invocation) -> float:
        return 1.0 if "please" in actual.response_text.lower() else 0.0

    calls = 0

    def factory() -> LlmAgent:
        nonlocal calls
        calls += 1
        return make_agent() if calls != 2 else LlmAgent(name="weather", model=FunctionModel(_broken))

    report = await evaluate(
        factory,
        DATA / "weather.evalset.json",
        {"polite": 0.5, "tool_trajectory_avg_score": 1.0},
        metrics={"polite": polite},
    )
    statuses = [c.status for c in report.cases]
    assert statuses.count("error") == 1 and "model is down" in (report.cases[1].error or "")
    assert (
        report.cases[0].metrics["polite"].score == 0.0 and report.cases[0].metrics["tool_trajectory_avg_score"].passed
    )
    with pytest.raises(AdkError, match="no threshold"):
        await evaluate(make_agent, DATA / "weather.evalset.json", {}, metrics={"polite": polite})


def _broken(request: LlmRequest) -> str:
    raise AdkError.model("model is down", category="unavailable")


async def test_the_judge_samples_at_once_and_takes_the_majority() -> None:
    verdicts = [
        '{"is_the_agent_response_valid": "valid"}',
        "no verdict",
        '{"is_the_agent_response_valid": "invalid"}',
        '{"reasoning": "same", "is_the_agent_response_valid": "valid"}',
    ]
    asked: Counter[str] = Counter()
    in_flight = most = 0

    async def judge(request: LlmRequest) -> str:
        nonlocal in_flight, most
        prompt = request.contents[-1].text
        asked[prompt] += 1
        verdict = verdicts[(asked[prompt] - 1) % 4]
        in_flight += 1
        most = max(most, in_flight)
        await asyncio.sleep(0.01)
        in_flight -= 1
        return verdict

    metric = FinalResponseMatch(judge=FunctionModel(judge), samples=4)
    report = await evaluate(
        make_agent,
        DATA / "weather.evalset.json",
        {"final_response_match": 0.5},
        metrics={"final_response_match": metric},
    )
    assert sorted(asked.values()) == [4] * 8  # every invocation, four samples each
    assert most >= 4  # the samples of an invocation were asked at the same time
    assert any("It rains in Paris right now." in p for p in asked)  # the reference reaches the judge
    assert all(c.metrics["final_response_match"].score == 1.0 for c in report.cases)  # 2 valid, 1 invalid, 1 none


def test_test_config_criteria_choose_the_metric_options() -> None:
    judge = {
        "threshold": 0.8,
        "judge_model_options": {"judge_model": "openai:gpt-4o-mini", "num_samples": 3},
    }
    metric, threshold = metric_from_criterion("final_response_match_v2", judge, {})
    assert metric == FinalResponseMatch(judge="openai:gpt-4o-mini", samples=3, name="final_response_match_v2")
    assert threshold == 0.8
    camel = {"threshold": 1, "matchType": "ANY_ORDER", "ignoreArgs": True}
    assert metric_from_criterion("tool_trajectory_avg_score", camel, {})[0] == ToolTrajectory("any_order", "ignore")
    with pytest.raises(AdkError, match="EXACT, IN_ORDER or ANY_ORDER"):
        metric_from_criterion("tool_trajectory_avg_score", {"threshold": 1, "match_type": "SOME"}, {})


async def test_cases_run_concurrently_and_run_batch_keeps_the_order() -> None:
    report = await evaluate(make_agent, DATA / "weather.evalset.json", max_concurrency=4)
    sequential = await evaluate(make_agent, DATA / "weather.evalset.json")
    assert report.to_json() != "" and [c.metrics for c in report.cases] == [c.metrics for c in sequential.cases]
    results = await run_batch(make_agent, ["Weather in Tokyo?", "Weather in Lima?"], max_concurrency=2)
    assert [r.text for r in results if not isinstance(r, AdkError)] == [
        "It is sunny in Tokyo.",
        "Foggy in Lima at 18 degrees celsius.",
    ]


def test_an_agent_object_cannot_go_to_ray() -> None:
    with pytest.raises(AdkError, match="zero-argument function"):
        evaluate_sync(make_agent(), DATA / "weather.evalset.json", executor="ray")
