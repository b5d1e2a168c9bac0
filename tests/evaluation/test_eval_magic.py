"""`%adk eval` in a real IPython shell: score an eval set, save the chat just run as a case, score that."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from eval_agents import DATA, make_agent
from IPython.core.error import UsageError
from IPython.testing import globalipapp

from adk_notebook.evaluation import EvalReport, EvalSet


@pytest.fixture()
def ip() -> Iterator[Any]:
    """IPython's one global shell (whichever test module starts it), left as it was found."""
    shell = globalipapp.start_ipython() or globalipapp.get_ipython()
    shell.run_cell("%load_ext adk_notebook")
    before = set(shell.user_ns)
    yield shell
    for name in set(shell.user_ns) - before:
        del shell.user_ns[name]
    shell.run_line_magic("adk", "reset")


def test_eval_scores_an_agent_in_the_namespace(ip) -> None:
    ip.user_ns["bot"] = make_agent()
    report = ip.run_line_magic("adk", f"eval bot {DATA / 'legacy' / 'home.test.json'}")
    assert isinstance(report, EvalReport) and report.passed
    strict = ip.run_line_magic(
        "adk",
        f"""eval bot {DATA / "weather.evalset.json"} --criteria '{{"tool_trajectory_avg_score": 1.0}}'""",
    )
    assert [c.status for c in strict.cases].count("failed") == 4
    with pytest.raises(UsageError, match="--criteria is not JSON"):
        ip.run_line_magic("adk", f"eval bot {DATA / 'weather.evalset.json'} --criteria nope")
    with pytest.raises(UsageError, match="Usage"):
        ip.run_line_magic("adk", "eval bot")


def test_eval_save_turns_the_chat_into_a_case_that_passes(ip, tmp_path: Path) -> None:
    ip.user_ns["bot"] = make_agent()
    ip.run_cell_magic("chat", "bot --session talk --state user_name=Ana", "Hi, who am I?")
    ip.run_cell_magic("chat", "bot --session talk", "Weather and time in Oslo?")
    target = tmp_path / "mine.evalset.json"
    shown = ip.run_line_magic("adk", f"eval save bot --session talk --to {target}")
    assert "2 turns, 2 tool calls" in shown.text
    saved = json.loads(target.read_text(encoding="utf-8"))
    (case,) = saved["eval_cases"]
    assert case["eval_id"] == "talk" and case["session_input"]["state"] == {"user_name": "Ana"}
    calls = case["conversation"][1]["intermediate_data"]["tool_uses"]
    assert [(c["name"], c["args"]) for c in calls] == [
        ("get_time", {"city": "Oslo"}),
        ("get_weather", {"city": "Oslo"}),
    ]
    assert case["conversation"][0]["final_response"]["parts"][0]["text"] == "You are Ana."
    assert EvalSet.load(target).eval_cases[0].conversation[1].response_text == "It is 10:00 in Oslo and cloudy."
    report = ip.run_line_magic("adk", f"eval bot {target}")
    assert report.passed, str(report)
    with pytest.raises(UsageError, match="no session 'nothing'"):
        ip.run_line_magic("adk", f"eval save bot --session nothing --to {target}")
