"""Damaged eval files: a clear error naming where, never a silent accept.

Each damaged `.evalset.json`, `.test.json` and `test_config.json` below is one a hand edit, a
half-finished save or another tool can leave. Loading it must raise AdkError whose message
names the file, the case (eval_id, or the turn of a `.test.json`) and the field, one line per
problem, in words (no pydantic internals). Fields google-adk may add later stay accepted.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from adk_notebook import AdkError
from adk_notebook.evaluation import EvalSet, evaluate_sync

CASE: dict[str, Any] = {
    "eval_id": "lights_on",
    "conversation": [
        {
            "invocation_id": "i-1",
            "user_content": {"parts": [{"text": "Turn on the kitchen light"}], "role": "user"},
            "final_response": {"parts": [{"text": "The kitchen light is on."}], "role": "model"},
            "intermediate_data": {"tool_uses": [{"name": "set_light", "args": {"room": "kitchen", "on": True}}]},
        }
    ],
}
EVALSET: dict[str, Any] = {"eval_set_id": "home", "eval_cases": [{**copy.deepcopy(CASE), "eval_id": "first"}, CASE]}
TURNS: list[dict[str, Any]] = [
    {"query": "Hi", "reference": "Hello."},
    {
        "query": "Turn on the kitchen light",
        "expected_tool_use": [{"tool_name": "set_light", "tool_input": {"room": "kitchen"}}],
        "reference": "Done.",
    },
]


def damaged_case(**invocation: Any) -> str:
    """The eval set with the second case's first invocation changed (None removes a field)."""
    data = copy.deepcopy(EVALSET)
    target = data["eval_cases"][1]["conversation"][0]
    for key, value in invocation.items():
        if value is None:
            del target[key]
        else:
            target[key] = value
    return json.dumps(data)


def with_case(**fields: Any) -> str:
    data = copy.deepcopy(EVALSET)
    data["eval_cases"][1].update(fields)
    return json.dumps(data)


def calls(tool_uses: Any) -> dict[str, Any]:
    return {"tool_uses": tool_uses}


# (what, file name, text, fragments the message must hold besides the file's path)
EVALSET_DAMAGE: list[tuple[str, str, str, list[str]]] = [
    (
        "conversation a string",
        "h.evalset.json",
        with_case(conversation="Turn on the light"),
        ["case 'lights_on'", "conversation", "list"],
    ),
    ("conversation an object", "h.evalset.json", with_case(conversation={"a": 1}), ["'lights_on'", "conversation"]),
    (
        "user_content without parts",
        "h.evalset.json",
        damaged_case(user_content={"role": "user"}),
        ["'lights_on'", "conversation[0].user_content", "parts"],
    ),
    (
        "parts a string",
        "h.evalset.json",
        damaged_case(user_content={"parts": "hi", "role": "user"}),
        ["'lights_on'", "conversation[0].user_content.parts", "list"],
    ),
    (
        "user_content missing",
        "h.evalset.json",
        damaged_case(user_content=None),
        ["'lights_on'", "conversation[0].user_content", "missing"],
    ),
    (
        "tool_uses not a list",
        "h.evalset.json",
        damaged_case(intermediate_data=calls({"name": "set_light"})),
        ["'lights_on'", "conversation[0].intermediate_data.tool_uses", "list"],
    ),
    (
        "args not an object",
        "h.evalset.json",
        damaged_case(intermediate_data=calls([{"name": "set_light", "args": ["kitchen"]}])),
        ["'lights_on'", "conversation[0].intermediate_data.tool_uses[0].args", "object"],
    ),
    (
        "tool use without name",
        "h.evalset.json",
        damaged_case(intermediate_data=calls([{"args": {}}])),
        ["'lights_on'", "conversation[0].intermediate_data.tool_uses[0].name", "missing"],
    ),
    (
        "timestamp NaN",
        "h.evalset.json",
        damaged_case(creation_timestamp=float("nan")),
        ["'lights_on'", "conversation[0].creation_timestamp", "finite"],
    ),
    ("eval_id a number", "h.evalset.json", with_case(eval_id=7), ["case #2", "eval_id", "string"]),
    ("eval_cases an object", "h.evalset.json", json.dumps({**EVALSET, "eval_cases": {}}), ["eval_cases", "list"]),
    ("a case not an object", "h.evalset.json", json.dumps({**EVALSET, "eval_cases": [3]}), ["case #1", "object"]),
    ("eval_set_id missing", "h.evalset.json", json.dumps({"eval_cases": []}), ["eval_set_id", "missing"]),
    ("truncated", "h.evalset.json", json.dumps(EVALSET)[:150], ["line 1", "cut short"]),
    ("empty", "h.evalset.json", "", ["empty"]),
    ("blank", "h.evalset.json", "  \n", ["empty"]),
    ("top level a number", "h.evalset.json", "42", ["top level", "a number"]),
    ("top level a string", "h.evalset.json", '"home"', ["top level", "a string"]),
    ("top level null", "h.evalset.json", "null", ["top level", "null"]),
    ("not UTF-8", "h.evalset.json", "\udcff", ["UTF-8"]),
    ("turn not an object", "h.test.json", json.dumps([TURNS[0], 5]), ["turn 2", "object"]),
    ("turn without query", "h.test.json", json.dumps([{"reference": "x"}]), ["turn 1", "query", "missing"]),
    (
        "expected_tool_use a string",
        "h.test.json",
        json.dumps([TURNS[0], {**TURNS[1], "expected_tool_use": "set_light"}]),
        ["turn 2", "expected_tool_use", "list"],
    ),
    (
        "tool_input a list",
        "h.test.json",
        json.dumps([{**TURNS[1], "expected_tool_use": [{"tool_name": "set_light", "tool_input": [1]}]}]),
        ["turn 1", "expected_tool_use[0].tool_input", "object"],
    ),
]


def criteria(**values: Any) -> str:
    return json.dumps({"criteria": values})


JUDGE = "final_response_match_v2"
CONFIG_DAMAGE: list[tuple[str, str, list[str]]] = [
    ("threshold NaN", criteria(response_match_score=float("nan")), ["criteria.response_match_score", "finite"]),
    ("threshold Infinity", criteria(response_match_score=float("inf")), ["criteria.response_match_score", "finite"]),
    ("threshold negative", criteria(response_match_score=-0.1), ["criteria.response_match_score", "at least 0"]),
    ("threshold above 1", criteria(tool_trajectory_avg_score=1.5), ["criteria.tool_trajectory_avg_score", "at most 1"]),
    ("threshold a bool", criteria(response_match_score=True), ["criteria.response_match_score", "true"]),
    ("threshold a string", criteria(response_match_score="0.8"), ["criteria.response_match_score", '"0.8"']),
    (
        "threshold NaN in an object",
        criteria(tool_trajectory_avg_score={"threshold": float("nan"), "match_type": "EXACT"}),
        ["criteria.tool_trajectory_avg_score.threshold", "finite"],
    ),
    (
        "custom metric threshold above 1",
        criteria(polite={"threshold": 3}),
        ["criteria.polite.threshold", "at most 1"],
    ),
    (
        "threshold missing",
        criteria(tool_trajectory_avg_score={"match_type": "EXACT"}),
        ["criteria.tool_trajectory_avg_score.threshold", "missing"],
    ),
    ("criterion a list", criteria(response_match_score=[0.8]), ["criteria.response_match_score", "threshold"]),
    ("criterion null", criteria(response_match_score=None), ["criteria.response_match_score", "threshold"]),
    (
        "unknown match type",
        criteria(tool_trajectory_avg_score={"threshold": 1.0, "match_type": "FUZZY"}),
        ["criteria.tool_trajectory_avg_score.match_type", "EXACT, IN_ORDER or ANY_ORDER", '"FUZZY"'],
    ),
    (
        "match type an object",
        criteria(tool_trajectory_avg_score={"threshold": 1.0, "matchType": {"x": 1}}),
        ["criteria.tool_trajectory_avg_score.match_type", "EXACT, IN_ORDER or ANY_ORDER"],
    ),
    *[
        (
            f"num_samples {samples!r}",
            criteria(**{JUDGE: {"threshold": 0.8, "judge_model_options": {"num_samples": samples}}}),
            [f"criteria.{JUDGE}.judge_model_options.num_samples", "above 0" if samples in (0, -3) else "whole number"],
        )
        for samples in (0, -3, 2.5, "3", True, None)
    ],
    (
        "judge options a list",
        criteria(**{JUDGE: {"threshold": 0.8, "judge_model_options": []}}),
        [f"criteria.{JUDGE}.judge_model_options", "object"],
    ),
    ("criteria a list", json.dumps({"criteria": [1]}), ["criteria", "object"]),
    ("criteria missing", json.dumps({"thresholds": {}}), ["criteria", "missing"]),
    ("top level a list", json.dumps([{"criteria": {}}]), ["top level", "a list"]),
    ("empty", "", ["empty"]),
    ("truncated", criteria(response_match_score=0.8)[:20], ["cut short"]),
]


def written(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    return path


def assert_clear(error: AdkError, path: Path, fragments: list[str]) -> None:
    message = error.message
    assert error.code in ("invalid_eval_set", "invalid_criteria"), repr(error)
    assert repr(str(path)) in message, message
    assert "'first'" not in message, message  # only the damaged case is named
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in: {message}"
    for internal in ("pydantic", "errors.pydantic.dev", "type=", "input_value", "Traceback"):
        assert internal not in message, message


@pytest.mark.parametrize(("what", "name", "text", "fragments"), EVALSET_DAMAGE, ids=[d[0] for d in EVALSET_DAMAGE])
def test_a_damaged_eval_set_names_the_file_the_case_and_the_field(
    tmp_path: Path, tally: Any, what: str, name: str, text: str, fragments: list[str]
) -> None:
    path = written(tmp_path, name, text)
    with tally.case("eval files: damaged .evalset.json / .test.json, refused naming case and field"):
        with pytest.raises(AdkError) as caught:
            EvalSet.load(path)
        assert_clear(caught.value, path, fragments)


@pytest.mark.parametrize(("what", "text", "fragments"), CONFIG_DAMAGE, ids=[d[0] for d in CONFIG_DAMAGE])
def test_a_damaged_test_config_names_the_file_and_the_field(
    tmp_path: Path, tally: Any, what: str, text: str, fragments: list[str]
) -> None:
    written(tmp_path, "home.evalset.json", json.dumps(EVALSET))
    config = written(tmp_path, "test_config.json", text)
    with tally.case("eval files: damaged test_config.json, refused naming the field"):
        with pytest.raises(AdkError) as caught:
            EvalSet.load(tmp_path / "home.evalset.json")
        assert_clear(caught.value, config, fragments)


def test_every_problem_is_one_line_naming_the_file_and_the_case(tmp_path: Path, tally: Any) -> None:
    data = copy.deepcopy(EVALSET)
    data["eval_cases"][0]["conversation"] = "oops"
    data["eval_cases"][1]["conversation"][0]["intermediate_data"] = calls([{"name": "set_light", "args": 5}])
    path = written(tmp_path, "two.evalset.json", json.dumps(data))
    with tally.case("eval files: damaged .evalset.json / .test.json, refused naming case and field"):
        with pytest.raises(AdkError) as caught:
            EvalSet.load(path)
        lines = caught.value.message.splitlines()
        problems = [line for line in lines if repr(str(path)) in line]
        assert len(problems) == 2, caught.value.message
        assert "case 'first'" in problems[0] and "conversation" in problems[0]
        assert "case 'lights_on'" in problems[1] and "tool_uses[0].args" in problems[1]


def test_criteria_given_to_evaluate_are_checked_the_same_way(tmp_path: Path, tally: Any) -> None:
    path = written(tmp_path, "home.evalset.json", json.dumps(EVALSET))
    for bad in (float("nan"), -1, 2, True):
        with tally.case("eval files: damaged test_config.json, refused naming the field"):
            with pytest.raises(AdkError) as caught:
                evaluate_sync(_no_agent, path, {"tool_trajectory_avg_score": bad})
            assert caught.value.code == "invalid_criteria"
            assert "criteria.tool_trajectory_avg_score" in caught.value.message, caught.value.message


def _no_agent() -> Any:
    raise AssertionError("a bad criterion is refused before any case runs")


def test_fields_google_adk_may_add_are_kept(tmp_path: Path, tally: Any) -> None:
    with tally.case("eval files: fields google-adk may add, kept"):
        data = copy.deepcopy(EVALSET)
        data["eval_cases"][1]["rubrics"] = [{"rubric_id": "r1"}]
        data["eval_cases"][1]["conversation"][0]["app_details"] = {"agent_details": {}}
        path = written(tmp_path, "home.evalset.json", json.dumps(data))
        written(
            tmp_path,
            "test_config.json",
            criteria(
                tool_trajectory_avg_score={"threshold": 1, "match_type": "IN_ORDER", "future_option": [1]},
                **{JUDGE: {"threshold": 0.5, "judge_model_options": {"judge_model_config": {}, "num_samples": 2}}},
                safety_v1=0.9,
            ),
        )
        evalset = EvalSet.load(path)
        assert evalset.criteria["safety_v1"] == 0.9
        saved = json.loads(evalset.save(tmp_path / "again.evalset.json").read_text(encoding="utf-8"))
        assert saved["eval_cases"][1]["rubrics"] == [{"rubric_id": "r1"}]
        assert saved["eval_cases"][1]["conversation"][0]["app_details"] == {"agent_details": {}}
