"""Evaluation throughput: 200 cases whose tool sleeps 50 ms, run three ways side by side.

Sequential, `max_concurrency=16` on this event loop, and as Ray tasks on a local Ray with 2
workers (started for the run; its start-up is counted). On a cluster the same call scales by
address: `evaluate(make_agent, evalset, executor="ray", ray_address="ray://head:10001")`, the
factory below shipped to the workers by value. Usage:

    python bench/eval.py [--cases 200] [--skip-ray]
    python bench/eval.py --google-adk-scores   # the numbers tests/evaluation check against
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

from peers.venvs import Peer, run_peer

from adk_notebook import (
    FunctionCall,
    FunctionModel,
    LlmAgent,
    LlmRequest,
    Part,
    tool,
)
from adk_notebook.evaluation import EvalCase, EvalSet, Invocation, ToolUse, evaluate

DATA = Path(__file__).resolve().parents[1] / "tests" / "evaluation" / "data"
GOOGLE_ADK = Peer(
    "google-adk-eval",
    "google-adk[eval]",
    "google.adk.evaluation.trajectory_evaluator",
    "google_adk_eval.py",
)
CRITERIA = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}


@tool
async def get_weather(city: str) -> dict:
    """Get the current weather for a city (a slow service: 50 ms)."""
    await asyncio.sleep(0.05)
    return {"city": city, "condition": "sunny"}


def answer(request: LlmRequest) -> Part | str:
    """Call get_weather for the city in the question, then answer."""
    last = request.contents[-1]
    city = request.contents[0].text.removeprefix("Weather in ").rstrip("?")
    if not last.function_responses():
        return Part(function_call=FunctionCall("get_weather", {"city": city}))
    return f"It is sunny in {city}."


def make_agent() -> LlmAgent:
    return LlmAgent(name="weather", model=FunctionModel(answer), tools=[get_weather])


def cases(n: int) -> EvalSet:
    city = [f"City{i}" for i in range(n)]
    return EvalSet(
        eval_set_id="bench",
        eval_cases=[
            EvalCase(
                eval_id=f"c{i}",
                conversation=[
                    Invocation.build(
                        f"Weather in {c}?",
                        f"It is sunny in {c}.",
                        [ToolUse(name="get_weather", args={"city": c})],
                    )
                ],
            )
            for i, c in enumerate(city)
        ],
    )


async def timed(label: str, evalset: EvalSet, **options: object) -> None:
    start = time.perf_counter()
    report = await evaluate(make_agent, evalset, CRITERIA, **options)  # type: ignore[arg-type]
    seconds = time.perf_counter() - start
    assert report.passed, report.cases[0].error or report.summary()
    n = len(evalset.eval_cases)
    print(f"{label:34} {seconds:7.2f} s  {n / seconds:7.1f} cases/s", flush=True)


async def main(n: int, skip_ray: bool) -> None:
    evalset = cases(n)
    print(f"{n} cases, one 50 ms tool call each (adk-notebook)")
    await timed("sequential", evalset)
    await timed("max_concurrency=16", evalset, max_concurrency=16)
    if not skip_ray:
        import ray

        start = time.perf_counter()
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)  # what evaluate starts when none runs
        print(f"{'ray start, 2 CPUs':34} {time.perf_counter() - start:7.2f} s", flush=True)
        try:
            await timed("ray, 2 workers", evalset, executor="ray")
        finally:
            ray.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--skip-ray", action="store_true")
    parser.add_argument(
        "--google-adk-scores",
        action="store_true",
        help="print google-adk's scores of tests/evaluation/data",
    )
    args = parser.parse_args()
    if args.google_adk_scores:
        print(json.dumps(run_peer(GOOGLE_ADK, str(DATA)), indent=1, sort_keys=True))
    else:
        asyncio.run(main(args.cases, args.skip_ray))
