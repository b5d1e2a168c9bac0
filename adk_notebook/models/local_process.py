"""The parent's side of the local model's process (`local_worker.py`): start, talk, notice death.

Why a process. llama.cpp is native code; when it crashes (its AMX path did, on the first
decode, on Xeons that report AMX), it takes its process with it. In a notebook that process
was the kernel, and the user's variables went with it. So the model runs in a child process
that `LocalModel` owns: if it dies, the run ends with an `AdkError(model, unavailable)` that
says how (the signal or exit code, the last lines it wrote to stderr) and the kernel goes on;
the next call starts a new child.

Why threads, not asyncio subprocesses. `agent.run()` inside a kernel runs on a private event
loop in a worker thread, and two runs may use the same model from different loops. The child
therefore belongs to no loop: `subprocess.Popen`, a lock around writes to its stdin, and two
reader threads. The stdout reader routes each reply to the loop and queue of the request it
answers (`call_soon_threadsafe`); the stderr reader keeps the last lines, which never reach
the kernel's own stderr. Abandoning a request (its consumer cancelled or closed) sends a
cancel, which stops generation at the next token.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import json
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import IO, Any

from ..core.errors import AdkError

__all__ = ["WorkerProcess"]

WORKER = Path(__file__).with_name("local_worker.py")
STDERR_LINES = 40  # lines of the child's stderr kept for the error that reports its death
_CRASH_SIGNALS = frozenset({"SIGSEGV", "SIGBUS", "SIGILL", "SIGABRT", "SIGFPE"})


class WorkerProcess:
    """One child process running `local_worker.py` with one model loaded.

    Args:
        load: The worker's first message (model path, llama kwargs, extra buffer types).
        label: The model's name, for errors.
    """

    def __init__(self, load: dict[str, Any], label: str) -> None:
        self.label = label
        self.extra_buffer_types = bool(load.get("extra_buffer_types"))
        self.info: dict[str, Any] = {}  # the worker's "ready" message, once it came
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        self.error: AdkError | None = None  # why the process is gone, once it is
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Queue[dict[str, Any]]]] = {}
        self._lock = threading.Lock()  # guards _pending and error
        self._write_lock = threading.Lock()
        self._load_error: dict[str, Any] | None = None
        self._closed = False
        self._proc = subprocess.Popen(
            [sys.executable, "-P", str(WORKER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # a terminal's Ctrl-C, or an interrupt of the kernel's group, is not for it
        )
        self._stderr_done = threading.Event()
        threading.Thread(target=self._read_stderr, name=f"adk-{label}-stderr", daemon=True).start()
        threading.Thread(target=self._read_stdout, name=f"adk-{label}-stdout", daemon=True).start()
        self._send(load)

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def alive(self) -> bool:
        return self.error is None and self._proc.poll() is None

    def close(self) -> None:
        """End the process: closing its stdin stops it; a second later it is killed."""
        self._closed = True
        try:
            if self._proc.stdin is not None:
                self._proc.stdin.close()
            self._proc.wait(timeout=1.0)
        except (OSError, subprocess.TimeoutExpired):
            self._proc.kill()
            self._proc.wait()

    async def complete(self, request: dict[str, Any]) -> AsyncGenerator[dict[str, Any], None]:
        """Send one completion; yield its "text" messages, then its "done" message.

        Raises:
            AdkError: the worker reported an error, or the process died.
        """
        loop = asyncio.get_running_loop()
        replies: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        rid = next(self._ids)
        with self._lock:
            if self.error is not None:
                raise self.error
            self._pending[rid] = (loop, replies)
        finished = False
        try:
            self._send({"type": "complete", "id": rid, **request})
            while True:
                reply = await replies.get()
                kind = reply.get("type")
                if kind == "text":
                    yield reply
                elif kind == "done":
                    finished = True
                    if reply.get("finish") == "cancelled":  # stopped by the worker itself: its input closed
                        raise self._closed_error()
                    yield reply
                    return
                elif kind == "error":
                    finished = True
                    raise AdkError.model(
                        str(reply.get("message")),
                        code=str(reply.get("code") or "local_model_error"),
                        category=str(reply.get("category") or "internal"),
                    )
                else:  # "died"
                    finished = True
                    assert self.error is not None
                    raise self.error
        finally:
            with self._lock:
                self._pending.pop(rid, None)
            if not finished:  # the consumer went away: stop generating at the next token
                self._send({"type": "cancel", "id": rid})

    # -- plumbing --------------------------------------------------------------------------
    def _send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message, ensure_ascii=False) + "\n").encode("utf-8")
        with self._write_lock:
            try:
                assert self._proc.stdin is not None
                self._proc.stdin.write(data)
                self._proc.stdin.flush()
            except (OSError, ValueError):  # it died (or was closed): the stdout reader reports how
                pass

    def _read_stdout(self) -> None:
        stream: IO[bytes] = self._proc.stdout  # type: ignore[assignment]  # started with stdout=PIPE: never None
        for raw in stream:
            try:
                message = json.loads(raw)
            except ValueError:
                continue
            kind = message.get("type")
            if kind == "ready":
                self.info = message
            elif kind == "error" and message.get("id") is None:
                self._load_error = message
            else:
                self._deliver(message.get("id"), message)
        returncode = self._proc.wait()
        self._stderr_done.wait(timeout=2.0)  # its last lines say what happened
        error = self._load_failure() if self._load_error is not None else self._death(returncode)
        with self._lock:
            self.error = error
            pending = list(self._pending)
        for rid in pending:
            self._deliver(rid, {"type": "died"})

    def _deliver(self, rid: Any, message: dict[str, Any]) -> None:
        with self._lock:
            target = self._pending.get(rid)
        if target is None:
            return
        loop, replies = target
        try:
            loop.call_soon_threadsafe(replies.put_nowait, message)
        except RuntimeError:  # that loop is closed: nobody waits any more
            pass

    def _read_stderr(self) -> None:
        stream: IO[bytes] = self._proc.stderr  # type: ignore[assignment]  # started with stderr=PIPE: never None
        try:
            for raw in stream:
                line = raw.decode("utf-8", errors="replace").rstrip()
                if line:
                    self.stderr_tail.append(line)
        finally:
            self._stderr_done.set()

    def _last_lines(self) -> str:
        """What the child's stderr says about its end, in one line: Python's fatal-error report
        (faulthandler's first line and the innermost frame) when there is one, else its last lines."""
        lines = list(self.stderr_tail)
        fatal = [i for i, ln in enumerate(lines) if ln.startswith("Fatal Python error:")]
        if fatal:
            picked = [lines[fatal[-1]]]
            after = lines[fatal[-1] :]
            current = next((i for i, ln in enumerate(after) if ln.startswith("Current thread")), 0)
            frame = next((ln.strip() for ln in after[current:] if ln.strip().startswith("File ")), None)
            if frame is not None:
                picked.append("at " + frame)
        else:
            picked = [ln for ln in lines if not ln.startswith("Extension modules:")][-3:]
        text = " | ".join(" ".join(ln.split()) for ln in picked)
        return text if len(text) <= 400 else "…" + text[-399:]

    def _load_failure(self) -> AdkError:
        assert self._load_error is not None
        return AdkError.model(
            f"llama.cpp could not load the model of {self.label!r} ({self._load_error.get('message')}). Is it a GGUF "
            "file that this llama-cpp-python supports?",
            code="model_load_failed",
            category="invalid_input",
        )

    def _closed_error(self) -> AdkError:
        return AdkError(
            "model",
            "cancelled",
            "local_model_closed",
            f"The local model process of {self.label!r} was closed (LocalModel.close()) during the answer; "
            "the next run starts it again.",
        )

    def _death(self, returncode: int) -> AdkError:
        if self._closed:
            return self._closed_error()
        if returncode < 0:
            try:
                name = signal.Signals(-returncode).name
            except ValueError:
                name = f"signal {-returncode}"
            how = f"was killed by {name}" + (" (a crash in native code)" if name in _CRASH_SIGNALS else "")
        else:
            name = None
            how = f"exited with code {returncode}"
        when = "while answering" if self.info else "while loading the model"
        last = self._last_lines()
        hint = (
            "It ran with extra_buffer_types=True (llama.cpp's AMX/repacked fast path), which crashes on some "
            "CPUs: leave that option off. "
            if self.extra_buffer_types
            else ""
        )
        return AdkError(
            "model",
            "unavailable",
            "local_model_died",
            f"The local model process of {self.label!r} (pid {self._proc.pid}) {how} {when}"
            + (f"; its last output: {last}" if last else "")
            + ". Only that process died: your kernel or program and its variables are fine, and the next run "
            "starts the model again. "
            + hint
            + "For a real provider instead, set GOOGLE_API_KEY, OPENAI_API_KEY or ANTHROPIC_API_KEY.",
            details={
                "pid": self._proc.pid,
                "returncode": returncode,
                "signal": name,
                "stderr": list(self.stderr_tail)[-10:],
            },
        )
