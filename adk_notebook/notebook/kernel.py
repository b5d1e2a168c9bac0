"""Async in the kernel: `%%chat` runs on the kernel's own event loop, as a top-level await.

ipykernel always has a running loop, so a magic cannot `asyncio.run` an agent, and magics
cannot be async (ipython #11314). `install(shell, chat)` adds an input transformer that
rewrites what IPython made of a chat cell into an await of `chat`:

    %%chat weather_bot --session s1      ->  await __adk_chat__('weather_bot --session s1',
    What's the weather in Tokyo?                                 "What's the weather in Tokyo?\\n")
    r = %chat weather_bot Hi              ->  r = await __adk_chat__('weather_bot Hi')

(A `%chat` line ending in "?" would be IPython's help syntax; `QuestionGuard` keeps it a chat.)
IPython runs a cell with a top-level await as a task on the kernel loop (autoawait), so while
the run is awaited ipykernel 7 handles comm messages (the widget's Stop button), and a SIGINT
handler installed for the run turns an interrupt into `loop.call_soon_threadsafe(task.cancel)`:
the cancel arrives within ~0.1 s even while a tool sleeps in a long await (ipykernel #881), and
within ~0.3 s when a tool blocks the loop itself (`time.sleep` inside `async def`; see
`adk_notebook/_interrupt.py`).

Where an await cannot go (autoawait off, a `%chat` inside a `def`, `run_cell_magic` called
directly) the magic runs the same coroutine on a private loop in a worker thread
(`run_chat_blocking`); events reach the view on the calling thread through a queue (between
two events the view is polled, so a tool's card shows while the tool runs), and SIGINT
still cancels the run; should a tool block that loop, the cell stops waiting for it within
half a second and the run ends when the tool returns. The Stop button needs the kernel loop,
so it only acts on the first path.

How a run ends, in the cell:

    completed      the ChatResult: in `_` and Out[], which shows one summary line (the view
                   above already shows the run, with text/html and text/plain transcripts)
    Stop button    "Run cancelled." printed, None returned: the notebook goes on
    interrupt      RunCancelled, shown as the one line "Run cancelled.": the cell fails, so
                   Run All stops there as it would for any interrupted cell
    an AdkError    ChatError, one line (e.g. a missing state variable); the view shows it too
"""

from __future__ import annotations

import ast
import asyncio
import queue
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from .._interrupt import sigint_cancels
from .._sync import run_sync
from ..agents.base import Agent
from ..core.content import Content
from ..core.errors import AdkError
from ..core.events import Event, EventActions, new_id
from ..runner import Runner, RunResult
from ..sessions.base import BaseSessionService
from .graph import run_graph

__all__ = [
    "CHAT_FUNCTION",
    "ChatError",
    "ChatPlan",
    "ChatResult",
    "ChatTransformer",
    "QuestionGuard",
    "RunCancelled",
    "View",
    "install",
    "run_chat",
    "run_chat_blocking",
    "uninstall",
]

CHAT_FUNCTION = "__adk_chat__"  # the name the rewritten cells call, kept in the user namespace


class View(Protocol):
    """What a run needs from its widget (`adk_notebook.notebook.widgets.RunView`)."""

    def show(self) -> None: ...
    def handle(self, event: Event) -> None: ...
    def poll(self) -> None: ...
    def finish(self, *, result: Any = None, error: BaseException | None = None, cancelled: bool = False) -> None: ...
    def on_stop(self, callback: Callable[[], None]) -> None: ...


ViewFactory = Callable[..., View]


# -- what a chat returns or raises -------------------------------------------------------------
@dataclass(slots=True, repr=False)
class ChatResult(RunResult):
    """A `RunResult` whose Out[] display is one summary line: the widget above shows the run."""

    agent_name: str = ""

    def summary(self) -> str:
        calls = sum(len(e.function_calls()) for e in self.events if not e.partial)
        parts = [
            f"{self.agent_name}" if self.agent_name else "run",
            f"session {self.session_id!r}",
            f"{len(self.events)} events",
            f"{calls} tool call{'' if calls == 1 else 's'}",
        ]
        if self.usage.total_tokens:
            parts.append(f"{self.usage.total_tokens} tokens")
        return f"<ChatResult: {', '.join(parts)} — .text .events .state .usage>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.summary())


class RunCancelled(Exception):
    """An interrupted run: the cell fails with the single line "Run cancelled." (so Run All stops).

    Not a KeyboardInterrupt on purpose: asyncio re-raises those out of the kernel's loop.
    """

    def __init__(self) -> None:
        super().__init__("Run cancelled.")

    def _render_traceback_(self) -> list[str]:
        return ["Run cancelled."]


class ChatError(Exception):
    """A run that failed with an AdkError (no model configured, a missing state variable, ...): one line."""

    def _render_traceback_(self) -> list[str]:
        return [str(self)]


# -- one run -----------------------------------------------------------------------------------
@dataclass(slots=True)
class ChatPlan:
    """Everything one chat needs, decided before it starts (the magics build it)."""

    agent: Agent
    message: str
    session_service: BaseSessionService
    user_id: str
    session_id: str
    state: dict[str, Any] = field(default_factory=dict)  # --state: initial state, or a delta
    restart: bool = False  # --new-session with an explicit --session: drop that session first
    model: str | None = None  # who answers ("auto" resolved), for the view's header
    notice: str | None = None  # one line the view shows about that model (a tiny demo model)

    def view_kwargs(self) -> dict[str, Any]:
        kwargs = {
            "agent_name": self.agent.name,
            "prompt": self.message,
            "session_id": self.session_id,
            "model": self.model,
            "notice": self.notice,
        }
        graph = run_graph(self.agent)
        return {**kwargs, "graph": graph} if graph else kwargs


async def open_session(plan: ChatPlan) -> None:
    """Create the plan's session when missing; apply `--state` to an existing one as a stored delta."""
    service, app = plan.session_service, plan.agent.name
    key = {"app_name": app, "user_id": plan.user_id, "session_id": plan.session_id}
    if plan.restart:
        await _start_over(service, key)
    session = await service.get(**key)
    if session is None:
        await service.create(**key, state=dict(plan.state))
    elif plan.state:
        await service.append_event(session, Event("user", None, actions=EventActions(state_delta=dict(plan.state))))


async def _start_over(service: BaseSessionService, key: dict[str, str]) -> None:
    """`--new-session --session ID` on an existing session: delete it, unless a run holds it.

    The session is claimed as a run would claim it, so a run in progress refuses this before
    anything is deleted (and no run can start while it is being deleted).
    """
    session = await service.get(**key)
    if session is None:
        return
    claim = "e-" + new_id()
    try:
        await service.begin_run(session, claim)
    except AdkError as exc:
        if exc.code != "session_busy":
            raise
        raise AdkError.session(
            f"--new-session: session {key['session_id']!r} has a run in progress, so it was left as it is. Wait for "
            "that run to end (or interrupt it), or leave out --session to start a new session beside it.",
            code="session_busy",
            category="unavailable",
        ) from None
    try:
        await service.delete(**key)
    finally:
        await service.end_run(session, claim)


class _Stopped(Exception):
    """KeyboardInterrupt or SystemExit a tool raised, carried out of the run's task: raised in a
    task, they would leave the kernel's event loop."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__(type(exc).__name__)
        self.exc = exc


async def drive(plan: ChatPlan, emit: Callable[[Event], None]) -> ChatResult:
    """Run the plan to the end, passing every event (partial ones too) to `emit`."""
    await open_session(plan)
    runner = Runner(app_name=plan.agent.name, agent=plan.agent, session_service=plan.session_service)
    try:
        result = await runner.run_to_result(
            user_id=plan.user_id, session_id=plan.session_id, content=Content.user(plan.message), on_event=emit
        )
    except (KeyboardInterrupt, SystemExit) as exc:
        raise _Stopped(exc) from None
    return ChatResult.from_events(
        result.events, result.session_id, result.state, agent_name=plan.agent.name, trace=result.trace
    )


class _Cancel:
    """Why a run was cancelled, and how to reach its task from any thread or a signal handler."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.task: asyncio.Task[Any] | None = None

    def bind(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any]) -> None:
        self.loop, self.task = loop, task

    def __call__(self, reason: str) -> None:
        self.reason = self.reason or reason
        loop, task = self.loop, self.task
        if loop is not None and task is not None and not loop.is_closed():
            loop.call_soon_threadsafe(task.cancel)


def _conclude(
    view: View, cancel: _Cancel, *, result: ChatResult | None = None, error: BaseException | None = None
) -> ChatResult | None:
    """Give the view its final state; turn the outcome into what the cell returns or raises."""
    if isinstance(error, _Stopped):
        error = error.exc
    if isinstance(error, KeyboardInterrupt):  # a tool's own, or a second Ctrl-C that stopped waiting
        error = asyncio.CancelledError()
    if isinstance(error, asyncio.CancelledError):
        view.finish(cancelled=True)
        if cancel.reason == "stop":  # the Stop button ends this run only
            print("Run cancelled.")
            return None
        raise RunCancelled() from None
    if isinstance(error, AdkError):
        view.finish(error=error)
        raise ChatError(str(error)) from None
    if error is not None:
        view.finish(error=error)
        raise error
    view.finish(result=result)
    return result


async def run_chat(plan: ChatPlan, view_factory: ViewFactory) -> ChatResult | None:
    """The awaited form (the kernel loop): the run is a task; Stop and SIGINT cancel it."""
    view = view_factory(**plan.view_kwargs())
    view.show()
    loop = asyncio.get_running_loop()
    cancel = _Cancel()
    task = loop.create_task(drive(plan, view.handle), name=f"adk-chat-{plan.agent.name}")
    cancel.bind(loop, task)
    view.on_stop(lambda *_: cancel("stop"))
    with sigint_cancels(lambda: cancel("interrupt"), loop=loop):
        try:
            result = await task
        except asyncio.CancelledError as exc:
            # Ours (Stop, SIGINT), or the cell's task was cancelled, which cancelled `task` too.
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
            return _conclude(view, cancel, error=exc)
        except Exception as exc:  # noqa: BLE001 - handed to the view, then re-raised in _conclude
            return _conclude(view, cancel, error=exc)
    return _conclude(view, cancel, result=result)


_DONE = object()


def run_chat_blocking(plan: ChatPlan, view_factory: ViewFactory) -> ChatResult | None:
    """The fallback: the run on a worker thread's loop (`run_sync`), events handed back over a queue."""
    view = view_factory(**plan.view_kwargs())
    view.show()
    cancel = _Cancel()
    events: queue.SimpleQueue[Any] = queue.SimpleQueue()
    outcome: dict[str, Any] = {}

    async def main() -> ChatResult:
        cancel.bind(asyncio.get_running_loop(), asyncio.current_task())  # type: ignore[arg-type]  # inside a task: never None
        if cancel.reason is not None:  # cancelled before the loop existed
            raise asyncio.CancelledError
        return await drive(plan, events.put)

    def worker() -> None:
        try:
            outcome["result"] = run_sync(main())  # no loop runs in this thread: a private one
        except BaseException as exc:  # noqa: BLE001 - reported on the calling thread
            outcome["error"] = exc
        finally:
            events.put(_DONE)

    view.on_stop(lambda *_: cancel("stop"))
    thread = threading.Thread(target=worker, name=f"adk-chat-{plan.agent.name}", daemon=True)
    try:
        with sigint_cancels(lambda: cancel("interrupt"), worker_loop=lambda: cancel.loop):
            thread.start()
            while True:
                try:
                    item = events.get(timeout=0.1)  # a timeout, so signal handlers run promptly
                except queue.Empty:
                    view.poll()  # no loop runs here to flush a pending delta: a running tool's card shows now
                    continue
                if item is _DONE:
                    break
                view.handle(item)
            thread.join()
    except KeyboardInterrupt as stopped_waiting:  # its loop is blocked, or a second Ctrl-C: the run ends later
        cancel.reason = cancel.reason or "interrupt"
        return _conclude(view, cancel, error=stopped_waiting)
    return _conclude(view, cancel, result=outcome.get("result"), error=outcome.get("error"))


# -- the input transformer ---------------------------------------------------------------------
_CELL = re.compile(r"^get_ipython\(\)\.run_cell_magic\('chat', (?P<args>.*)\)\s*$", re.DOTALL)
_STRING = r"""(?:'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")"""
_LINE = re.compile(
    rf"^(?P<indent>[ \t]*)(?P<assign>(?:[A-Za-z_]\w*[ \t]*=[ \t]*)?)"
    rf"get_ipython\(\)\.run_line_magic\('chat', (?P<arg>{_STRING})\)(?P<end>[ \t]*\r?\n?)$"
)


class ChatTransformer:
    """An `input_transformers_post` step: IPython's chat magic calls -> awaits of `__adk_chat__`."""

    adk_chat_transformer = True  # how `uninstall` finds it, even after a module reload

    def __init__(self, shell: Any, chat: Callable[..., Any]) -> None:
        self.shell = shell
        self.chat = chat

    def active(self) -> bool:
        """Only with autoawait on the asyncio runner (not `%autoawait False`, trio or curio)."""
        try:
            from IPython.core.async_helpers import _asyncio_runner
        except ImportError:  # pragma: no cover - an IPython without it has no autoawait either
            return False
        return bool(getattr(self.shell, "autoawait", False)) and self.shell.loop_runner is _asyncio_runner

    def __call__(self, lines: list[str]) -> list[str]:
        if not any("run_line_magic('chat'" in line or "run_cell_magic('chat'" in line for line in lines):
            return lines
        if not self.active():
            return lines
        self.shell.user_ns[CHAT_FUNCTION] = self.chat  # back after a %reset or a `del`
        cell = _CELL.match("".join(lines))
        if cell is not None:
            return [f"await {CHAT_FUNCTION}({cell['args']})\n"]
        # Try every %chat line; where an await cannot go (inside a def), only unindented ones;
        # where that does not compile either, leave the cell to the magic's thread fallback.
        for indented in (True, False):
            rewritten = [self._rewrite_line(line, indented) for line in lines]
            if rewritten != lines and _compiles("".join(rewritten)):
                return rewritten
        return lines

    @staticmethod
    def _rewrite_line(line: str, indented: bool) -> str:
        match = _LINE.match(line)
        if match is None or (match["indent"] and not indented):
            return line
        return f"{match['indent']}{match['assign']}await {CHAT_FUNCTION}({match['arg']}){match['end']}"


_QUESTION = re.compile(
    r"^(?P<indent>[ \t]*)(?P<assign>(?:[A-Za-z_]\w*[ \t]*=[ \t]*)?)%chat[ \t]+(?P<arg>\S+[ \t]+\S.*\?)[ \t]*(?P<end>\r?\n?)$"
)


class QuestionGuard:
    """An `input_transformers_cleanup` step: `%chat bot How are you?` stays a chat.

    IPython reads a line ending in "?" as a help request (`pinfo you`); a chat message often
    ends that way. This turns such a line into the magic call IPython would otherwise have
    made, before its help syntax sees it; `ChatTransformer` then makes that an await.
    """

    adk_chat_transformer = True

    def __call__(self, lines: list[str]) -> list[str]:
        if not any("%chat" in line for line in lines):
            return lines
        if lines[0].startswith("%%"):  # a cell magic's body is its own business
            return lines
        return [self._guard(line) for line in lines]

    @staticmethod
    def _guard(line: str) -> str:
        match = _QUESTION.match(line)
        if match is None:
            return line
        return f"{match['indent']}{match['assign']}get_ipython().run_line_magic('chat', {match['arg']!r}){match['end']}"


def _compiles(source: str) -> bool:
    """Whether `source` compiles as a cell with top-level await (an await inside a `def` does not)."""
    try:
        compile(source, "<cell>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    except SyntaxError:
        return False
    return True


def install(shell: Any, chat: Callable[..., Any]) -> ChatTransformer:
    """Add the transformer (once) and put `chat` in the user namespace as `__adk_chat__`."""
    uninstall(shell)
    transformer = ChatTransformer(shell, chat)
    shell.input_transformers_cleanup.append(QuestionGuard())
    shell.input_transformers_post.append(transformer)
    shell.user_ns[CHAT_FUNCTION] = chat
    shell.user_ns_hidden[CHAT_FUNCTION] = chat  # hidden from %who and %whos
    return transformer


def uninstall(shell: Any) -> None:
    for steps in (shell.input_transformers_cleanup, shell.input_transformers_post):
        steps[:] = [t for t in steps if not getattr(t, "adk_chat_transformer", False)]
    shell.user_ns.pop(CHAT_FUNCTION, None)
    shell.user_ns_hidden.pop(CHAT_FUNCTION, None)
