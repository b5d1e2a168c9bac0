"""On a local Ray (2 CPUs, started and shut down here): 20 cases score as they do locally, a dead
worker marks only its case `error`, and run_batch runs one agent over many inputs."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest
from eval_agents import DATA, make_agent

from adk_notebook import AdkError, LlmAgent, tool
from adk_notebook.evaluation import EvalSet, evaluate, run_batch

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    # As evaluate starts one: the workers import what this process imports (tests/evaluation too).
    path = os.pathsep.join(p for p in sys.path if p)
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": path}},
    )
    yield
    ray.shutdown()


def twenty_cases() -> EvalSet:
    weather = EvalSet.load(DATA / "weather.evalset.json")
    cases = [c.model_copy(update={"eval_id": f"{c.eval_id}-{n}"}) for n in range(3) for c in weather.eval_cases][:20]
    return EvalSet(eval_set_id="twenty", eval_cases=cases)


def dies_on_lima() -> LlmAgent:
    """An agent whose worker process exits when it is asked about Lima."""
    agent = make_agent()

    def get_weather(city: str, unit: str = "celsius") -> dict:
        if city == "Lima":
            os._exit(1)
        return {"city": city}

    agent.tools = [tool(get_weather), *agent.tools[1:]]
    return agent


async def test_twenty_cases_on_ray_score_as_they_do_here(local_ray: None) -> None:
    evalset = twenty_cases()
    criteria = {
        "tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "IN_ORDER"},
        "response_match_score": 0.7,
    }
    here = await evaluate(make_agent, evalset, criteria)
    there = await evaluate(make_agent, evalset, criteria, executor="ray")
    assert len(there.cases) == 20
    assert [(c.eval_id, c.status, c.metrics) for c in there.cases] == [
        (c.eval_id, c.status, c.metrics) for c in here.cases
    ]
    assert {c.status for c in there.cases} == {"passed", "failed"}


async def test_a_dead_worker_fails_its_case_only(local_ray: None) -> None:
    report = await evaluate(dies_on_lima, EvalSet.load(DATA / "weather.evalset.json"), executor="ray")
    errors = {c.eval_id: c.error for c in report.cases if c.status == "error"}
    assert list(errors) == ["more_args"] and "worker" in (errors["more_args"] or "")
    assert report.cases[0].passed and len(report.cases) == 7


async def test_run_batch_on_ray(local_ray: None) -> None:
    results = await run_batch(
        dies_on_lima,
        ["Weather in Tokyo?", "Weather in Lima?", "Hi, who am I?"],
        executor="ray",
    )
    assert results[0].text == "It is sunny in Tokyo." and results[2].text == "You are ."
    assert isinstance(results[1], AdkError) and results[1].code == "worker_failed"
