"""pydantic-ai workload: one tool call and one text answer per invocation, scripted model, fresh history.

Run in the pydantic-ai venv: `python pydantic_ai_loop.py N`; prints one JSON line (see timing.report).
"""

from __future__ import annotations

import asyncio
import sys

from pydantic_ai import Agent, __version__
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from timing import per_invocation, report

ANSWER = "It is sunny in Tokyo."
tool_calls = 0


def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Call get_weather first, then answer with text once the tool's return is in the history."""
    last = messages[-1]
    if isinstance(last, ModelRequest) and isinstance(last.parts[0], ToolReturnPart):
        return ModelResponse(parts=[TextPart(ANSWER)])
    return ModelResponse(parts=[ToolCallPart("get_weather", {"city": "Tokyo"})])


agent = Agent(FunctionModel(respond), instructions="You help with weather.")


@agent.tool_plain
def get_weather(city: str) -> dict:
    """Get the current weather for a city."""
    global tool_calls
    tool_calls += 1
    return {"city": city, "condition": "sunny"}


async def invoke() -> None:
    result = await agent.run("Weather in Tokyo?")
    assert result.output == ANSWER, result.output


async def main(n: int) -> None:
    await invoke()
    assert tool_calls == 1, tool_calls
    seconds = await per_invocation(invoke, n)
    report("pydantic-ai", __version__, seconds, n)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
