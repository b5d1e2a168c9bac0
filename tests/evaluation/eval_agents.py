"""The agent the evaluation tests score: a FunctionModel that plays `data/actual.json`.

For each user message it makes the listed tool calls one model turn at a time, then answers;
`{user_name}` in an answer is filled from the system instruction, which the agent templates
from session state. Module-level, so a Ray worker can import `make_agent`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from adk_notebook import (
    Content,
    FunctionCall,
    FunctionModel,
    LlmAgent,
    LlmRequest,
    LlmResponse,
    Part,
    tool,
)

DATA = Path(__file__).parent / "data"
PLAYS: dict[str, Any] = json.loads((DATA / "actual.json").read_text(encoding="utf-8"))
TOOL_SLEEP = 0.0  # bench/eval.py sets 0.05: tools that take time, as real ones do


@tool
def get_weather(city: str, unit: str = "celsius") -> dict:
    """Get the current weather for a city."""
    time.sleep(TOOL_SLEEP)
    return {"city": city, "condition": "sunny", "unit": unit}


@tool
def get_time(city: str) -> dict:
    """Get the local time in a city."""
    time.sleep(TOOL_SLEEP)
    return {"city": city, "time": "10:00"}


@tool
def set_light(room: str, on: bool) -> dict:
    """Switch a room's light."""
    return {"room": room, "on": on}


@tool
def get_light(room: str) -> dict:
    """Is a room's light on?"""
    return {"room": room, "on": True}


def play(request: LlmRequest) -> LlmResponse:
    """The next step of the play for the request's last user message."""
    turn = [c for c in request.contents]
    start = max(i for i, c in enumerate(turn) if c.role == "user" and c.text)
    message = turn[start].text
    done = sum(len(c.function_responses()) for c in turn[start + 1 :])
    step = PLAYS.get(message, {"calls": [], "answer": "I do not know."})
    if done < len(step["calls"]):
        name, args = step["calls"][done]
        return LlmResponse(content=Content("model", [Part(function_call=FunctionCall(name, args))]))
    user = (request.system_instruction or "").removeprefix("The user is ").rstrip(".")
    return LlmResponse(
        content=Content.model(step["answer"].replace("{user_name}", user)),
        finish_reason="stop",
    )


def make_agent(instruction: str = "The user is {user_name?}.") -> LlmAgent:
    """A fresh agent (the factory evaluate and run_batch call, on a Ray worker too)."""
    return LlmAgent(
        name="weather",
        model=FunctionModel(play),
        instruction=instruction,
        tools=[get_weather, get_time, set_light, get_light],
    )
