"""google-adk workload for bench/multi_agent.py: a 10-agent SequentialAgent or a 10-branch
ParallelAgent of LlmAgents on a scripted model (one text answer each), fresh session per invocation.

Run in the google-adk venv: `python google_adk_multi.py sequential|parallel N`; prints one JSON line.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncGenerator

from google.adk import version
from google.adk.agents import LlmAgent, ParallelAgent, SequentialAgent
from google.adk.models import BaseLlm, LlmRequest, LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types
from timing import per_invocation, report

sys.modules["google.adk.agents.remote_a2a_agent"] = None  # type: ignore[assignment]  # see google_adk_loop.py

AGENTS = 10
USAGE = types.GenerateContentResponseUsageMetadata(
    prompt_token_count=10, candidates_token_count=5, total_token_count=15
)


class ScriptedLlm(BaseLlm):
    """Answers every request with one short text."""

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        yield LlmResponse(
            content=types.Content(role="model", parts=[types.Part(text="done")]),
            usage_metadata=USAGE,
        )


async def main(shape: str, n: int) -> None:
    workers = [LlmAgent(name=f"a{i}", model=ScriptedLlm(model="scripted"), instruction="Work.") for i in range(AGENTS)]
    root = (SequentialAgent if shape == "sequential" else ParallelAgent)(name="root", sub_agents=workers)
    runner = InMemoryRunner(agent=root, app_name="bench")
    message = types.Content(role="user", parts=[types.Part(text="go")])

    async def invoke() -> None:
        session = await runner.session_service.create_session(app_name="bench", user_id="u1")
        authors = set()
        async for event in runner.run_async(user_id="u1", session_id=session.id, new_message=message):
            if event.is_final_response():
                authors.add(event.author)
        assert len(authors) == AGENTS, authors

    seconds = await per_invocation(invoke, n)
    report(f"google-adk {shape}", version.__version__, seconds, n)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
