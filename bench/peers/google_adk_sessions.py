"""google-adk's DatabaseSessionService under bench/sessions.py's workload (runs in its own venv).

Usage: python google_adk_sessions.py DB_URL N  (DB_URL in SQLAlchemy's form, e.g.
postgresql+asyncpg://postgres@127.0.0.1:5432/peer). Prints one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import sys
from importlib.metadata import version

from google.adk.events import Event, EventActions
from google.adk.sessions import DatabaseSessionService
from google.genai import types
from sessions_workload import measure


async def main(db_url: str, n: int) -> None:
    service = DatabaseSessionService(db_url=db_url)

    async def create(session_id: str) -> object:
        return await service.create_session(app_name="bench", user_id="u", session_id=session_id)

    async def append(session: object, i: int) -> None:
        event = Event(
            author="agent",
            invocation_id="inv",
            content=types.Content(
                role="model",
                parts=[types.Part(text=f"event {i}: the weather in Tokyo is sunny")],
            ),
            actions=EventActions(state_delta={"n": i}),
        )
        await service.append_event(session, event)  # type: ignore[arg-type]

    async def get(session_id: str) -> object:
        return await service.get_session(app_name="bench", user_id="u", session_id=session_id)

    figures = await measure(create, append, get, n)
    print(json.dumps({"framework": "google-adk", "version": version("google-adk"), **figures}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
