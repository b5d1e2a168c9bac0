"""Ctrl-C (SIGINT) during a run: cancel the run's task instead of raising KeyboardInterrupt.

Raised inside an event loop, KeyboardInterrupt escapes the loop (asyncio re-raises it) and
leaves the run half-done; ipykernel even holds it until the loop wakes (ipykernel #881). So
while a run is in progress, SIGINT calls `cancel()`, which schedules the cancel on the run's
loop: the run answers its open calls and releases its session within a fraction of a second.

A cancel can only land when the loop gets control back. When the code running on the loop
blocks it (`time.sleep` or a sync HTTP client inside `async def`), the cancel would wait for it:
if the loop runs in this thread and has not taken the cancel within `BLOCKED_AFTER` seconds,
SIGINT is sent again and its handler cancels the task whose step is blocking and raises
CancelledError right in the blocking code. Where the loop runs on another thread (the caller only waits
for it), a second Ctrl-C stops waiting and raises KeyboardInterrupt; so does a Ctrl-C after the
cancel was taken where raising is safe (`escape=True`: a script's own loop, not the kernel's).
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["BLOCKED_AFTER", "Interrupts", "sigint_cancels"]

BLOCKED_AFTER = 0.25  # seconds a loop may take to act on a cancel before it counts as blocked


class Interrupts:
    """What happened while `sigint_cancels` was in effect (`count`: the SIGINTs received)."""

    def __init__(self, cancel: Callable[[], None], loop: asyncio.AbstractEventLoop | None, escape: bool) -> None:
        self.count = 0
        self._cancel = cancel
        self._loop = loop
        self._escape = escape
        self._taken = threading.Event()  # the loop ran a callback posted after the cancel
        self._lock = threading.Lock()  # guards `_active` against the watcher's last signal
        self._active = True
        self._watcher_sent = False  # the next SIGINT is the watcher's, not the user's

    def handle(self, signum: int, frame: FrameType | None) -> None:
        self.count += 1
        loop = self._loop
        if self.count == 1:
            self._cancel()
            if loop is not None:
                try:
                    loop.call_soon_threadsafe(self._taken.set)
                except RuntimeError:  # the loop is closed: nothing left to cancel
                    return
                threading.Thread(target=self._watch, name="adk-sigint-watch", daemon=True).start()
            return
        if loop is None:
            raise KeyboardInterrupt  # a second Ctrl-C: stop waiting for the run
        watcher, self._watcher_sent = self._watcher_sent, False
        if not self._taken.is_set():
            if (task := asyncio.current_task(loop)) is not None:
                task.cancel()  # the task whose step blocks the loop: cancelled for good, not just this once
                raise asyncio.CancelledError
        elif self._escape and not watcher:
            raise KeyboardInterrupt  # the run took the cancel and still does not end: give up on it

    def _watch(self) -> None:
        """While the cancel waits behind code that blocks the loop, interrupt that code."""
        while not self._taken.wait(BLOCKED_AFTER):
            with self._lock:
                if not self._active:
                    return
                self._watcher_sent = True
                signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

    def _end(self) -> None:
        with self._lock:
            self._active = False


@contextmanager
def sigint_cancels(
    cancel: Callable[[], None], *, loop: asyncio.AbstractEventLoop | None = None, escape: bool = False
) -> Iterator[Interrupts]:
    """While inside, SIGINT calls `cancel()` instead of raising; the previous handler comes back after.

    Pass `loop` when the run's loop runs in this (the main) thread, so code that blocks it can be
    interrupted, and `escape=True` when a KeyboardInterrupt may leave that loop (see the module
    docstring). Signals can only be handled in the main thread (an ipykernel 7 subshell runs
    elsewhere): there this does nothing and the usual handling stays.
    """
    interrupts = Interrupts(cancel, loop, escape)
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
