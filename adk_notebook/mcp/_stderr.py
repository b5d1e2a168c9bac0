"""A stdio server's stderr: a pipe of our own, read by a thread that keeps the last lines.

The SDK would hand the server the kernel's stderr (fd 2, or a `sys.stderr` without `fileno`
in some front ends: python-sdk #1103). A pipe keeps the server's chatter out of the
notebook and the kernel log, and leaves its last lines for the error shown when it fails.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable
from typing import TextIO, cast

__all__ = ["StderrTail"]

MAX_LINES = 20
MAX_LINE_CHARS = 500


class StderrTail:
    """The pipe a server writes its stderr to, and the last `max_lines` lines it wrote.

    Args:
        redact: Applied to every line kept (hides secret values the server may print).
        on_eof: Called (on the reader thread) when every writer has closed the pipe,
            i.e. the server and whatever it started have exited.
    """

    def __init__(self, redact: Callable[[str], str], on_eof: Callable[[], None], max_lines: int = MAX_LINES) -> None:
        self._redact = redact
        self._on_eof = on_eof
        self._lines: deque[str] = deque(maxlen=max_lines)
        self._lock = threading.Lock()
        self._eof = threading.Event()
        read_fd, write_fd = os.pipe()
        self._writer: TextIO | None = cast(TextIO, os.fdopen(write_fd, "w"))
        self._reader = threading.Thread(target=self._pump, args=(read_fd,), name="adk-mcp-stderr", daemon=True)
        self._reader.start()

    @property
    def writer(self) -> TextIO:
        """The write end, for the child process (a real file with a `fileno`)."""
        assert self._writer is not None, "the server has already been started"
        return self._writer

    def spawned(self) -> None:
        """Drop our copy of the write end once the child holds its own, so its exit means EOF."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def lines(self) -> list[str]:
        with self._lock:
            return list(self._lines)

    def wait_closed(self, timeout: float) -> bool:
        """Wait until the pipe is closed (the server exited and its last lines are in)."""
        return self._eof.wait(timeout)

    @property
    def closed(self) -> bool:
        return self._eof.is_set()

    def _pump(self, read_fd: int) -> None:
        partial = b""
        try:
            while chunk := os.read(read_fd, 65536):
                *complete, partial = (partial + chunk).split(b"\n")
                self._keep(complete)
                if len(partial) > 4 * MAX_LINE_CHARS:  # a line without end: keep its start
                    self._keep([partial])
                    partial = b""
        except OSError:
            pass
        finally:
            if partial:
                self._keep([partial])
            os.close(read_fd)
            self._eof.set()
            self._on_eof()

    def _keep(self, raw_lines: list[bytes]) -> None:
        decoded = [line.decode("utf-8", errors="replace").rstrip("\r") for line in raw_lines]
        with self._lock:
            for line in decoded:
                if line.strip():
                    line = self._redact(line)
                    self._lines.append(line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 1] + "…")
