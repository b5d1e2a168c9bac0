"""Launcher: the seed's console REPL, for people who are not in a notebook.

    Launcher(agent).run()          # or: python -m adk_notebook chat --model auto

Streams the answer as it arrives, shows tool calls as `[Using get_weather with city=Tokyo]`,
keeps one session for the conversation, and quits on "exit" (or Ctrl-D).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import TextIO

from .agents.base import Agent
from .core.errors import AdkError
from .runner import RunConfig, Runner

__all__ = ["Launcher"]

EXIT_WORDS = frozenset({"exit", "quit"})


class Launcher:
    def __init__(
        self,
        agent: Agent,
        *,
        app_name: str | None = None,
        user_id: str = "user",
        input_fn: Callable[[str], str] = input,
        output: TextIO | None = None,
    ) -> None:
        self.agent = agent
        self.runner = Runner(app_name=app_name or agent.name, agent=agent, run_config=RunConfig(auto_create_session=True))
        self.user_id = user_id
        self.session_id = "console"
        self._input = input_fn
        self._out = output or sys.stdout

    def run(self) -> None:
        """Read, run, print until the user types "exit"."""
        asyncio.run(self.run_async())

    async def run_async(self) -> None:
        write = self._out.write
        write(f"🤖 Agent {self.agent.name!r} ready! Type your questions (or 'exit' to quit).\n\n")
        while True:
            try:
                line = (await asyncio.to_thread(self._input, "You: ")).strip()
            except (EOFError, KeyboardInterrupt):
                line = "exit"
            if line.lower() in EXIT_WORDS:
                write("👋 Goodbye!\n")
                return
            if line:
                await self._answer(line)

    async def _answer(self, text: str) -> None:
        write = self._out.write
        write("Assistant: ")
        streamed = False
        try:
            async for event in self.runner.run(user_id=self.user_id, session_id=self.session_id, content=text):
                if event.partial and event.text:
                    write(event.text)
                    streamed = True
                elif event.progress is not None:
                    write(f"\n  … {event.progress.chunk}")
                elif not event.partial and event.author != "user":
                    for call in event.function_calls():
                        args = ", ".join(f"{k}={v}" for k, v in call.args.items())
                        write(f"[Using {call.name} with {args}]\n")
                    if event.is_final_response() and event.text and not streamed:
                        write(event.text)
                self._out.flush()
        except AdkError as exc:
            write(f"\n⚠️  {exc}")
        write("\n\n")
