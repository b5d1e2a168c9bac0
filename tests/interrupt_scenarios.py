"""Interrupting runs for real: in a Jupyter kernel (nbclient + `km.interrupt_kernel()`) and with
SIGINT to a plain `python script.py`. Shared by tests/reliability/test_kernel_interrupts.py,
which checks what each interrupt leaves behind, and bench/interrupts.py, which prints latencies.

Each kernel scenario runs, per round, one cell that starts a run on a fresh session, interrupts
the kernel once the run is under way (its tool has started, or the model is streaming), and
measures the time until the cell has ended. Then it checks, from outside the kernel, what
happened: tools leave timestamped marks in a file, so a tool call that starts after the
interrupt (the run went on behind the cell's back) is seen; a cell then reads the stored
session (every call answered once?) and a last cell sends the next message on the same session
(it must not be refused as busy).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
from loopback import LoopbackServer, Reply, sse
from nbclient import NotebookClient

from adk_notebook import LlmAgent, ScriptedModel, SqliteSessionService

__all__ = ["SCENARIOS", "Outcome", "Scenario", "cpu_load", "interrupt"]

STEPS = 10  # tool calls a run makes, one per model turn, unless it is stopped

SETUP = '''%load_ext adk_notebook
import asyncio, json, threading, time
from adk_notebook import FunctionCall, FunctionModel, InMemorySessionService, tool
from adk_notebook.models.openai import OpenAIModel
LOG = {log!r}
SESSIONS = InMemorySessionService()

def mark(what):
    """A side effect seen from outside the kernel: a line in LOG with the time it happened."""
    with open(LOG, "a") as f:
        f.write(json.dumps([what, time.monotonic()]) + "\\n")

def plan(request):
    """One tool call per model turn, {steps} of them, then an answer; "again" is answered at once."""
    last = max(i for i, c in enumerate(request.contents) if c.role == "user" and c.text)
    if request.contents[last].text == "again":
        return "recovered"
    done = sum(1 for c in request.contents[last + 1:] if c.role == "tool")
    return FunctionCall("step", {{}}) if done < {steps} else "all done"
'''

TOOLS = {
    "sync": '''@tool
def step() -> dict:
    """Work in a thread."""
    mark("start")
    time.sleep({seconds})
    mark("end")
    return {{"done": True}}''',
    "async": '''@tool
async def step() -> dict:
    """Await something slow."""
    mark("start")
    await asyncio.sleep({seconds})
    mark("end")
    return {{"done": True}}''',
    # A side effect every 50 ms: once the run is interrupted, at most one more may come.
    "ticks": '''@tool
def step() -> dict:
    """Work in a thread, leaving a mark as it goes."""
    mark("start")
    for _ in range(int({seconds} / 0.05)):
        mark("tick")
        time.sleep(0.05)
    mark("end")
    return {{"done": True}}''',
    "blocking": '''@tool
async def step() -> dict:
    """An async tool that blocks its event loop (a sync HTTP client inside async def, say)."""
    mark("start")
    time.sleep({seconds})
    mark("end")
    return {{"done": True}}''',
}

RUN = {
    "chat": "%%chat bot --session {sid}\ngo",
    # Called from a function, the magic cannot become an await: it runs on its worker thread.
    "fallback": "def _chat():\n    return get_ipython().run_cell_magic('chat', 'bot --session {sid}', 'go')\n_chat()",
    "agent.run": "bot.run('go', session_id='{sid}', session_service=SESSIONS)",
}

CHECK = """time.sleep({settle})  # whatever the interrupted run would still do, it does by now
_s = await SESSIONS.get(app_name="bot", user_id="user", session_id="{sid}")
_calls = [c.id for e in _s.events for c in e.function_calls()]
_answers = [r.id for e in _s.events for r in e.function_responses()]
print(json.dumps({{"calls": len(_calls), "unanswered": len(set(_calls) - set(_answers)),
                  "twice": len(_answers) - len(set(_answers))}}))"""

NEXT = "print(bot.run('again', session_id='{sid}', session_service=SESSIONS).text)"


@dataclass
class Scenario:
    """One way a run is interrupted: where it runs (`path`) and what it is doing (`work`)."""

    path: str  # "chat" (the awaited %%chat), "fallback" (its worker-thread path), "agent.run", "script"
    work: str  # "sync", "async" or "blocking" tool, or "stream" (the model streams text)
    seconds: float = 0.5  # how long each tool call takes
    interrupt_at: int = 2  # interrupt once this many tool calls have started
    settle: float = 1.0  # how long to wait after the interrupt for anything still to happen

    @property
    def name(self) -> str:
        return f"{self.path} / {self.work}"


@dataclass
class Outcome:
    """What one interrupt did."""

    latency: float  # interrupt sent -> the cell (or the script) ended
    starts_after: int  # tool calls that started after the interrupt: the run went on
    effects_after: int = 0  # a tool's other marks after the interrupt: its thread went on
    unanswered: int = 0  # stored calls without a response
    twice: int = 0  # calls answered more than once
    recovered: bool = False  # the next message on the session got its answer
    shown: str = ""  # what the interrupted cell showed as its error (or the script's last stderr line)
    problems: list[str] = field(default_factory=list)

    def check(self, scenario: Scenario, limit: float) -> list[str]:
        problems = list(self.problems)
        if self.latency > limit:
            problems.append(f"the interrupt took {self.latency:.2f} s (limit {limit} s)")
        if self.starts_after:
            problems.append(f"{self.starts_after} tool call(s) started after the interrupt")
        if self.effects_after > 1:
            problems.append(f"the tool made {self.effects_after} side effects after the interrupt (at most 1)")
        if self.unanswered or self.twice:
            problems.append(f"{self.unanswered} call(s) unanswered, {self.twice} answered twice")
        if not self.recovered:
            problems.append("the next message on the session did not get its answer")
        return problems


def _marks(log: Path) -> list[tuple[str, float]]:
    if not log.exists():
        return []
    return [tuple(json.loads(line)) for line in log.read_text().splitlines() if line.strip()]  # type: ignore[misc]


def _after(marks: list[tuple[str, float]], sent: float) -> tuple[int, int]:
    """(tool calls started, other side effects made) after the interrupt was sent."""
    late = [what for what, when in marks if when > sent]
    return late.count("start"), len(late) - late.count("start")


async def _until(condition: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the run never got under way")
        await asyncio.sleep(0.01)


def _text(cell: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


def _error(cell: nbformat.NotebookNode) -> str:
    errors = [o for o in cell.outputs if o.output_type == "error"]
    return " | ".join(errors[0].traceback[-1:]) if errors else ""


class _StreamServer(LoopbackServer):
    """An OpenAI-style server that streams text slowly, for as long as anyone listens; it answers
    "again" at once."""

    def _next_reply(self) -> Reply:
        def chunk(text: str, finish: str | None = None) -> dict[str, Any]:
            return {
                "id": "c",
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}],
            }

        headers = {"Content-Type": "text/event-stream"}
        if self.requests[-1].json()["messages"][-1]["content"] == "again":
            return Reply(200, sse(chunk("recovered", "stop"), "[DONE]"), headers=headers)
        return Reply(200, sse(*([chunk("word ")] * 4000)), headers=headers, chunk_delay=0.02)


async def run_in_kernel(scenario: Scenario, rounds: int, folder: Path) -> list[Outcome]:
    """Start a kernel, set the scenario up, and interrupt `rounds` runs in it."""
    log = folder / f"marks-{scenario.path}-{scenario.work}.jsonl".replace("/", "_").replace(" ", "")
    nb = nbformat.v4.new_notebook()
    client = NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True)
    server = _StreamServer() if scenario.work == "stream" else None
    cells = [SETUP.format(log=str(log), steps=STEPS), "%adk sessions --use SESSIONS"]
    if server is None:
        cells.append(TOOLS[scenario.work].format(seconds=scenario.seconds))
        cells.append("bot = __import__('adk_notebook').LlmAgent(name='bot', model=FunctionModel(plan), tools=[step])")
    else:
        server.__enter__()
        cells.append(
            f"bot = __import__('adk_notebook').LlmAgent(name='bot', model=OpenAIModel('gpt-4o-mini', "
            f"base_url={server.url + '/v1'!r}, api_key='loopback'))"
        )
    outcomes = []
    try:
        async with client.async_setup_kernel():
            for source in cells:
                await _execute(client, nb, source)
            for round_ in range(rounds):
                outcomes.append(await _interrupt_one(client, nb, scenario, f"s{round_}", log, server))
    finally:
        if server is not None:
            server.__exit__(None, None, None)
    return outcomes


async def _execute(client: NotebookClient, nb: nbformat.NotebookNode, source: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    nb.cells.append(cell)
    await client.async_execute_cell(cell, len(nb.cells) - 1)
    return cell


async def _interrupt_one(
    client: NotebookClient,
    nb: nbformat.NotebookNode,
    scenario: Scenario,
    sid: str,
    log: Path,
    server: LoopbackServer | None,
) -> Outcome:
    before = len(_marks(log))
    requests = len(server.requests) if server is not None else 0
    cell = nbformat.v4.new_code_cell(RUN[scenario.path].format(sid=sid))
    nb.cells.append(cell)
    running = asyncio.ensure_future(client.async_execute_cell(cell, len(nb.cells) - 1))
    if server is None:  # the run's tool calls have started
        await _until(lambda: sum(1 for what, _ in _marks(log)[before:] if what == "start") >= scenario.interrupt_at)
    else:  # the model is streaming
        await _until(lambda: len(server.requests) > requests)
        await asyncio.sleep(0.3)
    await asyncio.sleep(0.05)
    sent = time.monotonic()
    await client.km.interrupt_kernel()
    await asyncio.wait_for(running, 60)
    latency = time.monotonic() - sent
    check = await _execute(client, nb, CHECK.format(settle=scenario.settle, sid=sid))
    outcome = Outcome(latency, *_after(_marks(log)[before:], sent), shown=_error(cell))
    try:
        stored = json.loads(_text(check).strip().splitlines()[-1])
        outcome.unanswered, outcome.twice = stored["unanswered"], stored["twice"]
    except (IndexError, ValueError, KeyError):
        outcome.problems.append(f"the session could not be read: {_text(check)!r} {_error(check)}")
    following = await _execute(client, nb, NEXT.format(sid=sid))
    outcome.recovered = _text(following).strip() == "recovered"
    if not outcome.recovered:
        outcome.problems.append(f"next message: {_text(following)!r} {_error(following)}")
    return outcome


SCRIPT = """import asyncio, json, sys, time
from adk_notebook import FunctionCall, FunctionModel, LlmAgent, SqliteSessionService, tool

def mark(what):
    with open({log!r}, "a") as f:
        f.write(json.dumps([what, time.monotonic()]) + "\\n")

{tool}

def plan(request):
    done = sum(1 for c in request.contents if c.role == "tool")
    return FunctionCall("step", {{}}) if done < {steps} else "all done"

with SqliteSessionService({db!r}) as sessions:
    agent = LlmAgent(name="bot", model=FunctionModel(plan), tools=[step])
    agent.run("go", session_id="s", session_service=sessions)
"""


async def interrupt_script(scenario: Scenario, folder: Path) -> Outcome:
    """`python script.py` running `agent.run()`; SIGINT once its tool has started, as Ctrl-C would."""
    log, db, script = folder / "script-marks.jsonl", folder / "script.db", folder / "script.py"
    for path in (log, db):
        path.unlink(missing_ok=True)
    script.write_text(
        SCRIPT.format(log=str(log), db=str(db), steps=STEPS, tool=TOOLS[scenario.work].format(seconds=scenario.seconds))
    )
    process = subprocess.Popen(
        [sys.executable, str(script)], stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    await _until(lambda: sum(1 for what, _ in _marks(log) if what == "start") >= scenario.interrupt_at)
    await asyncio.sleep(0.05)
    sent = time.monotonic()
    process.send_signal(signal.SIGINT)
    while process.poll() is None and time.monotonic() - sent < 60:
        await asyncio.sleep(0.005)
    latency = time.monotonic() - sent
    if process.poll() is None:
        process.kill()
    stderr = process.communicate()[1]
    await asyncio.sleep(scenario.settle)
    outcome = Outcome(latency, *_after(_marks(log), sent), shown=(stderr.strip().splitlines() or [""])[-1])
    if "KeyboardInterrupt" not in stderr:
        outcome.problems.append(f"the script did not end with KeyboardInterrupt: {stderr[-500:]!r}")
    with SqliteSessionService(db) as sessions:
        session = await sessions.get(app_name="bot", user_id="user", session_id="s")
        calls = [c.id for e in session.events for c in e.function_calls()]
        answers = [r.id for e in session.events for r in e.function_responses()]
        outcome.unanswered, outcome.twice = len(set(calls) - set(answers)), len(answers) - len(set(answers))
        with sqlite3.connect(db) as conn:
            claims = conn.execute("SELECT run_id FROM session_runs").fetchall()
        if claims:
            outcome.problems.append(f"the run's claim on the session was left in the file: {claims}")
        again = LlmAgent(name="bot", model=ScriptedModel(["recovered"]))
        outcome.recovered = (
            await again.run_async("again", session_id="s", session_service=sessions)
        ).text == "recovered"
    return outcome


SCENARIOS = [
    Scenario("chat", "sync"),
    Scenario("chat", "ticks", seconds=3, interrupt_at=1),
    Scenario("chat", "blocking", seconds=5, interrupt_at=1),
    Scenario("chat", "stream"),
    # The thread of an interrupted sync call blocked in C (time.sleep) runs on until that returns;
    # settle until it is done, so that threads left running do not add up over the rounds (the
    # tool is refused past MAX_LEFT_RUNNING).
    # The call outlasts the tests' limit after the interrupt (as in the blocking and script
    # cases): a cell that waited for the thread would take ~4 s, where 3 s passed.
    Scenario("fallback", "sync", seconds=5, interrupt_at=1, settle=5.5),
    # A worker's loop blocked by the tool: the cell stops waiting for it, the run ends after.
    Scenario("fallback", "blocking", seconds=5, interrupt_at=1, settle=5.5),
    Scenario("agent.run", "sync"),
    Scenario("agent.run", "async"),
    Scenario("agent.run", "ticks", seconds=3, interrupt_at=1),
    Scenario("agent.run", "blocking", seconds=5, interrupt_at=1, settle=5.5),
    Scenario("script", "sync", seconds=5, interrupt_at=1),
    Scenario("script", "blocking", seconds=5, interrupt_at=1),
    Scenario("script", "ticks", seconds=3, interrupt_at=1),
]


@contextmanager
def cpu_load(processes: int = 2) -> Iterator[None]:
    """Other work competing for the CPU: processes that spin until stopped."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(processes)]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


async def interrupt(scenario: Scenario, rounds: int, folder: Path) -> list[Outcome]:
    """`rounds` interrupts of `scenario`: in one kernel, or one script process each."""
    if scenario.path == "script":
        return [await interrupt_script(scenario, folder) for _ in range(rounds)]
    return await run_in_kernel(scenario, rounds, folder)
