"""google-adk workload: one tool call and one text answer per invocation, scripted model, fresh session.

Run in the google-adk venv: `python google_adk_loop.py N`; prints one JSON line (see timing.report).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncGenerator

from google.adk import version
from google.adk.agents import LlmAgent
from google.adk.models import BaseLlm, LlmRequest, LlmResponse
from google.adk.runners import InMemoryRunner
from google.adk.tools import FunctionTool
from google.genai import types
from timing import per_invocation, report

# Without the optional a2a-sdk, every invocation re-runs a failing `import remote_a2a_agent` in
# google.adk.workflow.utils._workflow_graph_utils.build_node: a third of ADK's time per invocation
# here. A None entry in sys.modules makes that import fail at once, so we time the agent loop, not
# the import; it is in the peer's favour.
sys.modules["google.adk.agents.remote_a2a_agent"] = None  # type: ignore[assignment]

ANSWER = "It is sunny in Tokyo."
# Real models report usage; without it ADK logs a warning on every model call.
USAGE = types.GenerateContentResponseUsageMetadata(
    prompt_token_count=10, candidates_token_count=5, total_token_count=15
)
tool_calls = 0


def get_weather(city: str) -> dict:
    """Get the current weather for a city."""
    global tool_calls
    tool_calls += 1
    return {"city": city, "condition": "sunny"}


class ScriptedLlm(BaseLlm):
    """Calls get_weather first, then answers with text once the tool's response is in the request."""

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1]
        if last.parts and last.parts[0].function_response is not None:
            part = types.Part(text=ANSWER)
        else:
            part = types.Part(function_call=types.FunctionCall(name="get_weather", args={"city": "Tokyo"}))
        yield LlmResponse(content=types.Content(role="model", parts=[part]), usage_metadata=USAGE)


async def main(n: int) -> None:
    agent = LlmAgent(
        name="weather",
        model=ScriptedLlm(model="scripted"),
        instruction="You help with weather.",
        tools=[FunctionTool(get_weather)],
    )
    runner = InMemoryRunner(agent=agent, app_name="bench")
    message = types.Content(role="user", parts=[types.Part(text="Weather in Tokyo?")])

    async def invoke() -> None:
        session = await runner.session_service.create_session(app_name="bench", user_id="u1")
        final = ""
        async for event in runner.run_async(user_id="u1", session_id=session.id, new_message=message):
            if event.is_final_response() and event.content and event.content.parts:
                final = event.content.parts[0].text or ""
        assert final == ANSWER, final

    await invoke()
    assert tool_calls == 1, tool_calls
    seconds = await per_invocation(invoke, n)
    report("google-adk", version.__version__, seconds, n)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
