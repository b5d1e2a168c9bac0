"""Launcher: the seed's console REPL, for people who are not in a notebook.

    Launcher(agent).run()          # or: python -m adk_notebook chat --model auto --tools mod:attr

Streams the answer as it arrives, shows tool calls as `[Using get_weather with city=Tokyo]`,
and keeps one session for the conversation. It behaves like a shell: Ctrl-C during an answer
stops that answer and returns to the prompt (the session stays consistent: a stopped tool
call gets its answer), Ctrl-C at the prompt clears the line, Ctrl-D or "exit" quits. Text typed
while an answer streams is not echoed into it and waits at the next prompt (also after Ctrl-C). On a
terminal, readline gives line editing and this session's history (nothing is written to disk).

The REPL reads on the main thread and runs each answer on one event loop kept for the whole
conversation (`asyncio.Runner`), so SIGINT reaches the run as a cancel of its task, and clients
bound to that loop (httpx) live as long as the conversation.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Iterator
from contextlib import aclosing, contextmanager
from typing import TextIO

from .agents.base import Agent
from .core.errors import AdkError
from .core.run_config import RunConfig
from .runner import Runner

__all__ = ["Launcher", "terminal_message"]

EXIT_WORDS = frozenset({"exit", "quit"})


class Launcher:
    """A console REPL over one agent and one session.

    Args:
        agent: The agent to talk to.
        app_name: The app name of its sessions (default: the agent's name).
        user_id: The user of the session.
        input_fn: Reads a line (default `input`, with readline's editing on a terminal).
        output: Where to write (default stdout).
    """

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
        self.runner = Runner(
            app_name=app_name or agent.name, agent=agent, run_config=RunConfig(auto_create_session=True)
        )
        self.user_id = user_id
        self.session_id = "console"
        self._input = input_fn
        self._out = output or sys.stdout

    def banner(self) -> str:
        """Who answers (the concrete model behind "auto", and why), the tools, the keys."""
        lines = [f"🤖 Agent {self.agent.name!r} ready!"]
        resolve = getattr(self.agent, "resolve_model", None)
        if resolve is not None:
            from .models.registry import auto_choice, model_id

            model = resolve()
            why = f" (auto: {auto_choice().reason})" if getattr(self.agent, "model", None) == "auto" else ""
            lines[0] += f" Model: {model_id(model)}{why}."
            notice = getattr(model, "notice", None)
            if notice:
                lines.append(f"ℹ {notice}")
        tools = [t.name for t in getattr(self.agent, "tools", ())]
        if tools:
            lines.append("Tools: " + ", ".join(tools))
        lines.append("Type your questions: Ctrl-C stops an answer, 'exit' or Ctrl-D quits.")
        return "\n".join(lines) + "\n\n"

    def run(self) -> None:
        """Read, answer, print until "exit" or end of input (call it on the main thread)."""
        write = self._out.write
        if self._input is input:
            _line_editing()
        write(self.banner())
        self._out.flush()
        with asyncio.Runner() as loop:
            while True:
                try:
                    line = self._input("You: ").strip()
                except KeyboardInterrupt:  # Ctrl-C at the prompt: drop the line, ask again
                    write("\n")
                    continue
                except EOFError:
                    write("\n")
                    line = "exit"
                if line.lower() in EXIT_WORDS:
                    write("👋 Goodbye!\n")
                    return
                if not line:
                    continue
                with _typeahead_kept(self._input is input):
                    try:
                        loop.run(self.answer(line))
                    except KeyboardInterrupt:  # Ctrl-C while answering: asyncio.Runner cancelled the run
                        write("\n⏹  Stopped.\n\n")
                    self._out.flush()

    async def answer(self, text: str) -> None:
        """Run the agent on one message, printing the answer as it streams."""
        write = self._out.write
        write("Assistant: ")
        self._out.flush()
        streamed = False
        stream = self.runner.run(user_id=self.user_id, session_id=self.session_id, content=text)
        try:
            async with aclosing(stream):
                async for event in stream:
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
            write(f"\n⚠️  {terminal_message(exc)}")
        except Exception as exc:  # noqa: BLE001 - the REPL stays up; one line says what broke
            write(f"\n⚠️  {type(exc).__name__}: {exc}")
        write("\n\n")


def terminal_message(error: BaseException) -> str:
    """One line for a terminal: the error, and a missing key's fix as a shell sets it."""
    text = str(error) if isinstance(error, AdkError) else f"{error}"
    if isinstance(error, AdkError) and error.code == "missing_api_key" and error.details.get("variables"):
        text += f" In a shell: export {error.details['variables'][0]}=..."
    return " ".join(text.split())


@contextmanager
def _typeahead_kept(on_terminal: bool) -> Iterator[None]:
    """Type-ahead as a shell keeps it: while an answer streams, what the user types is not echoed
    into the answer and Ctrl-C does not discard it; it stays in the terminal's input, where
    readline finds it at the next prompt (editable; Enter sends it). No-op off a terminal."""
    try:
        import termios
    except ImportError:  # Windows
        termios = None  # type: ignore[assignment]  # the module or None: the check below skips it
    if termios is None or not on_terminal or not sys.stdin.isatty():
        yield
        return
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    quiet = list(saved)
    quiet[3] = (saved[3] & ~termios.ECHO) | termios.NOFLSH  # local modes: no echo, no flush on Ctrl-C
    termios.tcsetattr(fd, termios.TCSANOW, quiet)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, saved)  # not TCSAFLUSH: the typed text stays


def _line_editing() -> None:
    """Line editing and history for `input()` on a terminal (readline, where Python has it)."""
    if sys.stdin.isatty():
        try:
            import readline  # noqa: F401 - importing it is what turns it on for input()
        except ImportError:  # Windows without pyreadline
            pass
