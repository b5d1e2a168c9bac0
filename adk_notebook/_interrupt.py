"""Ctrl-C (SIGINT) during a run: cancel the run's task instead of raising KeyboardInterrupt.

Raised inside an event loop, KeyboardInterrupt escapes the loop (asyncio re-raises it) and
leaves the run half-done; ipykernel even holds it until the loop wakes (ipykernel #881). So
while a run is in progress, SIGINT calls `cancel()`, which schedules the cancel on the run's
loop: the run answers its open calls and releases its session within a fraction of a second.

A cancel can only land when the loop gets control back. When the code running on the loop
blocks it (`time.sleep` or a sync HTTP client inside `async def`), the cancel would wait for it,
so one Ctrl-C must do more:
- the loop runs in this (the main) thread: if it has not taken the cancel within
  `BLOCKED_AFTER` seconds, SIGINT is sent again and its handler cancels the task whose step is
  blocking and raises CancelledError right in the blocking code;
- the loop runs on another thread, which no signal can interrupt: if it has not taken the cancel
  within `GIVE_UP_AFTER` seconds, the caller stops waiting for it (KeyboardInterrupt in the
  waiting thread); the run ends on its own as soon as its loop is free.
A second Ctrl-C also stops waiting for a loop on another thread; so does a Ctrl-C after the
cancel was taken where raising is safe (`escape=True`: a script's own loop, not the kernel's).
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["BLOCKED_AFTER", "GIVE_UP_AFTER", "Interrupts", "sigint_cancels"]

BLOCKED_AFTER = 0.25  # seconds a loop may take to act on a cancel before it counts as blocked
GIVE_UP_AFTER = 0.5  # seconds a loop on another thread gets to act on a cancel before nobody waits


class Interrupts:
    """What happened while `sigint_cancels` was in effect (`count`: the SIGINTs received)."""

    def __init__(
        self,
        cancel: Callable[[], None],
        loop: asyncio.AbstractEventLoop | None,
        escape: bool,
        worker_loop: Callable[[], asyncio.AbstractEventLoop | None] | None,
    ) -> None:
        self.count = 0
        self._cancel = cancel
        self._loop = loop  # the run's loop, when it runs in this thread
        self._worker_loop = worker_loop  # or where to find it, when it runs on another one
        self._escape = escape
        self._taken = threading.Event()  # the loop ran a callback posted after the cancel
        self._lock = threading.Lock()  # guards `_active` against the watcher's last signal
        self._active = True
        self._watcher_sent = False  # the next SIGINT is the watcher's, not the user's

    def handle(self, signum: int, frame: FrameType | None) -> None:
        self.count += 1
        watcher, self._watcher_sent = self._watcher_sent, False
        if self.count == 1:
            self._cancel()
            self._watch_the_loop()
            return
        loop = self._loop
        if loop is None:
            raise KeyboardInterrupt  # a second Ctrl-C, or the watcher: stop waiting for the run
        if not self._taken.is_set():
            if (task := asyncio.current_task(loop)) is not None:
                task.cancel()  # the task whose step blocks the loop: cancelled for good, not just this once
                raise asyncio.CancelledError
        elif self._escape and not watcher:
            raise KeyboardInterrupt  # the run took the cancel and still does not end: give up on it

    def _watch_the_loop(self) -> None:
        """After the cancel: see whether the run's loop takes it, from a thread of its own."""
        loop = self._loop or (self._worker_loop() if self._worker_loop is not None else None)
        if loop is None:
            return  # no loop yet (it takes the cancel as it starts), or none known
        try:
            loop.call_soon_threadsafe(self._taken.set)
        except RuntimeError:  # the loop is closed: nothing left to cancel
            return
        threading.Thread(target=self._watch, name="adk-sigint-watch", daemon=True).start()

    def _watch(self) -> None:
        """While the cancel waits behind code that blocks the loop, interrupt that code (a loop in
        this thread, again and again) or the wait for it (a loop on another thread, once)."""
        here = self._loop is not None
        while not self._taken.wait(BLOCKED_AFTER if here else GIVE_UP_AFTER):
            with self._lock:
                if not self._active:
                    return
                self._watcher_sent = True
                signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
            if not here:
                return

    def _end(self) -> None:
        with self._lock:
            self._active = False


@contextmanager
def sigint_cancels(
    cancel: Callable[[], None],
    *,
    loop: asyncio.AbstractEventLoop | None = None,
    worker_loop: Callable[[], asyncio.AbstractEventLoop | None] | None = None,
    escape: bool = False,
) -> Iterator[Interrupts]:
    """While inside, SIGINT calls `cancel()` instead of raising; the previous handler comes back after.

    Pass `loop` when the run's loop runs in this (the main) thread, so code that blocks it can be
    interrupted; or `worker_loop`, which returns the loop running on another thread (None until
    it exists), so a blocked one is not waited for; and `escape=True` when a KeyboardInterrupt may
    leave `loop` (see the module docstring). Signals can only be handled in the main thread (an
    ipykernel 7 subshell runs elsewhere): there this does nothing and the usual handling stays.
    """
    interrupts = Interrupts(cancel, loop, escape, worker_loop)
    if threading.current_thread() is not threading.main_thread():
        yield interrupts
        return
    previous = signal.getsignal(signal.SIGINT)
    try:
        signal.signal(signal.SIGINT, interrupts.handle)
    except ValueError:  # not the main interpreter
        yield interrupts
        return
    try:
        yield interrupts
    finally:
        interrupts._end()
        signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)
