"""Tools travel by pickle (Ray ships an agent factory and the tools it names to its workers).

A %%tool function lives in the notebook's `__main__`, so cloudpickle sends it by value; the tool
must then rebuild in a process that never saw it, with the same declaration and behaviour.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from typing import Any

import cloudpickle
from pydantic import BaseModel

from adk_notebook import FunctionCall, FunctionTool, LlmAgent, ScriptedModel, tool
from adk_notebook.tools.stateful import StatefulTool


def convert(amount: float, currency: str = "EUR") -> dict[str, Any]:
    """Convert an amount of US dollars.

    Args:
        amount: How many dollars.
        currency: The currency to convert to.
    """
    return {"amount": round(amount * 0.9, 2), "currency": currency}


class Query(BaseModel):
    text: str
    limit: int = 3


def search(args: Query, tool_context: Any) -> list[str]:
    return [args.text] * args.limit


def bump(state: dict[str, int], ctx: Any, args: dict[str, Any]) -> int:
    state["count"] += args.get("by", 1)
    return state["count"]


def declaration(made: FunctionTool) -> tuple[Any, ...]:
    return (
        type(made),
        made.name,
        made.description,
        made.parameters_schema,
        made.response_schema,
        made.timeout,
        made.is_read_only,
        made.is_concurrency_safe,
        made.is_long_running,
        made.required_scopes,
    )


def answer(made: FunctionTool, args: dict[str, Any]) -> Any:
    """What the model hears back when it calls `made` with `args` in a real run."""
    agent = LlmAgent(name="a", model=ScriptedModel([FunctionCall(made.name, args), "done"]), tools=[made])
    (response,) = [r for e in agent.run("go").events for r in e.function_responses()]
    return response.response


def test_a_tool_made_with_tool_pickles_to_the_same_declaration_and_behaviour() -> None:
    made = tool(read_only=True, concurrency_safe=True, timeout=5)(convert).with_response_schema({"type": "object"})
    scoped = tool(scopes=["fx"])(convert)
    for dumps in (pickle.dumps, cloudpickle.dumps):
        assert declaration(pickle.loads(dumps(scoped))) == declaration(scoped)
        loaded = pickle.loads(dumps(made))
        assert declaration(loaded) == declaration(made)
        assert (
            answer(loaded, {"amount": "10"})
            == answer(made, {"amount": "10"})
            == {"amount": 9.0, "currency": "EUR"}  # a dict result is the response itself
        )
        assert answer(loaded, {"amount": "ten"})["code"] == "invalid_arguments"
        assert loaded(2) == {"amount": 1.8, "currency": "EUR"}  # still callable as the function


def test_a_handler_tool_keeps_its_pydantic_parameters_and_builders() -> None:
    made = FunctionTool("search", "Search.", execute=search, parameters=Query).with_long_running().with_timeout(2.5)
    loaded = pickle.loads(pickle.dumps(made))
    assert declaration(loaded) == declaration(made)
    assert answer(loaded, {"text": "x", "limit": 2}) == {"result": ["x", "x"]}


def test_a_stateful_tool_pickles_with_its_state() -> None:
    made = StatefulTool("bump", "Add to the counter.", {"count": 4}, bump, exclusive=False)
    loaded = pickle.loads(cloudpickle.dumps(made))
    assert declaration(loaded) == declaration(made) and loaded.exclusive is False
    assert answer(loaded, {"by": 2}) == {"result": 6}
    assert made.state == {"count": 4}  # the copy has its own state


NOTEBOOK_CELL = '''
from adk_notebook import tool

@tool(read_only=True)
def shout(text: str, times: int = 1) -> str:
    """Shout the text.

    Args:
        text: What to shout.
        times: How often.
    """
    return " ".join([text.upper()] * times)
'''


def test_a_notebook_tool_pickled_by_value_rebuilds_in_a_process_that_never_saw_it() -> None:
    namespace: dict[str, Any] = {"__name__": "__main__"}  # as in a kernel: cloudpickle sends it by value
    exec(NOTEBOOK_CELL, namespace)  # noqa: S102  # the cell a user would have run
    made = namespace["shout"]
    worker = (
        "import json, pickle, sys\n"
        "from adk_notebook import FunctionCall, LlmAgent, ScriptedModel\n"
        "made = pickle.loads(sys.stdin.buffer.read())\n"
        "agent = LlmAgent(name='a', model=ScriptedModel([FunctionCall('shout', {'text': 'hi', 'times': '2'}), 'ok']),"
        " tools=[made])\n"
        "responses = [r.response for e in agent.run('go').events for r in e.function_responses()]\n"
        "print(json.dumps([made.parameters_schema, made.is_read_only, responses]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", worker], input=cloudpickle.dumps(made), capture_output=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout) == [made.parameters_schema, True, [{"result": "HI HI"}]]
