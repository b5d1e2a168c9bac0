"""Run leases: one run per session, in this process and across processes and machines.

A run holds its session through a lease: a row in the store naming the run, its process and
machine, and when the claim expires. While the run lives, a heartbeat thread of its process
pushes the expiry forward every third of the lease; a process that dies (kill -9, a lost
machine) stops renewing, and once its lease has expired the next run takes the session over
(the runner then answers the dead run's open calls "interrupted"). A thread, not a task: it
renews while a tool blocks the event loop, and whichever loop steps the run.

Two shortcuts on top of the expiry, each only ever freeing a session sooner:
- a run of this process is judged by its task (`run_is_live`): a cancelled or abandoned run
  no longer holds its session, a live one keeps it whatever its lease says;
- a lease whose process on this machine (and in this pid namespace: containers may share a
  host name) is gone, or whose pid another process now has (told apart by the process start
  time), is stale at once.
A holder this process cannot see is judged by its lease alone; no pid check ever keeps a
session past the lease's expiry.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Collection, Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from ..core.errors import AdkError

__all__ = [
    "Heartbeat",
    "Lease",
    "held_by_another",
    "lease_is_live",
    "lease_lost",
    "mark_run_live",
    "run_is_live",
    "run_marker",
]

# The runs in progress in this process, by run id, with the task that drives each. A run whose
# task has ended (its consumer walked away without closing the stream, or was cancelled
# between two events) no longer holds its session.
_LIVE_RUNS: dict[str, asyncio.Task[object] | None] = {}


def mark_run_live(run_id: str, live: bool) -> None:
    """Record (or forget) that this process's current task is working on run `run_id`."""
    if live:
        _LIVE_RUNS[run_id] = asyncio.current_task()
    else:
        _LIVE_RUNS.pop(run_id, None)


# Here asyncio.current_task is Python around this dict (3.12 made it C).
if sys.version_info < (3, 12):
    _current_task_of = asyncio.tasks._current_tasks.get  # type: ignore[attr-defined]  # private, so not in typeshed; there on 3.11
else:
    _current_task_of = asyncio.current_task


def run_marker(
    run_id: str, on_new_task: Callable[[asyncio.Task[Any] | None], None] | None = None
) -> Callable[[], None]:
    """`mark_run_live(run_id, True)` as a callable cheap enough for the runner to call at every event.

    `on_new_task` hears of each task that steps the run, when it differs from the last one.
    """
    loop, current_task, live = asyncio.get_running_loop(), _current_task_of, _LIVE_RUNS
    last: asyncio.Task[Any] | None = None

    def mark() -> None:
        nonlocal last
        task = live[run_id] = current_task(loop)
        if task is not last:
            last = task
            if on_new_task is not None:
                on_new_task(task)

    return mark


def run_is_live(run_id: str) -> bool:
    """Whether the run `run_id` of this process still holds its session.

    Its task is the last one that resumed it. While that task runs, or after it ended normally
    (a consumer may step the stream from a new task each time), the run is live; once the task
    was cancelled or failed, the stream is abandoned and its claim is stale.
    """
    if run_id not in _LIVE_RUNS:
        return False
    task = _LIVE_RUNS[run_id]
    if task is None or not task.done():
        return True
    return not task.cancelled() and task.exception() is None


HOST = socket.gethostname()


@dataclass(frozen=True, slots=True)
class Lease:
    """Who holds a session, and until when (seconds since the epoch) unless renewed."""

    run_id: str
    pid: int
    host: str
    started: str  # "<pid namespace>|<when process `pid` started>" (see `process_started`); "" when unknown
    expires: float

    @classmethod
    def mine(cls, run_id: str, seconds: float, now: float | None = None) -> Lease:
        """A lease of `seconds` for run `run_id` of this process."""
        return cls(
            run_id,
            os.getpid(),
            HOST,
            _my_start(),
            (time.time() if now is None else now) + seconds,
        )

    @property
    def checkable(self) -> bool:
        """Whether this process can see the holder's process: same machine, same pid namespace.

        Containers on one host may share its host name but not its processes; a start time
        recorded without a namespace (older files) counts as this one's.
        """
        space, mark, _ = self.started.partition("|")
        return self.host == HOST and (not mark or space == _PID_SPACE)

    def holder(self, now: float) -> tuple[str, str]:
        """(who holds the session, what more to know) for `session_busy`."""
        if self.checkable:
            return f" (run {self.run_id}, process {self.pid} on this machine)", ""
        where = repr(self.host) if self.host != HOST else "another container (pid namespace) of this machine"
        left = max(0.0, self.expires - now)
        return (
            f" (run {self.run_id}, process {self.pid} on {where})",
            (
                f" A claim from another machine cannot be checked from here; its lease lapses in {left:.0f}s "
                "unless its run renews it."
            ),
        )


def held_by_another(row: Sequence[Any] | None, run_id: str, now: float) -> Lease | None:
    """The lease a store's row (run id, pid, host, started, expires) holds, when it is another
    run's and still live: then run `run_id` must be refused."""
    if row is None or row[0] is None or row[0] == run_id:
        return None
    lease = Lease(*row)
    return lease if lease_is_live(lease, now) else None


def lease_is_live(lease: Lease, now: float) -> bool:
    """Whether `lease` still holds its session (see the module docstring)."""
    if lease.host == HOST and lease.pid == os.getpid() and lease.started in ("", _my_start()):
        return run_is_live(lease.run_id)
    if lease.expires <= now:
        return False
    if not lease.checkable:
        return True  # another machine's (or container's) process cannot be checked from here: its lease decides
    try:
        os.kill(lease.pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, and belongs to another user
    # The pid lives, but it may have been handed to another process since the claimant died.
    if not lease.started:
        return True
    started = process_started(lease.pid)
    return started is None or lease.started in (started, f"{_PID_SPACE}|{started}")


class Heartbeat:
    """A daemon thread that renews the leases one service holds, every third of their length.

    `renew(run_ids, expires)` pushes the given runs' leases to `expires` and returns the runs
    whose lease it found (the others were taken over); only runs still live in this process are
    renewed, so an abandoned run's lease lapses like a dead process's. `hold` and `drop` also
    mark the run live in this process, and no longer.

    A store asks `may_have_lapsed(run_id)` before it writes for a run: true when no renewal was
    confirmed for two thirds of a lease (the process was paused, the database away), and then
    it checks the lease itself before writing (`confirmed` once it found it still the run's).
    """

    def __init__(self, renew: Callable[[Collection[str], float], Collection[str]], seconds: float) -> None:
        self._renew, self.seconds = renew, seconds
        self._held: dict[str, float] = {}  # run id -> when its lease was last confirmed (wall clock: counts a suspend)
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def hold(self, run_id: str) -> None:
        mark_run_live(run_id, True)
        with self._wake:
            self._held[run_id] = time.time()
            if self._thread is None:
                self._thread = threading.Thread(target=self._beat, name="adk-session-leases", daemon=True)
                self._thread.start()

    def drop(self, run_id: str) -> None:
        mark_run_live(run_id, False)
        with self._wake:
            self._held.pop(run_id, None)

    def stop(self) -> None:
        with self._wake:
            self._held.clear()
            self._wake.notify()

    def may_have_lapsed(self, run_id: str) -> bool:
        confirmed = self._held.get(run_id)
        return confirmed is not None and time.time() - confirmed > self.seconds * 2 / 3

    def confirmed(self, run_ids: Collection[str]) -> None:
        now = time.time()
        with self._wake:
            for run_id in run_ids:
                if run_id in self._held:
                    self._held[run_id] = now

    def _beat(self) -> None:
        while True:
            with self._wake:
                self._wake.wait(self.seconds / 3)
                live = [run_id for run_id in self._held if run_is_live(run_id)]
                if not self._held:
                    self._thread = None
                    return
            if live:
                # A failure (the database briefly away) is retried at the next beat, two thirds early.
                with suppress(Exception):
                    self.confirmed(self._renew(live, time.time() + self.seconds))


def lease_lost(key: tuple[str, str, str], run_id: str, seconds: float) -> AdkError:
    """The error of a run that finds another run took its session over while it was not looking."""
    return AdkError.session(
        f"Run {run_id} lost session {key[2]!r}: its lease lapsed (this process was paused, or could not reach the "
        f"session store, for longer than lease_seconds={seconds:g}) and another run took the session over, so "
        "this run stops without writing more. Send the message again; to ride out longer pauses, pass a larger "
        "`lease_seconds=` to the session service.",
        code="session_lease_lost",
        category="unavailable",
    )


def _started_from_proc(pid: int) -> str | None:
    """When process `pid` started (boot id and clock ticks since boot); None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read()
    except OSError:
        return None
    # Field 2, the command name, is in parentheses and may hold spaces and ")"; field 22 is the start.
    return f"{_BOOT_ID}:{int(fields[fields.rindex(b')') + 2 :].split()[19])}"


def _started_from_ps(pid: int) -> str | None:
    """The same, where there is no /proc (macOS, the BSDs): `ps` prints the start to the second."""
    try:
        shown = subprocess.run(
            ["ps", "-o", "lstart=", "-p", str(pid)],
            check=False,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return " ".join(shown.stdout.split()) or None


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as boot:
            return boot.read().strip()
    except OSError:
        return ""


_BOOT_ID = _boot_id()
process_started = _started_from_proc if os.path.exists("/proc/self/stat") else _started_from_ps


def _pid_space() -> str:
    """This process's pid namespace (its inode); "" where that cannot be told."""
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return ""


_PID_SPACE = _pid_space()
_STARTS: dict[int, str] = {}


def _my_start() -> str:
    """This process's namespace and start, read once per pid (a forked child reads its own)."""
    pid = os.getpid()
    if pid not in _STARTS:
        started = process_started(pid)
        _STARTS[pid] = f"{_PID_SPACE}|{started}" if started else ""
    return _STARTS[pid]
