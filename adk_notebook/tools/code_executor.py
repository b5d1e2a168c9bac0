"""PythonCodeExecutor: a tool that runs the model's Python code in a child process, never in the kernel.

    executor = PythonCodeExecutor(timeout=20, memory_limit=512, workdir="analysis")
    agent = LlmAgent(name="analyst", model="auto", tools=[executor])

The model calls `run_python` with `{"code": "..."}`. Each call is a fresh process (the same
interpreter, `sys.executable`) in the working folder: variables do not survive from one call
to the next, files in the folder do. The model receives a JSON object, `{"stdout", "stderr",
"figures": n}` plus `"error"` (the traceback of the code's frames, or why it was stopped)
when it failed, `"files"` (what it wrote in the folder) and `"figure_errors"` when there are
any; and one image part per matplotlib figure, each once: the file `savefig` wrote it to (PNG,
JPEG, GIF or WEBP), else, if it is still open when the code ends, drawn as PNG. Bad code, a
runaway loop or a memory hog each come back as such a result; the kernel is never touched.

What the child gets, and what that does and does not confine, by `sandbox`:

- Always: a clean environment (HOME, TMPDIR, XDG_CACHE_HOME and MPLCONFIGDIR inside the
  folder, MPLBACKEND=Agg, PATH=os.defpath, under bwrap PWD, nothing else of the parent's: API
  keys never reach it); limits: wall time (`timeout`; the parent then kills the whole process group, and an
  alarm in the child ends it should the parent vanish), address space (`memory_limit`,
  RLIMIT_AS: a hog gets MemoryError), the size of any one file (RLIMIT_FSIZE,
  `FILE_SIZE_LIMIT`), no core files; bounded output (stdout and stderr each cut in the middle
  past `max_output` bytes, the list of files written past `MAX_LISTED_FILES` names, the model
  told what was cut); and the guard (code_runner.py), an audit hook that refuses with
  PermissionError writes outside the folder, starting processes, signalling others and
  reading another process's environment, as a model's mistakes would attempt them.
- "bwrap" (code_sandbox.py): the child runs under bubblewrap, in PID, IPC, UTS, network
  (unless `network=True`), mount and (where allowed) user namespaces with no capabilities.
  The file system is read-only but for the folder and a private /tmp, and holds only the
  system folders and Python's; the user's home, projects and other processes (the kernel
  and its environment among them) are out of reach, native code included, and the whole
  sandbox dies at the time limit, however its processes try to leave the process group.
- "guard" (where bubblewrap cannot run): the guard alone. Python code that means harm gets
  past an audit hook (native code, `dir_fd` opens, `_posixsubprocess`, pidfds, `mknod`,
  SQLite `ATTACH`): then it can read what you can read (the kernel's environment included),
  write where you can, signal your processes, start processes that outlive the time limit,
  and use the network. A guard against a model's mistakes, not a sandbox.
- "auto" (the default): "bwrap" where this machine can run it, else "guard" with a warning,
  once per process, that names what is then not confined. `sandbox_mode` says which.

Linux only: the guard resolves file descriptors through /proc, and the memory limit is
RLIMIT_AS, which not every system enforces.
"""

from __future__ import annotations

import asyncio
import functools
import json
import math
import os
import signal
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..core.errors import AdkError
from .base import Tool, check_timeout
from .code_sandbox import bwrap_command, bwrap_problem
from .names import check_tool_name
from .responses import MAX_INLINE_DATA_BYTES, FunctionResponseData

if TYPE_CHECKING:
    import tempfile

    from ..core.context import ToolContext

__all__ = ["FILE_SIZE_LIMIT", "MAX_LISTED_FILES", "PythonCodeExecutor", "Sandbox"]

Sandbox = Literal["auto", "bwrap", "guard"]

RUNNER = Path(__file__).with_name("code_runner.py")
# where the sandbox has it: the package's folder (a project's, maybe) is not there
_RUNNER_INSIDE = "/run/adk_notebook/code_runner.py"
FILE_SIZE_LIMIT = 256 * 2**20
"""Most bytes any one file the code writes may hold (RLIMIT_FSIZE); a larger write fails with OSError."""
MAX_LISTED_FILES = 100
"""Most names of written files the model receives; past it, how many more there are."""
RESULT_GRACE = 5.0
"""Seconds the tool's own `timeout` adds to the code's, so the code's limit is what the model hears."""
# the child's JSON: base64 figures of at most what a response carries, and a little more
_RESULT_LIMIT = MAX_INLINE_DATA_BYTES * 2
_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "code": {
            "type": "string",
            "description": "The Python source to run, as a script.",
        }
    },
    "required": ["code"],
    "additionalProperties": False,
}


class PythonCodeExecutor(Tool):
    """A tool the model calls with Python code, run in a child process under limits (see the module).

    Args:
        timeout: Most seconds one run may take, start-up and figures included; past it the
            process group is killed and the model hears so, with the output until then.
        memory_limit: Most MiB of address space the process may use (None: no limit).
        workdir: The working folder, created if missing; files persist there between calls.
            By default a temporary folder of this executor's own, removed with it.
        max_output: Most bytes of stdout, and of stderr, the model receives; past it the
            middle is cut out with a marker.
        name: The name the model calls it by.
        sandbox: "bwrap" (bubblewrap; an AdkError where it cannot run), "guard" (the audit
            hook alone) or "auto" ("bwrap" where it can run, else "guard" with a warning);
            the choice is `sandbox_mode`. See the module for what each confines.
        network: Whether the code may use the network; only "bwrap" can refuse it.
    """

    def __init__(
        self,
        timeout: float = 30.0,
        memory_limit: int | None = 1024,
        workdir: str | os.PathLike[str] | None = None,
        *,
        max_output: int = 20_000,
        name: str = "run_python",
        sandbox: Sandbox = "auto",
        network: bool = False,
    ) -> None:
        if not sys.platform.startswith("linux"):
            raise AdkError.config(
                "PythonCodeExecutor runs on Linux only: its guard resolves file descriptors through "
                "/proc, and its memory limit is RLIMIT_AS, which not every system enforces.",
                code="unsupported_platform",
                category="unsupported",
            )
        limit = check_timeout(timeout, "PythonCodeExecutor: timeout")
        if limit is None:
            raise AdkError.config(
                "PythonCodeExecutor: timeout must be a number of seconds above 0; a run without a "
                "time limit could hang the agent.",
                code="invalid_timeout",
            )
        self.name = check_tool_name(name)
        self.network = network
        self.sandbox_mode: Literal["bwrap", "guard"] = _choose_sandbox(sandbox)
        self.code_timeout = limit
        self.timeout = limit + RESULT_GRACE
        self.memory_limit = None if memory_limit is None else _positive_int(memory_limit, "memory_limit (MiB, or None)")
        self.max_output = _positive_int(max_output, "max_output (bytes)")
        self._temporary: tempfile.TemporaryDirectory[str] | None = None
        if workdir is None:  # removed when the executor is
            import tempfile  # with shutil and random: only for an executor that makes its own folder

            self._temporary = tempfile.TemporaryDirectory(prefix="adk-run-python-")
            workdir = self._temporary.name
        self.workdir = Path(workdir).resolve()
        try:
            self.workdir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise AdkError.config(
                f"PythonCodeExecutor cannot use {str(self.workdir)!r} as its working folder: "
                f"{exc.strerror or exc}. Pass workdir=... naming a folder you can write.",
                code="invalid_workdir",
            ) from None
        memory = "no memory limit" if self.memory_limit is None else f"at most {self.memory_limit} MiB of memory"
        offline = "; it has no network" if self.sandbox_mode == "bwrap" and not network else ""
        self.description = (
            "Run Python code in a fresh process and get back its stdout, stderr, the error if "
            "it failed, and every matplotlib figure it saved or left open, as an image. Each "
            "call starts from scratch (no variables survive); files written in the working "
            f"folder do. Limits: {limit:g} s, {memory}; the code may only write inside its "
            f"working folder and may not start processes{offline}."
        )

    @property
    def parameters_schema(self) -> dict[str, Any]:
        return _PARAMETERS

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> FunctionResponseData:
        stdout, stderr = _Capped(self.max_output), _Capped(self.max_output)
        result = _Collected(_RESULT_LIMIT)
        timed_out, returncode = await self._run(args["code"], stdout.add, stderr.add, result.add)
        response: dict[str, Any] = {"stdout": stdout.text(), "stderr": stderr.text()}
        payload = result.json()
        if timed_out:
            response["error"] = (
                f"The code ran past its time limit of {self.code_timeout:g} s and was stopped (its "
                "whole process group was killed). Make it faster, or work on less at once."
            )
        elif payload is None:
            response["error"] = self._death(returncode, result.overflow)
        elif payload["error"] is not None:
            response["error"] = payload["error"] + self._memory_hint(payload["error"])
        data = FunctionResponseData(response)
        notes = list(payload["figure_errors"]) if payload else []
        figures = payload["figures"] if payload else []  # {"mime_type", "data": base64}
        for figure in figures:
            if data.inline_bytes + len(figure["data"]) * 3 // 4 > MAX_INLINE_DATA_BYTES:
                notes.append(
                    "a figure was left out: the figures together are larger than a response may carry "
                    f"({MAX_INLINE_DATA_BYTES // 2**20} MB); draw fewer or smaller ones."
                )
                continue
            data.with_inline_data(figure["mime_type"], figure["data"])
        response["figures"] = len(data.parts)
        if notes:
            response["figure_errors"] = notes
        if payload and payload["files"]:
            response["files"] = payload["files"]
            if payload["files_not_listed"]:
                response["files_not_listed"] = (
                    f"{payload['files_not_listed']:,} more files were written; only the first "
                    f"{MAX_LISTED_FILES} names (sorted) are listed."
                )
        return data

    async def _run(
        self,
        code: str,
        out: Callable[[bytes], None],
        err: Callable[[bytes], None],
        result: Callable[[bytes], None],
    ) -> tuple[bool, int | None]:
        """Run `code` in a child, feeding its streams to the sinks; (timed out, return code)."""
        for folder in (".tmp", ".cache"):
            (self.workdir / folder).mkdir(parents=True, exist_ok=True)
        memory = self.memory_limit
        settings = {
            "memory_bytes": None if memory is None else memory * 2**20,
            "file_size_bytes": FILE_SIZE_LIMIT,
            "alarm_seconds": math.ceil(self.code_timeout + RESULT_GRACE) + 1,
            "max_listed_files": MAX_LISTED_FILES,
        }
        read_fd, write_fd = os.pipe()
        bwrap = self.sandbox_mode == "bwrap"
        command = [
            sys.executable,
            "-I",  # no PYTHON* variables, no user site, not the script's folder on sys.path
            "-B",  # no __pycache__ in the folder
            "-u",  # unbuffered: what it printed before a kill is kept
            "-X",
            "utf8",
            _RUNNER_INSIDE if bwrap else str(RUNNER),
            str(write_fd),
            json.dumps(settings),
        ]
        if bwrap:
            command = bwrap_command(command, self.workdir, network=self.network, files={_RUNNER_INSIDE: RUNNER})
        try:
            proc = await asyncio.create_subprocess_exec(
                *command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=self.workdir,
                env=self._environment(),
                pass_fds=(write_fd,),
                # its own process group: a timeout kills all of it (under bwrap: bwrap, and with
                # it its PID namespace), and Ctrl-C is not for it
                start_new_session=True,
            )
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        loop = asyncio.get_running_loop()
        result_stream = asyncio.StreamReader()
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(result_stream),
            os.fdopen(read_fd, "rb", buffering=0),
        )
        streams = ((proc.stdout, out), (proc.stderr, err), (result_stream, result))
        finished = timed_out = False
        try:
            async with asyncio.timeout(self.code_timeout) as deadline:
                await asyncio.gather(
                    _feed(proc.stdin, code.encode("utf-8", "replace")),
                    *(_drain(stream, sink) for stream, sink in streams),
                )
                await proc.wait()
            finished = True
        except TimeoutError:
            if not deadline.expired():
                raise
            timed_out = True
        finally:
            transport.close()
            if not finished:  # timed out or cancelled: nothing of it may run on
                _kill_group(proc.pid)
                await proc.wait()
                await _discard_rest(proc.stdout, proc.stderr)
        return timed_out, proc.returncode

    def _environment(self) -> dict[str, str]:
        """The child's whole environment: its folders inside the working folder, nothing of the parent's."""
        home = str(self.workdir)
        return {
            "HOME": home,
            "TMPDIR": str(self.workdir / ".tmp"),
            "XDG_CACHE_HOME": str(self.workdir / ".cache"),
            "MPLCONFIGDIR": str(self.workdir / ".cache" / "matplotlib"),
            "MPLBACKEND": "Agg",
            "PATH": os.defpath,
            "LANG": "C.UTF-8",
        }

    def _memory_hint(self, error: str) -> str:
        if self.memory_limit is None or "MemoryError" not in error:
            return ""
        return f"\n(The process may use at most {self.memory_limit} MiB of memory: use less.)"

    def _death(self, returncode: int | None, overflow: bool) -> str:
        """Why no result came back from a child that was not timed out."""
        if overflow:
            return (
                f"The code's figures were larger than a response may carry ({MAX_INLINE_DATA_BYTES // 2**20} MB); "
                "draw fewer or smaller ones, or close those you do not need."
            )
        if returncode is not None and returncode < 0:
            try:
                how = f"was killed by {signal.Signals(-returncode).name}"
            except ValueError:
                how = f"was killed by signal {-returncode}"
        else:
            how = f"exited with code {returncode}"
        hint = "" if self.memory_limit is None else f" It may use at most {self.memory_limit} MiB of memory."
        return f"The code's process {how} before it finished.{hint}"


class _Capped:
    """A stream's bytes up to a limit: its start and its end, the middle cut out with a marker."""

    def __init__(self, limit: int) -> None:
        self.half = limit // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            del self.tail[: max(0, len(self.tail) - self.half)]

    def text(self) -> str:
        cut = self.total - len(self.head) - len(self.tail)
        head = self.head.decode("utf-8", "replace")
        tail = self.tail.decode("utf-8", "replace")
        return head + tail if cut == 0 else f"{head}\n[… {cut:,} bytes of output cut …]\n{tail}"


class _Collected:
    """All of a stream's bytes, or none past a limit (`overflow`)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.overflow = False

    def add(self, chunk: bytes) -> None:
        if not self.overflow and len(self.data) + len(chunk) <= self.limit:
            self.data += chunk
        else:
            self.overflow, self.data = True, bytearray()

    def json(self) -> dict[str, Any] | None:
        """The child's result, or None when it wrote none (it died, or wrote too much)."""
        if self.overflow or not self.data:
            return None
        try:
            payload = json.loads(self.data)
        except ValueError:
            return None
        return payload if isinstance(payload, dict) else None


async def _feed(stdin: asyncio.StreamWriter, data: bytes) -> None:
    try:
        stdin.write(data)
        await stdin.drain()
    except (
        BrokenPipeError,
        ConnectionResetError,
    ):  # it ended before reading all the code
        pass
    finally:
        stdin.close()


async def _drain(stream: asyncio.StreamReader, sink: Callable[[bytes], None]) -> None:
    while chunk := await stream.read(65536):
        sink(chunk)


async def _discard_rest(*streams: asyncio.StreamReader) -> None:
    """Read what is left in a killed child's pipes, so that their transports see the end and close."""
    try:
        async with asyncio.timeout(1.0):  # a process outside the group could hold them open
            await asyncio.gather(*(_drain(stream, lambda _: None) for stream in streams))
    except TimeoutError:
        pass


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _choose_sandbox(sandbox: Any) -> Literal["bwrap", "guard"]:
    """The mode `sandbox` means on this machine; warns (once per process) when "auto" falls back."""
    if sandbox not in ("auto", "bwrap", "guard"):
        raise AdkError.config(
            f'PythonCodeExecutor: sandbox must be "auto", "bwrap" or "guard", got {sandbox!r}.',
            code="invalid_sandbox",
        )
    if sandbox == "guard":
        return "guard"
    problem = bwrap_problem()
    if problem is None:
        return "bwrap"
    if sandbox == "bwrap":
        raise AdkError.config(
            f'PythonCodeExecutor(sandbox="bwrap") cannot run its sandbox: {problem}. Install bubblewrap '
            "(Debian/Ubuntu: apt-get install bubblewrap) on a kernel that allows it user namespaces, or pass "
            'sandbox="guard" to run the code under the audit-hook guard alone.',
            code="sandbox_unavailable",
            category="unsupported",
        )
    _warn_unconfined(problem)
    return "guard"


@functools.cache
def _warn_unconfined(problem: str) -> None:
    warnings.warn(
        f"PythonCodeExecutor runs the model's code under its audit-hook guard alone ({problem}). "
        "Code that means harm can then read the kernel's environment (API keys) and your files, "
        "write outside its folder, signal your processes, start processes that outlive the time "
        "limit, and use the network. Install bubblewrap for a real sandbox.",
        RuntimeWarning,
        stacklevel=4,
    )


def _positive_int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise AdkError.config(
            f"PythonCodeExecutor: {what} must be a whole number above 0, got {value!r}.",
            code="invalid_limit",
        )
    return value
