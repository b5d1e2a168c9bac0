"""Crash persistence: kill -9 a process in the middle of runs, and the SQLite file stays whole.

A worker process runs agents in a loop against one SqliteSessionService file: each run is a
model turn with a PARALLEL batch of tools that write `app:`, `user:`, session and `temp:`
state, then a final answer saved with `output_key`; after each completed run the worker
prints one line with the run's invocation id and event ids. The test SIGKILLs it at a random
moment, 50 times, reopens the file each time and checks:
- `PRAGMA integrity_check` is "ok" and no foreign key dangles;
- every run the worker REPORTED complete is in the file with exactly its events;
- no event is half-written: every row parses and round-trips as an Event, ids are unique,
  and each worker has at most one unreported run (the one it was killed in), whose stored
  events are a prefix of a run;
- each scope's state row (sessions.state, user_states, app_states) equals the fold of the
  stored events' deltas for that scope;
- a kill inside a tool leaves a stored call without a response; the next run on that session
  (the test's own, in this process) answers it with code "interrupted" BEFORE its model call:
  the history the model receives has every call answered, and the file has no call left open;
then the test itself appends a run to the file (on every session a kill left a call open in,
and one random session), to prove it still works.

Workers are forked from one Python process that imported adk_notebook once (importing it
takes ~1.5 s here, so 50 fresh interpreters would spend the time budget on imports); each
worker is a real separate process, killed with SIGKILL by its pid.

Also: two runs on one session at once. One Runner refuses the second (`session_busy`), and so
do two processes, or two services in one process, on one file (the claim is kept in the file):
every attempted run either completes whole or is refused before it writes anything, the
stored conversation never splits a call from its response, no state update is lost, and the
runs proceed one after the other. At the end, the two ways the claim once let a second run
through, each as a minimal reproduction: a run that claims the session right after another
ended must work on what is stored then (not on what it read before claiming), and a consumer
that steps the stream in a task per event keeps its claim between events.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from adk_notebook import (
    AdkError,
    Event,
    FunctionCall,
    FunctionModel,
    FunctionTool,
    LlmAgent,
    LlmRequest,
    Runner,
    SqliteSessionService,
    ToolContext,
)

KILLS = 50
SEED = 8_2026
APP = "crashapp"
SESSIONS = {"alice": ["a1", "a2"], "bob": ["b1"]}

# The worker side: a zygote that imports the library once, then forks one worker per command.
WORKER = r'''
import asyncio, json, os, random, sys, time
from adk_notebook import AdkError, FunctionCall, FunctionModel, FunctionTool, LlmAgent, Runner, SqliteSessionService

APP = "crashapp"
SESSIONS = {"alice": ["a1", "a2"], "bob": ["b1"]}
DUO_RUNS = 3  # runs each of two writers completes on alice/shared


def out(line):
    os.write(1, (line + "\n").encode())  # one write() per line: whole lines or nothing


def make_agent(rng, tool_sleep, hang=False, fixed=0.0):
    async def bump(ctx, args):
        n = args["n"]
        ctx.state["count"] = ctx.state.get("count", 0) + 1
        ctx.state["user:last"] = n
        ctx.state["app:total"] = ctx.state.get("app:total", 0) + 1
        ctx.state[f"k{n % 7}"] = n
        ctx.state["temp:scratch"] = n
        if hang:
            out("IN_TOOL")
            await asyncio.sleep(60)
        await asyncio.sleep(fixed or rng.uniform(0, tool_sleep))
        return {"n": n}

    counter = iter(range(10**9))

    def model(request):
        if request.contents[-1].role == "tool":
            return "answered " + request.contents[-1].parts[0].function_response.id
        return [FunctionCall("bump", {"n": next(counter)}) for _ in range(2)]

    return LlmAgent(name="crashy", model=FunctionModel(model), tools=[FunctionTool("bump", "Bump.", bump)],
                    tool_execution_strategy="parallel", output_key="answer")


async def duo_runs(runner, wid, rng, done, busy):
    """Attempt runs on alice/shared until DUO_RUNS completed; a refusal (session_busy) is reported
    and retried after a short random pause. Any other error ends the writer."""
    attempt = completed = 0
    while completed < DUO_RUNS:
        assert attempt < 3000, f"writer {wid} never got the session"
        text = f"run {wid}.{attempt}"
        try:
            events = [e async for e in runner.run(user_id="alice", session_id="shared", content=text) if not e.partial]
        except AdkError as exc:
            if exc.code != "session_busy":
                raise
            busy({"w": wid, "run": attempt, "text": text})
            await asyncio.sleep(rng.uniform(0.001, 0.01))
        else:
            done({"w": wid, "run": attempt, "user": "alice", "sid": "shared",
                  "inv": events[0].invocation_id, "ids": [e.id for e in events]})
            completed += 1
        attempt += 1


async def work(db, seed, wid, mode):
    rng = random.Random(seed)
    service = SqliteSessionService(db, timeout=30)
    runner = Runner(app_name=APP, agent=make_agent(rng, 0.002, hang=mode == "hang", fixed=0.05 if mode == "duo" else 0),
                    session_service=service)
    for user, ids in SESSIONS.items():
        for sid in ids + ["shared"]:
            if await service.get(app_name=APP, user_id=user, session_id=sid) is None:
                try:
                    await service.create(app_name=APP, user_id=user, session_id=sid, state={"created": sid})
                except Exception:  # another worker created it first
                    pass
    out(f"READY {wid}")
    if mode == "duo":  # both workers start together
        while not os.path.exists(db + ".go"):
            time.sleep(0.001)
        await duo_runs(runner, wid, rng, lambda r: out("DONE " + json.dumps(r)), lambda r: out("BUSY " + json.dumps(r)))
        return
    run = 0
    while True:
        user = rng.choice(list(SESSIONS))
        sid = rng.choice(SESSIONS[user])
        events = [e async for e in runner.run(user_id=user, session_id=sid, content=f"run {wid}.{run}") if not e.partial]
        out("DONE " + json.dumps({"w": wid, "run": run, "user": user, "sid": sid,
                                  "inv": events[0].invocation_id, "ids": [e.id for e in events]}))
        run += 1


for line in sys.stdin:
    cmd, *rest = line.split()
    if cmd == "FORK":
        db, seed, wid, mode = rest
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                asyncio.run(work(db, int(seed), int(wid), mode))
            except BaseException as exc:
                out(f"FAILED {wid} {type(exc).__name__}: {exc}")
                code = 1
            os._exit(code)
        out(f"PID {wid} {pid}")
    elif cmd == "REAP":
        pid = int(rest[0])
        _, status = os.waitpid(pid, 0)
        out(f"EXIT {pid} {status}")
'''


class Zygote:
    """The forking worker process, driven line by line."""

    def __init__(self, folder: Path) -> None:
        script = folder / "crash_worker.py"
        script.write_text(WORKER)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        self.proc = subprocess.Popen(
            [sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1, env=env
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put("")

    def send(self, line: str) -> None:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def until(
        self, prefix: str, sink: list[dict[str, Any]], timeout: float = 60, refused: list[dict[str, Any]] | None = None
    ) -> str:
        """Read lines until one starts with `prefix`; DONE reports on the way go to `sink`, BUSY
        reports (a run refused with session_busy) to `refused` (unexpected where it is None)."""
        deadline = time.monotonic() + timeout
        while True:
            line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            assert line, "the worker process died"
            assert line.endswith("\n"), f"a torn line: {line!r}"
            line = line.rstrip("\n")
            if line.startswith("DONE "):
                sink.append(json.loads(line[5:]))
            elif line.startswith("BUSY "):
                assert refused is not None, f"a run was refused: {line}"
                refused.append(json.loads(line[5:]))
            elif line.startswith("FAILED"):
                raise AssertionError(f"a worker failed: {line}")
            elif line.startswith(prefix):
                return line

    def fork(
        self,
        db: Path,
        seed: int,
        wid: int,
        mode: str,
        sink: list[dict[str, Any]],
        refused: list[dict[str, Any]] | None = None,
    ) -> int:
        self.send(f"FORK {db} {seed} {wid} {mode}")
        return int(self.until(f"PID {wid} ", sink, refused=refused).split()[2])

    def reap(self, pid: int, sink: list[dict[str, Any]], refused: list[dict[str, Any]] | None = None) -> int:
        self.send(f"REAP {pid}")
        return int(self.until(f"EXIT {pid} ", sink, refused=refused).split()[2])

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(10)


@pytest.fixture(scope="module")
def zygote(tmp_path_factory: pytest.TempPathFactory) -> Any:
    made = Zygote(tmp_path_factory.mktemp("zygote"))
    yield made
    made.close()


# -- checking a file ---------------------------------------------------------------------------
@dataclass
class Verdict:
    events: int = 0
    runs_checked: int = 0
    dangling_calls: int = 0  # stored calls without a response, over all sessions
    dangling_sessions: set[tuple[str, str]] = field(default_factory=set)
    repaired_calls: int = 0  # calls of an earlier run answered "interrupted" at the start of a later one
    problems: list[str] = field(default_factory=list)


def _scope(key: str) -> str:
    return "app" if key.startswith("app:") else "user" if key.startswith("user:") else "session"


def is_repair(event: Event) -> bool:
    """The event a run stores first when an earlier run left calls unanswered: only responses,
    each with code "interrupted"."""
    responses = event.function_responses()
    return (
        event.author != "user"
        and bool(responses)
        and not event.function_calls()
        and all(r.response.get("code") == "interrupted" for r in responses)
    )


def verify(db: Path, reported: list[dict[str, Any]], initial: dict[str, dict[str, Any]]) -> Verdict:
    """Check a (possibly just crashed) session file against what the writers reported."""
    verdict = Verdict()
    problems = verdict.problems
    with sqlite3.connect(db) as conn:
        if (check := conn.execute("PRAGMA integrity_check").fetchall()) != [("ok",)]:
            problems.append(f"integrity_check: {check}")
        if dangling := conn.execute("PRAGMA foreign_key_check").fetchall():
            problems.append(f"foreign_key_check: {dangling}")
        rows = conn.execute(
            "SELECT seq, user_id, session_id, id, data FROM events WHERE app_name = ? ORDER BY seq", (APP,)
        ).fetchall()
        sessions = {
            (u, s): json.loads(st)
            for u, s, st in conn.execute("SELECT user_id, id, state FROM sessions WHERE app_name = ?", (APP,))
        }
        users = {
            u: json.loads(st)
            for u, st in conn.execute("SELECT user_id, state FROM user_states WHERE app_name = ?", (APP,))
        }
        app_row = conn.execute("SELECT state FROM app_states WHERE app_name = ?", (APP,)).fetchone()
    verdict.events = len(rows)
    by_invocation: dict[str, list[tuple[tuple[str, str], Event]]] = defaultdict(list)  # repairs left out
    seen_ids: set[str] = set()
    seen_calls: set[str] = set()
    open_calls: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)  # session -> call id -> its invocation
    folds: dict[str, Any] = {"app": {}, "user": defaultdict(dict), "session": {k: dict(v) for k, v in initial.items()}}
    for seq, user, sid, event_id, data in rows:
        try:
            event = Event.from_dict(json.loads(data))
        except Exception as exc:  # noqa: BLE001
            problems.append(f"event row {seq} does not parse: {exc}")
            continue
        if event.id != event_id or event_id in seen_ids:
            problems.append(f"event row {seq}: id {event_id} mismatched or repeated")
        seen_ids.add(event_id)
        # calls and responses, session by session: each call answered at most once, after it
        here = open_calls[(user, sid)]
        repair = is_repair(event)
        if repair and by_invocation.get(event.invocation_id):
            problems.append(f"event row {seq}: 'interrupted' answers stored in the middle of a run")
        for call in event.function_calls():
            if call.id in seen_calls:
                problems.append(f"event row {seq}: call id {call.id} repeated")
            seen_calls.add(call.id)
            here[call.id] = event.invocation_id
        for response in event.function_responses():
            if response.id not in here:
                problems.append(f"event row {seq}: response {response.id} answers no open call (answered twice?)")
                continue
            if repair and here[response.id] == event.invocation_id:
                problems.append(f"event row {seq}: a run answered its own call 'interrupted'")
            verdict.repaired_calls += repair
            del here[response.id]
        by_invocation[event.invocation_id].append(((user, sid), event))
        for key, value in event.actions.state_delta.items():
            if key.startswith("temp:"):
                problems.append(f"event {event_id} stored a temp: key")
            elif _scope(key) == "app":
                folds["app"][key] = value
            elif _scope(key) == "user":
                folds["user"][user][key] = value
            else:
                folds["session"].setdefault(f"{user}/{sid}", {})[key] = value
    verdict.dangling_calls = sum(len(calls) for calls in open_calls.values())
    verdict.dangling_sessions = {where for where, calls in open_calls.items() if calls}
    # every reported run: all its events (the "interrupted" answers it stored first among them, as
    # it yields those too), in its session, and nothing else under its invocation id
    for run in reported:
        stored = by_invocation.get(run["inv"], [])
        if [e.id for _, e in stored] != run["ids"] or any(where != (run["user"], run["sid"]) for where, _ in stored):
            problems.append(
                f"reported run {run['w']}.{run['run']} is not fully there: {len(stored)}/{len(run['ids'])} events"
            )
        verdict.runs_checked += 1
    # unreported runs: at most one per worker, its last, and a prefix of a run
    reported_invocations = {run["inv"] for run in reported}
    last_run = defaultdict(lambda: -1)
    for run in reported:
        last_run[run["w"]] = max(last_run[run["w"]], run["run"])
    unreported = defaultdict(list)
    for invocation, stored in by_invocation.items():
        if invocation in reported_invocations:
            continue
        first = stored[0][1]
        if first.author != "user" or not first.text.startswith(("run ", "parent ")):
            problems.append(f"invocation {invocation} does not start with its user message")
            continue
        if first.text.startswith("run "):
            worker, number = map(int, first.text[4:].split("."))
            unreported[worker].append(number)
        kinds = ["user"] + [
            "calls" if e.function_calls() else "responses" if e.function_responses() else "answer"
            for _, e in stored[1:]
        ]
        if kinds != ["user", "calls", "responses", "answer"][: len(kinds)]:
            problems.append(f"invocation {invocation} is not a prefix of a run: {kinds}")
    for worker, numbers in unreported.items():
        if len(numbers) > 1 or numbers[0] != last_run[worker] + 1:
            problems.append(
                f"worker {worker}: unreported runs {numbers} after its last reported run {last_run[worker]}"
            )
    # state: each scope's row is the fold of that scope's deltas
    if (json.loads(app_row[0]) if app_row else {}) != folds["app"]:
        problems.append(f"app state {app_row} != fold {folds['app']}")
    for user, state in users.items():
        if state != folds["user"].get(user, {}):
            problems.append(f"user {user} state {state} != fold {folds['user'].get(user)}")
    for (user, sid), state in sessions.items():
        if state != folds["session"].get(f"{user}/{sid}", {}):
            problems.append(f"session {user}/{sid} state {state} != fold {folds['session'].get(f'{user}/{sid}')}")
    return verdict


def run_claims(db: Path) -> list[tuple[Any, ...]]:
    """The rows of the file's run claims (a session held by a run in progress)."""
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT app_name, user_id, session_id, run_id, pid, host FROM session_runs").fetchall()


def parent_agent() -> tuple[LlmAgent, FunctionModel]:
    async def bump(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
        ctx.state["count"] = ctx.state.get("count", 0) + 1
        ctx.state["user:last"] = -1
        ctx.state["app:total"] = ctx.state.get("app:total", 0) + 1
        return {"n": args["n"]}

    def model(request: LlmRequest) -> Any:
        return "parent done" if request.contents[-1].role == "tool" else [FunctionCall("bump", {"n": -1})]

    llm = FunctionModel(model)
    return LlmAgent(name="crashy", model=llm, tools=[FunctionTool("bump", "Bump.", bump)], output_key="answer"), llm


@dataclass
class ParentRun:
    report: dict[str, Any]
    was_dangling: int  # calls of the session without a response before this run
    sent_unanswered: int  # calls the model received without a response in the same request
    not_interrupted: int  # formerly dangling calls the model did not see answered with code "interrupted"


def open_calls_of(db: Path, user: str, sid: str) -> set[str]:
    """Ids of the stored calls of one session that have no stored response."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT data FROM events WHERE app_name = ? AND user_id = ? AND session_id = ? ORDER BY seq",
            (APP, user, sid),
        ).fetchall()
    events = [Event.from_dict(json.loads(d)) for (d,) in rows]
    return {c.id for e in events for c in e.function_calls()} - {r.id for e in events for r in e.function_responses()}


def history_check(sent: list[Any], dangling: set[str]) -> tuple[int, int]:
    """(calls sent without a response, formerly dangling calls not answered "interrupted")."""
    calls = {c.id for content in sent for c in content.function_calls()}
    codes = {r.id: r.response.get("code") for content in sent for r in content.function_responses()}
    return len(calls - set(codes)), sum(1 for c in dangling if codes.get(c) != "interrupted")


async def parent_run(db: Path, user: str, sid: str, k: int) -> ParentRun:
    dangling = open_calls_of(db, user, sid)
    agent, model = parent_agent()
    with SqliteSessionService(db) as service:
        runner = Runner(app_name=APP, agent=agent, session_service=service)
        events = [e async for e in runner.run(user_id=user, session_id=sid, content=f"parent {k}") if not e.partial]
        assert events[-1].text == "parent done"
        session = await service.get(app_name=APP, user_id=user, session_id=sid)
        assert session.state["answer"] == "parent done"
    assert not open_calls_of(db, user, sid), "the run left a call of its session without a response"
    unanswered, not_interrupted = history_check(model.requests[0].contents, dangling)
    report = {
        "w": -1,
        "run": k,
        "user": user,
        "sid": sid,
        "inv": events[0].invocation_id,
        "ids": [e.id for e in events],
    }
    return ParentRun(report, len(dangling), unanswered, not_interrupted)


def _initial() -> dict[str, dict[str, Any]]:
    return {f"{u}/{s}": {"created": s} for u, ids in SESSIONS.items() for s in ids + ["shared"]}


# -- the tests ---------------------------------------------------------------------------------
def test_kill_9_in_the_middle_of_runs_loses_nothing_reported(zygote: Zygote, tmp_path: Path, tally: Any) -> None:
    rng = random.Random(SEED)
    db = tmp_path / "sessions.db"
    reported: list[dict[str, Any]] = []
    lost = 0
    left_open = 0  # calls a kill left without a response (found in the file after the kill)
    repaired_wrong = 0  # of those, calls the next run sent its model without an "interrupted" answer
    parent_runs = 0
    killed: set[int] = set()
    started = time.perf_counter()
    try:
        for k in range(KILLS):
            sink: list[dict[str, Any]] = []
            pid = zygote.fork(db, rng.randrange(2**32), k, "loop", sink)
            zygote.until(f"READY {k}", sink)
            time.sleep(rng.choice([0.0, rng.uniform(0, 0.01), rng.uniform(0, 0.3)]))
            os.kill(pid, signal.SIGKILL)
            killed.add(pid)
            status = zygote.reap(pid, sink)
            assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, f"worker {k} ended otherwise"
            reported += sink
            verdict = verify(db, reported, _initial())  # reopened after every kill
            lost += len(verdict.problems)
            assert not verdict.problems, verdict.problems
            left_open += verdict.dangling_calls
            # the file still works: a run from here on every session the kill left a call open in,
            # and on a random one; each answers the open calls "interrupted" before its model call
            user = rng.choice(list(SESSIONS))
            for where in sorted(verdict.dangling_sessions | {(user, rng.choice(SESSIONS[user]))}):
                run = asyncio.run(parent_run(db, *where, k))
                reported.append(run.report)
                parent_runs += 1
                repaired_wrong += run.not_interrupted
                assert run.sent_unanswered == 0, f"the model was sent {run.sent_unanswered} unanswered call(s)"
                assert run.not_interrupted == 0, f"{run.not_interrupted} open call(s) not answered 'interrupted'"
        verdict = verify(db, reported, _initial())
        assert not verdict.problems, verdict.problems
        assert verdict.dangling_calls == 0 and verdict.repaired_calls == left_open
        # claims left in the file are those of killed workers on sessions not run on since (stale)
        assert {pid for *_, pid, _ in run_claims(db)} <= killed, run_claims(db)
        check_the_checker(db, reported, tmp_path)
        with SqliteSessionService(db) as service:  # and the service reads it all back
            for user, ids in SESSIONS.items():
                for sid in ids:
                    session = asyncio.run(service.get(app_name=APP, user_id=user, session_id=sid))
                    assert session is not None and all(isinstance(e, Event) for e in session.events)
    finally:
        worker_runs = sum(1 for r in reported if r["w"] >= 0)
        tally.record(
            "kill -9 mid-run: reported runs present",
            worker_runs,
            lost,
            f"{KILLS} kills, {parent_runs} runs appended by the parent after kills, "
            f"{time.perf_counter() - started:.1f}s",
        )
        tally.record(
            "kill -9 mid-run: calls left unanswered",
            left_open,
            repaired_wrong,
            "calls a kill left without a response; the next run answered each 'interrupted' before its model call",
        )


def check_the_checker(db: Path, reported: list[dict[str, Any]], folder: Path) -> None:
    """`verify` must see each kind of damage it claims to rule out (on copies of the file)."""
    damage = {
        "a reported event lost": "DELETE FROM events WHERE id = '{event}'",
        "a half-written event": "UPDATE events SET data = substr(data, 1, length(data) / 2) WHERE id = '{event}'",
        "app state out of step": "UPDATE app_states SET state = '{{\"app:total\": -5}}'",
        "session state out of step": "UPDATE sessions SET state = '{{}}' WHERE id = 'a1'",
        "a response stored twice": "INSERT INTO events (app_name, user_id, session_id, id, data, timestamp) "
        "SELECT app_name, user_id, session_id, id || 'x', replace(data, id, id || 'x'), timestamp "
        "FROM events "
        "WHERE id = '{response}'",
    }
    # A run of its own: [user, call, response, answer] (a parent run that first answered a call a kill
    # left open has one event more, and its ids[2] is not a response).
    run = next(r for r in reported[len(reported) // 2 :] + reported if len(r["ids"]) == 4)
    for what, sql in damage.items():
        copy = folder / "damaged.db"
        with sqlite3.connect(db) as source, sqlite3.connect(copy) as target:
            source.backup(target)
            target.execute(sql.format(event=run["ids"][1], response=run["ids"][2]))
        assert verify(copy, reported, _initial()).problems, f"verify missed: {what}"
        copy.unlink()
    # a call left without its response is counted as open
    with sqlite3.connect(db) as source, sqlite3.connect(copy) as target:
        source.backup(target)
        target.execute("DELETE FROM events WHERE id = ?", (run["ids"][2],))
    assert verify(copy, reported, _initial()).dangling_calls > 0, "verify missed: a call without its response"
    copy.unlink()


async def test_two_runs_on_one_session_with_one_runner_are_refused(tmp_path: Path, tally: Any) -> None:
    gate = asyncio.Event()

    async def wait(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
        gate.set()
        await asyncio.sleep(0.2)
        return {}

    with tally.case("two runs, one session, one Runner (SQLite)"):
        model = FunctionModel(lambda r: "done" if r.contents[-1].role == "tool" else FunctionCall("wait", {}))
        with SqliteSessionService(tmp_path / "s.db") as service:
            runner = Runner(
                app_name=APP,
                agent=LlmAgent(name="a", model=model, tools=[FunctionTool("wait", "Wait.", wait)]),
                session_service=service,
            )
            await service.create(app_name=APP, user_id="u", session_id="s")
            first = asyncio.create_task(runner.run_to_result(user_id="u", session_id="s", content="1"))
            await asyncio.wait_for(gate.wait(), 5)
            with pytest.raises(AdkError) as busy:
                await runner.run_to_result(user_id="u", session_id="s", content="2")
            assert busy.value.code == "session_busy"
            assert (await first).text == "done"


# -- two writers on one session ----------------------------------------------------------------
DUO_RUNS = 3  # as in WORKER: runs each writer completes


@dataclass
class Duo:
    how: str
    db: Path
    reported: list[dict[str, Any]]  # completed runs
    refused: list[dict[str, Any]]  # attempts refused with session_busy
    events: list[Event]
    verdict: Verdict
    count: int
    bumps: int
    claims_left: list[tuple[Any, ...]]

    def split_pairs(self) -> int:
        """Model events with calls NOT immediately followed by the event answering them."""
        split = 0
        for index, event in enumerate(self.events):
            calls = {c.id for c in event.function_calls()}
            if calls:
                after = self.events[index + 1] if index + 1 < len(self.events) else None
                if after is None or {r.id for r in after.function_responses()} != calls:
                    split += 1
        return split

    def interleaved(self) -> int:
        """Invocations whose events are not contiguous."""
        order = [e.invocation_id for e in self.events]
        return sum(
            1
            for inv in set(order)
            if len({i for i, o in enumerate(order) if o == inv})
            != max(i for i, o in enumerate(order) if o == inv) - order.index(inv) + 1
        )


def _worker_namespace() -> dict[str, Any]:
    """The worker's own definitions (make_agent, duo_runs, ...), loaded into this process."""
    namespace: dict[str, Any] = {}
    exec(compile(WORKER.split("\nfor line in sys.stdin:")[0], "crash_worker", "exec"), namespace)  # noqa: S102  # our own worker script
    return namespace


async def _two_services_in_one_process(db: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The same as two processes, inside one: two services (two connections), two Runners."""
    namespace = _worker_namespace()
    reported: list[dict[str, Any]] = []
    refused: list[dict[str, Any]] = []

    async def one(wid: int) -> None:
        with SqliteSessionService(db, timeout=30) as service:
            runner = Runner(
                app_name=APP, agent=namespace["make_agent"](random.Random(wid), 0, fixed=0.05), session_service=service
            )
            await namespace["duo_runs"](runner, wid, random.Random(100 + wid), reported.append, refused.append)

    with SqliteSessionService(db) as service:
        for user, ids in SESSIONS.items():
            for sid in ids + ["shared"]:
                await service.create(app_name=APP, user_id=user, session_id=sid, state={"created": sid})
    await asyncio.gather(one(0), one(1))
    return reported, refused


@pytest.fixture(scope="module", params=["two processes", "two services in one process"])
def duo(request: pytest.FixtureRequest, zygote: Zygote, tmp_path_factory: pytest.TempPathFactory) -> Duo:
    """Two writers start runs on alice/shared at the same moment and retry when refused, until
    each has completed DUO_RUNS runs."""
    db = tmp_path_factory.mktemp("duo") / "sessions.db"
    if request.param == "two processes":
        reported: list[dict[str, Any]] = []
        refused: list[dict[str, Any]] = []
        pids = [zygote.fork(db, wid, wid, "duo", reported, refused) for wid in (0, 1)]
        ready = {zygote.until("READY ", reported, refused=refused) for _ in (0, 1)}
        assert ready == {"READY 0", "READY 1"}
        Path(f"{db}.go").touch()
        for pid in pids:
            assert zygote.reap(pid, reported, refused) == 0
    else:
        reported, refused = asyncio.run(_two_services_in_one_process(db))
    verdict = verify(db, reported, _initial())
    with SqliteSessionService(db) as service:
        session = asyncio.run(service.get(app_name=APP, user_id="alice", session_id="shared"))
    bumps = sum(len(e.function_calls()) for e in session.events)
    return Duo(
        request.param,
        db,
        reported,
        refused,
        session.events,
        verdict,
        session.state.get("count", 0),
        bumps,
        run_claims(db),
    )


def test_two_writers_on_one_session_each_run_is_whole_or_refused(
    duo: Duo, tally: Any, request: pytest.FixtureRequest
) -> None:
    """Every attempted run either completed with all its events stored, or was refused with
    session_busy before it wrote anything (not even its user message)."""
    stored_runs: dict[str, list[str]] = defaultdict(list)
    for event in duo.events:
        stored_runs[event.invocation_id].append(event.id)
    user_texts = {e.text for e in duo.events if e.author == "user"}
    incomplete = sum(1 for r in duo.reported if stored_runs.get(r["inv"]) != r["ids"])
    traced = sum(1 for r in duo.refused if r["text"] in user_texts)
    strangers = set(stored_runs) - {r["inv"] for r in duo.reported}  # runs stored that no writer completed
    tally.record(
        f"two writers on one session: run whole or refused ({duo.how})",
        len(duo.reported) + len(duo.refused),
        incomplete + traced + len(strangers),
        f"{len(duo.reported)} runs completed, {len(duo.refused)} refused with session_busy",
    )
    assert not duo.verdict.problems, duo.verdict.problems
    assert incomplete == 0 and traced == 0 and not strangers, (incomplete, traced, strangers)
    assert sorted(r["w"] for r in duo.reported) == [0] * DUO_RUNS + [1] * DUO_RUNS
    assert duo.refused, "the two writers never overlapped: nothing was tested"
    assert len(duo.events) == sum(len(r["ids"]) for r in duo.reported)
    assert duo.verdict.dangling_calls == 0 and duo.verdict.repaired_calls == 0
    codes = {r.response.get("code") for e in duo.events for r in e.function_responses()}
    assert not codes & {"interrupted", "cancelled"}, codes


def test_two_writers_on_one_session_keep_call_and_response_together(duo: Duo, tally: Any) -> None:
    """The stored conversation is one run after the other: no call is separated from its response,
    so a provider accepts the history."""
    with tally.case(f"two writers on one session: call/response pairs kept together ({duo.how})"):
        assert duo.split_pairs() == 0, f"{duo.split_pairs()} call/response pairs split"
        assert duo.interleaved() == 0, f"{duo.interleaved()} runs interleaved"


def test_two_writers_on_one_session_lose_no_state_update(duo: Duo, tally: Any, request: pytest.FixtureRequest) -> None:
    """Each run reads the state the previous one left: `count` equals the increments stored."""
    with tally.case(f"two writers on one session: no state update lost ({duo.how})"):
        assert duo.bumps == 2 * 2 * DUO_RUNS  # two writers, two parallel calls per run
        assert duo.count == duo.bumps, f"count {duo.count} after {duo.bumps} increments"


def test_two_writers_on_one_session_release_it_for_the_next_run(duo: Duo, tally: Any) -> None:
    """When both writers are done no claim is left, and the next run (from here) proceeds."""
    with tally.case(f"two writers on one session: next run proceeds ({duo.how})"):
        assert duo.claims_left == [], duo.claims_left
        run = asyncio.run(parent_run(duo.db, "alice", "shared", 0))
        assert run.was_dangling == 0 and run.sent_unanswered == 0
        verdict = verify(duo.db, [*duo.reported, run.report], _initial())
        added = [p for p in verdict.problems if p not in duo.verdict.problems]  # the writers' own: tested above
        assert not added and verdict.dangling_calls == 0, added
        assert run_claims(duo.db) == []


def test_a_run_after_a_crash_inside_a_tool_sends_every_call_answered(
    zygote: Zygote, tmp_path: Path, tally: Any
) -> None:
    """A process killed while a tool runs leaves a stored call without a response; the next run
    (here, in another process) answers it "interrupted" before it calls the model."""
    with tally.case("crash inside a tool, then the next run"):
        db = tmp_path / "sessions.db"
        sink: list[dict[str, Any]] = []
        pid = zygote.fork(db, 1, 999, "hang", sink)
        zygote.until("IN_TOOL", sink)
        os.kill(pid, signal.SIGKILL)
        zygote.reap(pid, sink)
        user, sid = next((u, s) for u in SESSIONS for s in SESSIONS[u] if open_calls_of(db, u, s))
        dangling = open_calls_of(db, user, sid)
        assert [row[4] for row in run_claims(db)] == [pid], "the killed run's claim is not in the file"
        run = asyncio.run(parent_run(db, user, sid, 0))  # asserts no call of the session is left open
        assert run.sent_unanswered == 0, f"the model was sent {run.sent_unanswered} unanswered call(s)"
        assert run.not_interrupted == 0, (
            f"{run.not_interrupted} of {len(dangling)} open call(s) not answered 'interrupted'"
        )
        assert run_claims(db) == [], "the stale claim of the killed run was not taken over and released"
        verdict = verify(db, [run.report], _initial())
        assert not verdict.problems, verdict.problems
        assert verdict.dangling_calls == 0 and verdict.repaired_calls == len(dangling) == 2


# -- what the session claim once let through (each a minimal reproduction) -------------------------
def _bump_runner(service: Any, gate: asyncio.Event, sleep: float) -> Runner:
    """A run = one call of a tool that reads `count`, waits, and writes count + 1."""

    async def bump(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
        gate.set()
        seen = ctx.state.get("count", 0)
        await asyncio.sleep(sleep)
        ctx.state["count"] = seen + 1
        return {"count": seen + 1}

    model = FunctionModel(lambda r: "done" if r.contents[-1].role == "tool" else FunctionCall("bump", {}))
    return Runner(
        app_name=APP,
        agent=LlmAgent(name="a", model=model, tools=[FunctionTool("bump", "Bump.", bump)]),
        session_service=service,
    )


def _pairs_problems(events: list[Event]) -> list[str]:
    problems = []
    open_calls: set[str] = set()
    for event in events:
        open_calls |= {c.id for c in event.function_calls()}
        for response in event.function_responses():
            if response.id not in open_calls:
                problems.append(f"call {response.id} answered twice ({response.response.get('code')})")
            open_calls.discard(response.id)
    return problems + [f"call {c} never answered" for c in open_calls]


async def test_a_run_claiming_the_session_works_on_what_is_stored_then(tmp_path: Path, tally: Any) -> None:
    with tally.case("run that gets the claim as another ends: sees the stored session"):

        class SlowRead(SqliteSessionService):
            """A get() that returns its snapshot late, as one over a network would."""

            late = 0.0

            async def get(self, **kwargs: Any) -> Any:
                snapshot = await super().get(**kwargs)
                delay, self.late = self.late, 0.0
                await asyncio.sleep(delay)
                return snapshot

        gate = asyncio.Event()
        with SlowRead(tmp_path / "s.db") as service:
            runner = _bump_runner(service, gate, sleep=0.05)
            await service.create(app_name=APP, user_id="u", session_id="s")
            first = asyncio.create_task(runner.run_to_result(user_id="u", session_id="s", content="1"))
            await asyncio.wait_for(gate.wait(), 5)  # the first run is inside its tool
            service.late = 0.2  # the second run's read returns after the first run has ended
            second = await runner.run_to_result(user_id="u", session_id="s", content="2")
            assert (await first).text == second.text == "done"
            session = await service.get(app_name=APP, user_id="u", session_id="s")
        problems = _pairs_problems(session.events)
        if session.state["count"] != 2:
            problems.append(f"count {session.state['count']} after 2 increments")
        assert not problems, problems


async def test_a_consumer_that_steps_the_stream_in_tasks_keeps_its_session(tmp_path: Path, tally: Any) -> None:
    with tally.case("consumer stepping the stream in tasks: second run refused"):
        gate = asyncio.Event()
        with SqliteSessionService(tmp_path / "s.db") as service:
            runner = _bump_runner(service, gate, sleep=0.05)
            await service.create(app_name=APP, user_id="u", session_id="s")
            stream = runner.run(user_id="u", session_id="s", content="1")

            async def consume() -> None:
                while True:
                    try:
                        await asyncio.ensure_future(anext(stream))  # one task per step
                    except StopAsyncIteration:
                        return
                    await asyncio.sleep(0.03)  # e.g. sending the event to a front end

            first = asyncio.create_task(consume())
            await asyncio.sleep(0.01)  # the first run has stored its user message
            problems = []
            try:
                await runner.run_to_result(user_id="u", session_id="s", content="2")
                problems.append("a second run was not refused while the first was in progress")
            except AdkError as exc:
                assert exc.code == "session_busy"
            await first
            session = await service.get(app_name=APP, user_id="u", session_id="s")
        problems += _pairs_problems(session.events)
        bumps = sum(len(e.function_calls()) for e in session.events)
        if session.state.get("count") != bumps:
            problems.append(f"count {session.state.get('count')} after {bumps} increments")
        assert not problems, problems
