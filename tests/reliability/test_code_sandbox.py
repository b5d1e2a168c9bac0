"""The code executor's sandbox: every escape a third attack found, tried by model-like code through the tool.

Each case runs real code in `PythonCodeExecutor(sandbox="bwrap")` (bubblewrap; the tests skip
where it cannot run, and fail in CI, which sets ADK_SANDBOX_REQUIRED=1) and checks from the
outside what a user would: the test process's secret never comes back, a process the test
started still runs, no file appeared outside the working folder, nothing runs on past the
time limit, the network is there only when asked for. One family in the reliability table,
"code executor sandbox".
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from bwrap_sandbox import require_bwrap

from adk_notebook import PythonCodeExecutor, SimpleToolContext

FAMILY = "code executor sandbox"
# a made-up key, spelled in two pieces so that secret scanners pass it
SECRET = "sk-" + "sandbox-canary-0123456789abcdef"
PROJECT = Path(__file__).resolve().parents[2]


def settings(**given: Any) -> dict[str, Any]:
    """PythonCodeExecutor's settings for a run under bubblewrap (the test skips where it cannot run)."""
    require_bwrap()
    return {"sandbox": "bwrap", **given}


def sandboxed(folder: Path, **given: Any) -> PythonCodeExecutor:
    return PythonCodeExecutor(workdir=folder, **settings(**given))


async def run_code(executor: PythonCodeExecutor, code: str) -> dict[str, Any]:
    return (await executor.execute(SimpleToolContext(), {"code": code})).response


# A stand-in for the kernel: a process started with the key in its environment, as a kernel is
# (/proc/<pid>/environ shows a process's environment as it started), running the tool once.
KERNEL = """\
import asyncio, json, os, sys
from adk_notebook import PythonCodeExecutor, SimpleToolContext
executor = PythonCodeExecutor(workdir=sys.argv[1], **json.loads(sys.argv[2]))
code = sys.stdin.read().replace("KERNEL_PID", str(os.getpid()))
print(json.dumps(asyncio.run(executor.execute(SimpleToolContext(), {"code": code})).response))
"""


async def test_the_kernels_environment_is_unreachable(tmp_path: Path, tally: Any) -> None:
    code = (
        "import os\n"
        "targets = {KERNEL_PID, os.getppid(), 1}\n"
        "targets |= {int(n) for n in os.listdir('/proc') if n.isdigit()}\n"
        "proc = os.open('/proc', os.O_RDONLY | os.O_DIRECTORY)\n"
        "for pid in sorted(targets):\n"
        "    for how in ('path', 'dir_fd'):\n"
        "        try:\n"
        "            if how == 'path':\n"
        "                data = open(f'/proc/{pid}/environ', 'rb').read()\n"
        "            else:\n"
        "                fd = os.open(f'{pid}/environ', os.O_RDONLY, dir_fd=proc)\n"
        "                data = os.read(fd, 1 << 20)\n"
        "        except OSError:\n"
        "            continue\n"
        "        print(pid, how, data.replace(b'\\0', b' ').decode(errors='replace'))\n"
        "print(sorted(os.environ))\n"
    )
    environment = {**os.environ, "OPENAI_API_KEY": SECRET, "ADK_SANDBOX_CANARY": SECRET}
    with tally.case(f"{FAMILY}: the kernel's environment through /proc/<pid>/environ, by path and by dir_fd"):
        kernel = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            KERNEL,
            str(tmp_path),
            json.dumps(settings()),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=environment,
        )
        out, _ = await asyncio.wait_for(kernel.communicate(code.encode()), 60)
        response = json.loads(out)
        assert "error" not in response and response["stdout"], response
        assert SECRET not in out.decode(), "the kernel's key came back"
        assert "ADK_SANDBOX_CANARY" not in response["stdout"] and "OPENAI_API_KEY" not in response["stdout"]


CHILD = """\
import os, sys, time
try:
    os.setsid()
except OSError:
    pass
end = time.time() + 30
while time.time() < end:
    with open(sys.argv[1], 'a') as beats:
        beats.write('beat\\n')
    time.sleep(0.1)
"""


async def test_a_process_started_past_the_guard_dies_at_the_time_limit(tmp_path: Path, tally: Any) -> None:
    # _posixsubprocess.fork_exec is what subprocess calls after its audit event: the guard never sees it.
    code = (
        "import _posixsubprocess, os, sys, time\n"
        f"child = {CHILD!r}\n"
        "argv = [sys.executable, '-I', '-c', child, os.path.abspath('heartbeat')]\n"
        "errors_read, errors_write = os.pipe()\n"
        "null = os.open(os.devnull, os.O_RDWR)  # detached from the runner's pipes, as a daemon is\n"
        "how = [argv, [os.fsencode(sys.executable)], False, (), None, None, null, -1, -1, null, -1, null,\n"
        "       errors_read, errors_write, True, True, -1, None, None, None, -1, None]\n"
        "try:\n"
        "    pid = _posixsubprocess.fork_exec(*how, False)\n"
        "except TypeError:  # before Python 3.11.7 there was no allow_vfork\n"
        "    pid = _posixsubprocess.fork_exec(*how)\n"
        "print('started', pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    with tally.case(f"{FAMILY}: a setsid() process from _posixsubprocess.fork_exec outliving the time limit"):
        response = await run_code(sandboxed(tmp_path, timeout=2), code)
        assert "time limit" in response["error"] and response["stdout"].startswith("started"), response
        heartbeat = tmp_path / "heartbeat"
        await asyncio.sleep(1.0)
        assert heartbeat.exists() and heartbeat.stat().st_size > 0, "the escape was really tried"
        before = heartbeat.stat().st_size
        await asyncio.sleep(1.5)
        assert heartbeat.stat().st_size == before, "a process of the code still runs after the time limit"


async def test_the_users_processes_cannot_be_signalled_through_a_pidfd(tmp_path: Path, tally: Any) -> None:
    bystander = await asyncio.create_subprocess_exec(sys.executable, "-c", "import time; time.sleep(60)")
    try:
        code = (
            "import os, signal\n"
            f"for pid, sig in (({bystander.pid}, signal.SIGKILL), ({os.getpid()}, 0)):\n"
            "    try:\n"
            "        fd = os.pidfd_open(pid)\n"
            "        signal.pidfd_send_signal(fd, sig)\n"
            "        print(pid, 'SIGNALLED')\n"
            "    except OSError as exc:\n"
            "        print(pid, 'refused', exc.strerror)\n"
        )
        with tally.case(f"{FAMILY}: os.pidfd_open + signal.pidfd_send_signal against a user's process and the kernel"):
            response = await run_code(sandboxed(tmp_path / "work"), code)
            assert "SIGNALLED" not in response["stdout"], response
            await asyncio.sleep(0.3)
            assert bystander.returncode is None and bystander.pid in _running(), "the bystander was killed"
    finally:
        if bystander.returncode is None:
            bystander.kill()
            await bystander.wait()


def _running() -> set[int]:
    return {int(n) for n in os.listdir("/proc") if n.isdigit()}


# every way to make a file a third attack found past the guard, then the plain one
WRITES = {
    "open through dir_fd": "os.close(os.open(NAME, os.O_WRONLY | os.O_CREAT, dir_fd=os.open(TARGET, os.O_RDONLY)))",
    "os.mkfifo": "os.mkfifo(os.path.join(TARGET, NAME))",
    "os.mkfifo through dir_fd": "os.mkfifo(NAME, dir_fd=os.open(TARGET, os.O_RDONLY))",
    "os.mknod": "os.mknod(os.path.join(TARGET, NAME), 0o600 | stat.S_IFREG)",
    "SQLite ATTACH": (
        "db = sqlite3.connect(':memory:'); db.execute('ATTACH DATABASE ? AS a', (os.path.join(TARGET, NAME),));"
        " db.execute('create table a.t (x)'); db.commit()"
    ),
    "SQLite VACUUM INTO": (
        "db = sqlite3.connect('inside.db'); db.execute('create table if not exists t (x)'); db.commit();"
        " db.execute('VACUUM INTO ?', (os.path.join(TARGET, NAME),))"
    ),
    "open": "open(os.path.join(TARGET, NAME), 'w').write('x')",
}
TARGETS = {
    "another folder": None,  # tmp_path / "outside"
    "the user's home": Path.home(),
    "the project": PROJECT,
    "/tmp": Path("/tmp"),
}


@pytest.mark.parametrize("target_name", list(TARGETS))
async def test_nothing_is_written_outside_the_folder(target_name: str, tmp_path: Path, tally: Any) -> None:
    target = TARGETS[target_name] or tmp_path / "outside"
    target.mkdir(exist_ok=True)
    names = {how: f"adk-escape-{uuid.uuid4().hex[:12]}" for how in WRITES}
    code = "import os, sqlite3, stat\n" + "".join(
        f"NAME, TARGET = {names[how]!r}, {str(target)!r}\n"
        f"try:\n    {attempt}\n    print({how!r}, 'MADE')\n"
        f"except Exception as exc:\n    print({how!r}, 'refused:', type(exc).__name__)\n"
        for how, attempt in WRITES.items()
    )
    try:
        response = await run_code(sandboxed(tmp_path / "work"), code)
        made = []
        for how, name in names.items():
            # the sandbox's own /tmp may take it: what counts is the user's folder
            there = (target / name).exists() or (target / name).is_symlink()
            tally.record(f"{FAMILY}: {how} into {target_name}", 1, int(there))
            made += [how] if there else []
        assert not made, f"made outside the folder: {made}\n{response['stdout']}"
    finally:
        for name in names.values():
            (target / name).unlink(missing_ok=True)


async def test_the_network_is_there_only_when_asked_for(tmp_path: Path, tally: Any) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    code = (
        "import socket\n"
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {port}), timeout=5).close()\n"
        "    print('connected')\n"
        "except OSError as exc:\n"
        "    print('refused:', type(exc).__name__)\n"
    )
    try:
        with tally.case(f"{FAMILY}: a connection to a server of the user's without network=True"):
            offline = await run_code(sandboxed(tmp_path / "a"), code)
            assert offline["stdout"].startswith("refused:"), offline
        with tally.case(f"{FAMILY}: the same with network=True"):
            online = await run_code(sandboxed(tmp_path / "b", network=True), code)
            assert online["stdout"] == "connected\n", online
    finally:
        server.close()


async def test_twenty_thousand_files_make_a_small_response(tmp_path: Path, tally: Any) -> None:
    code = "for i in range(20_000):\n    open(f'file{i:05}.txt', 'w').close()\n"
    with tally.case(f"{FAMILY}: 20,000 files written: the list is cut and the model told so"):
        started = time.monotonic()
        response = await run_code(PythonCodeExecutor(timeout=120, workdir=tmp_path), code)
        assert "error" not in response, response
        assert len(json.dumps(response)) < 10_000, "the tool response is kept in the session: it must stay small"
        assert response["files"] == [f"file{i:05}.txt" for i in range(100)]
        assert response["files_not_listed"].startswith("19,900 more files were written"), response
        assert time.monotonic() - started < 120
