"""PythonCodeExecutor: the model's code in a real child process, its output, figures and limits.

Through the public API: an LlmAgent whose ScriptedModel calls `run_python`, run by agent.run or
a Runner over a real SQLite session store; and the tool called directly for each limit. Every
child is a real `python` process; what a test checks is what the model (or the user) would read.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import struct
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from bwrap_sandbox import require_bwrap

from adk_notebook import (
    AdkError,
    Content,
    FunctionCall,
    FunctionResponse,
    LlmAgent,
    PythonCodeExecutor,
    Runner,
    ScriptedModel,
    SimpleToolContext,
    SqliteSessionService,
)
from adk_notebook.notebook.transcript import transcript_html
from adk_notebook.tools import code_executor, code_sandbox

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


async def run_code(executor: PythonCodeExecutor, code: str) -> dict[str, Any]:
    """The JSON object the model receives for one call of the tool."""
    return (await executor.execute(SimpleToolContext(), {"code": code})).response


def png_size(data: bytes) -> tuple[int, int]:
    assert data.startswith(PNG_MAGIC)
    width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk comes first
    return width, height


def gone(pid: int) -> bool:
    """No such process any more (a zombie left for init to reap counts as gone: it runs nothing)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def running_in(folder: Path) -> list[psutil.Process]:
    """The processes whose current folder is `folder` (pids inside a sandbox are not the host's)."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.cwd() == str(folder) and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except psutil.Error:  # gone meanwhile, or not ours to look at
            pass
    return found


def wait_until_none_runs_in(folder: Path, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while running_in(folder):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture(params=["guard", "bwrap"])
def sandbox(request: pytest.FixtureRequest) -> str:
    """Each mode the executor runs code in; "bwrap" where bubblewrap can run (required in CI)."""
    if request.param == "bwrap":
        require_bwrap()
    return str(request.param)


# -- through an agent ------------------------------------------------------------------------
def test_an_agent_runs_code_and_the_model_reads_its_output(tmp_path: Path) -> None:
    executor = PythonCodeExecutor(timeout=20, workdir=tmp_path)
    code = "import sys\nprint(sum(range(10)))\nprint('careful', file=sys.stderr)"
    model = ScriptedModel([FunctionCall("run_python", {"code": code}), "The sum is 45."])
    result = LlmAgent(name="coder", model=model, tools=[executor]).run("Add 0..9 in Python")

    assert result.text == "The sum is 45."
    [received] = model.requests[1].contents[-1].function_responses()
    assert received.name == "run_python"
    assert received.response == {"stdout": "45\n", "stderr": "careful\n", "figures": 0}
    assert received.parts == []


async def test_agent_run_inside_a_running_loop_as_in_a_kernel(tmp_path: Path) -> None:
    # With a loop running (a kernel always has one), agent.run() runs on a private loop in a
    # worker thread: the child process is started and waited for from that thread's loop.
    model = ScriptedModel([FunctionCall("run_python", {"code": "print(6 * 7)"}), "42."])
    agent = LlmAgent(name="coder", model=model, tools=[PythonCodeExecutor(workdir=tmp_path)])
    result = agent.run("Six times seven?")
    [response] = _responses(result.events)
    assert response.response == {"stdout": "42\n", "stderr": "", "figures": 0}


async def test_figures_come_back_as_png_parts_once_each_and_are_stored_with_the_session(
    tmp_path: Path,
) -> None:
    executor = PythonCodeExecutor(timeout=60, workdir=tmp_path / "work")
    code = (
        "import matplotlib.pyplot as plt\n"
        "plt.figure(figsize=(4, 3), dpi=50)\n"
        "plt.plot([1, 2, 3], [1, 4, 9])\n"
        "plt.savefig('squares.png', dpi=30)\n"  # saved and left open: comes back once, as saved
        "plt.show()\n"  # under Agg a no-op, and no warning for the model
        "plt.figure(figsize=(2, 2), dpi=50)\n"
        "plt.bar(['a', 'b'], [3, 5])\n"
        "plt.figure(figsize=(3, 3), dpi=50)\n"
        "plt.savefig('closed.png')\n"
        "plt.close()\n"  # saved and closed: still comes back
        "print(plt.get_backend())\n"
    )
    model = ScriptedModel([FunctionCall("run_python", {"code": code}), "Here is the chart."])
    agent = LlmAgent(name="plotter", model=model, tools=[executor])
    sessions = SqliteSessionService(tmp_path / "sessions.db")
    runner = Runner(app_name="plots", agent=agent, session_service=sessions)
    session = await sessions.create(app_name="plots", user_id="u1")
    events = [e async for e in runner.run(user_id="u1", session_id=session.id, content=Content.user("Plot squares"))]

    [received] = model.requests[1].contents[-1].function_responses()
    assert received.response == {
        "stdout": "Agg\n",
        "stderr": "",
        "figures": 3,
        "files": ["closed.png", "squares.png"],
    }
    assert [p.inline_data.mime_type for p in received.parts if p.inline_data] == ["image/png"] * 3
    squares, closed, bars = (p.inline_data.data for p in received.parts if p.inline_data)
    assert squares == (tmp_path / "work" / "squares.png").read_bytes(), "the file as saved"
    assert png_size(squares) == (120, 90) and png_size(closed) == (150, 150)
    assert png_size(bars) == (100, 100), "the open figure, drawn as it was made"

    stored = await sessions.get(app_name="plots", user_id="u1", session_id=session.id)
    assert stored is not None
    [kept] = [r for e in stored.events for r in e.function_responses()]
    assert kept.parts == received.parts, "the image is stored with the session, byte for byte"

    html = transcript_html(events, agent_name="plotter")
    assert "run_python" in html and "data:image/png;base64," in html, "a normal tool card with the figure inline"


def test_bad_code_is_a_result_the_model_reads_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    executor = PythonCodeExecutor(timeout=20, workdir=tmp_path)
    model = ScriptedModel(
        [
            FunctionCall("run_python", {"code": "print('before')\nrows = []\nrows[3]"}),
            FunctionCall("run_python", {"code": "def f(:\n    pass"}),
            FunctionCall("run_python", {}),
            "I made mistakes.",
        ]
    )
    result = LlmAgent(name="coder", model=model, tools=[executor]).run("Go")

    assert result.text == "I made mistakes."
    index_error, syntax_error, no_code = (r.response for r in _responses(result.events))
    assert index_error["stdout"] == "before\n"
    assert index_error["error"].startswith("Traceback (most recent call last):\n")
    assert 'File "<code>", line 3, in <module>' in index_error["error"]
    assert index_error["error"].endswith("IndexError: list index out of range")
    assert "code_runner" not in index_error["error"], "only the code's own frames"
    assert syntax_error["error"].endswith("SyntaxError: invalid syntax") and "line 1" in syntax_error["error"]
    assert no_code["code"] == "invalid_arguments" and "code" in no_code["error"]


def _responses(events: list[Any]) -> list[FunctionResponse]:
    return [r for e in events for r in e.function_responses()]


# -- the limits ------------------------------------------------------------------------------
async def test_a_runaway_loop_is_stopped_at_the_time_limit_and_its_process_is_gone(
    tmp_path: Path, sandbox: Any
) -> None:
    executor = PythonCodeExecutor(timeout=1.5, workdir=tmp_path, sandbox=sandbox)
    started = time.monotonic()
    response = await run_code(executor, "print('looping', flush=True)\nwhile True:\n    pass")
    elapsed = time.monotonic() - started

    assert "time limit of 1.5 s" in response["error"] and "stopped" in response["error"]
    assert elapsed < 10
    assert response["stdout"] == "looping\n", "what it printed before it was stopped is kept"
    assert wait_until_none_runs_in(tmp_path)


async def test_a_timeout_kills_the_whole_process_group(tmp_path: Path, sandbox: Any) -> None:
    # A fork through ctypes is native code the guard cannot see: the process group still catches it.
    code = (
        "import ctypes, os, time\n"
        "libc = ctypes.CDLL(None)\n"
        "child = libc.fork()\n"
        "if child == 0:\n"
        "    time.sleep(60)\n"
        "    os._exit(0)\n"
        "print(os.getpid(), child, flush=True)\n"
        "time.sleep(60)\n"
    )
    response = await run_code(PythonCodeExecutor(timeout=2, workdir=tmp_path, sandbox=sandbox), code)
    parent, child = (int(n) for n in response["stdout"].split())
    assert child > 0 and "time limit" in response["error"]
    assert wait_until_none_runs_in(tmp_path)


async def test_a_cancelled_call_leaves_no_process_behind(tmp_path: Path, sandbox: Any) -> None:
    executor = PythonCodeExecutor(timeout=60, workdir=tmp_path, sandbox=sandbox)
    code = "import time\nopen('started.txt', 'w').write('yes')\ntime.sleep(60)"
    call = asyncio.create_task(executor.execute(SimpleToolContext(), {"code": code}))
    started = tmp_path / "started.txt"
    for _ in range(400):
        if started.exists() and started.read_text():
            break
        await asyncio.sleep(0.05)
    assert running_in(tmp_path), "it runs"
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert wait_until_none_runs_in(tmp_path)


async def test_a_memory_hog_gets_memory_error_naming_the_limit(tmp_path: Path) -> None:
    executor = PythonCodeExecutor(timeout=20, memory_limit=200, workdir=tmp_path)
    at_once = await run_code(executor, "data = bytearray(400 * 2**20)")
    growing = await run_code(executor, "chunks = []\nwhile True:\n    chunks.append(bytearray(2**20))")
    fine = await run_code(executor, "data = bytearray(50 * 2**20)\nprint(len(data))")

    for response in (at_once, growing):
        assert "MemoryError" in response["error"] and "at most 200 MiB" in response["error"]
    assert fine == {"stdout": f"{50 * 2**20}\n", "stderr": "", "figures": 0}, "the limit is the one given"


async def test_output_past_the_limit_is_cut_in_the_middle_with_a_marker(
    tmp_path: Path,
) -> None:
    executor = PythonCodeExecutor(timeout=20, workdir=tmp_path, max_output=1_000)
    response = await run_code(executor, "for i in range(100_000):\n    print(i)")
    stdout = response["stdout"]
    total = sum(len(f"{i}\n") for i in range(100_000))
    assert stdout.startswith("0\n1\n2\n") and stdout.endswith("99998\n99999\n")
    assert f"[… {total - 1_000:,} bytes of output cut …]" in stdout
    assert len(stdout) < 1_100


async def test_no_file_is_written_outside_the_working_folder(tmp_path: Path) -> None:
    work, outside = tmp_path / "work", tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("precious")
    before = sorted(p.name for p in outside.iterdir())
    attempts = {
        "open": "open(OUT + '/new.txt', 'w')",
        "append": "open(OUT + '/keep.txt', 'a').write('x')",
        "os.open": "os.open(OUT + '/new.txt', os.O_WRONLY | os.O_CREAT)",
        "relative": "open('../outside/new.txt', 'w')",
        "remove": "os.remove(OUT + '/keep.txt')",
        "rename": "os.rename(OUT + '/keep.txt', 'stolen.txt')",
        "mkdir": "os.mkdir(OUT + '/d')",
        "chmod": "os.chmod(OUT + '/keep.txt', 0o777)",
        "hard link": "os.link(OUT + '/keep.txt', 'linked.txt')",
        "through a symlink": "os.symlink(OUT, 'door'); open('door/new.txt', 'w')",
        "shutil.copy": "import shutil; shutil.copy('inside.txt', OUT)",
        "sqlite3": "import sqlite3; sqlite3.connect(OUT + '/db.sqlite').execute('create table t (x)')",
        "subprocess": "import subprocess; subprocess.run(['touch', OUT + '/new.txt'])",
        "os.system": "os.system('touch ' + OUT + '/new.txt')",
        "fork": "os.fork()",
        "unix socket": "import socket; socket.socket(socket.AF_UNIX).bind(OUT + '/s.sock')",
    }
    code = "\n".join(
        [
            "import os",
            f"OUT = {str(outside)!r}",
            "open('inside.txt', 'w').write('mine')",
            "open(os.path.expanduser('~/at_home.txt'), 'w').write('home is the folder')",
            "import tempfile; tempfile.NamedTemporaryFile(delete=False).write(b'tmp is inside too')",
            *(
                f"try:\n    {attempt}\n    print({name!r}, 'ALLOWED')\n"
                f"except PermissionError as exc:\n    print({name!r}, 'refused:', exc.strerror)"
                for name, attempt in attempts.items()
            ),
        ]
    )
    response = await run_code(PythonCodeExecutor(timeout=20, workdir=work), code)

    assert "error" not in response, response
    assert response["stdout"].count("refused:") == len(attempts), response["stdout"]
    assert "ALLOWED" not in response["stdout"]
    assert (
        "only write inside its working folder" in response["stdout"] and "may not start processes" in response["stdout"]
    )
    assert sorted(p.name for p in outside.iterdir()) == before
    assert (outside / "keep.txt").read_text() == "precious"
    assert oct((outside / "keep.txt").stat().st_mode & 0o777) != oct(0o777)
    assert (work / "inside.txt").read_text() == "mine" and (work / "at_home.txt").exists()
    assert response["files"] == ["at_home.txt", "inside.txt"], "the files it wrote, hidden folders left out"
    assert any((work / ".tmp").iterdir()), "TMPDIR is inside the folder"


async def test_api_keys_never_reach_the_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sandbox: Any) -> None:
    secret = "sk-" + "test-codeexec-0123456789abcdef"  # a made-up key, spelled so secret scanners pass it
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.setenv("GOOGLE_API_KEY", secret)
    code = (
        "import json, os\n"
        "print(json.dumps(sorted(os.environ)))\n"
        "try:\n"
        "    print(open(f'/proc/{os.getppid()}/environ').read())\n"
        "except PermissionError as exc:\n"
        "    print('refused:', exc.strerror)\n"
        "print(len(open('/proc/self/environ').read()) > 0)\n"  # its own environment it may read
    )
    executor = PythonCodeExecutor(timeout=20, workdir=tmp_path, sandbox=sandbox)
    response = await run_code(executor, code)
    names, refusal, own = response["stdout"].splitlines()
    expected = ["HOME", "LANG", "MPLBACKEND", "MPLCONFIGDIR", "PATH", "TMPDIR", "XDG_CACHE_HOME"]
    bwrap_sets = ["PWD"] if sandbox == "bwrap" else []  # bubblewrap sets it: the folder
    assert json.loads(names) == sorted(expected + bwrap_sets)
    assert refusal == "refused: code run by run_python may not read another process's environment or memory"
    assert own == "True"
    assert secret not in repr(response)


async def test_the_code_cannot_signal_other_processes(tmp_path: Path) -> None:
    bystander = await asyncio.create_subprocess_exec(sys.executable, "-c", "import time; time.sleep(60)")
    try:
        code = f"import os, signal\nos.kill({bystander.pid}, signal.SIGKILL)"
        response = await run_code(PythonCodeExecutor(timeout=20, workdir=tmp_path), code)
        assert response["error"].endswith("may not signal other processes (os.kill)")
        assert not gone(bystander.pid), "still running"
    finally:
        bystander.kill()
        await bystander.wait()


async def test_files_persist_between_calls_and_variables_do_not(tmp_path: Path) -> None:
    executor = PythonCodeExecutor(timeout=20, workdir=tmp_path)
    first = await run_code(
        executor,
        "x = 41\nopen('data.csv', 'w').write('a,b\\n1,2\\n')\n"
        "open('helpers.py', 'w').write('def double(n):\\n    return 2 * n\\n')",
    )
    second = await run_code(
        executor,
        "import helpers\nprint(open('data.csv').read().split()[1], helpers.double(21))\nx",
    )
    assert first["files"] == ["data.csv", "helpers.py"]
    assert second["stdout"] == "1,2 42\n"
    assert second["error"].endswith("NameError: name 'x' is not defined")
    assert not (tmp_path / "__pycache__").exists(), "imports leave no bytecode behind"


async def test_a_default_executor_has_a_folder_of_its_own() -> None:
    executor = PythonCodeExecutor()
    folder = executor.workdir
    response = await run_code(executor, "import os\nprint(os.getcwd())")
    assert response["stdout"] == f"{folder}\n" and folder.is_dir()
    del executor
    gc.collect()
    assert not folder.exists(), "removed with the executor"


async def test_the_code_runs_as_a_scripts_main_module(tmp_path: Path) -> None:
    code = (
        "import dataclasses, pickle, socket\n"
        "@dataclasses.dataclass\n"
        "class Point:\n"
        "    x: int\n"
        "print(__name__, pickle.loads(pickle.dumps(Point(3))))\n"
        "server = socket.socket()\n"
        "server.bind(('127.0.0.1', 0))\n"  # its own loopback, even without network; binding one writes no file
        "print(server.getsockname()[0])\n"
    )
    response = await run_code(PythonCodeExecutor(timeout=20, workdir=tmp_path), code)
    assert response["stdout"] == "__main__ Point(x=3)\n127.0.0.1\n", response


async def test_a_file_past_the_size_limit_fails_to_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from adk_notebook.tools import code_executor

    monkeypatch.setattr(code_executor, "FILE_SIZE_LIMIT", 2**20)
    code = "with open('big.bin', 'wb') as f:\n    f.write(bytes(2 * 2**20))"
    response = await run_code(PythonCodeExecutor(timeout=20, workdir=tmp_path), code)
    assert "File too large" in response["error"]
    assert (tmp_path / "big.bin").stat().st_size <= 2**20


# -- the tool itself -------------------------------------------------------------------------
def test_it_is_a_normal_tool_with_a_schema_for_code(tmp_path: Path) -> None:
    executor = PythonCodeExecutor(10, 256, tmp_path)
    declaration = executor.declaration()
    assert declaration.name == "run_python"
    schema = declaration.parameters
    assert schema is not None and schema["type"] == "object" and schema["required"] == ["code"]
    assert list(schema["properties"]) == ["code"] and schema["properties"]["code"]["type"] == "string"
    assert schema["additionalProperties"] is False
    assert executor.validate_args({"code": "print(1)"}) == {"code": "print(1)"}
    with pytest.raises(ValueError):
        executor.validate_args({"code": 1})
    assert "10 s" in declaration.description and "256 MiB" in declaration.description
    assert not executor.is_long_running and executor.timeout is not None and executor.timeout > 10
    assert PythonCodeExecutor(workdir=tmp_path, name="python").name == "python"


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"timeout": 0}, "timeout must be a number of seconds above 0"),
        ({"timeout": None}, "a run without a time limit"),
        (
            {"memory_limit": -5},
            "memory_limit (MiB, or None) must be a whole number above 0",
        ),
        ({"max_output": 0}, "max_output (bytes) must be a whole number above 0"),
        ({"name": "run python"}, "is not accepted by model providers"),
        ({"sandbox": "docker"}, 'sandbox must be "auto", "bwrap" or "guard"'),
    ],
)
def test_bad_settings_are_clear_errors(kwargs: dict[str, Any], says: str, tmp_path: Path) -> None:
    with pytest.raises(AdkError) as caught:
        PythonCodeExecutor(**{"workdir": tmp_path, **kwargs})
    assert says in caught.value.message


def test_a_workdir_that_is_a_file_is_a_clear_error(tmp_path: Path) -> None:
    not_a_folder = tmp_path / "file.txt"
    not_a_folder.write_text("x")
    with pytest.raises(AdkError) as caught:
        PythonCodeExecutor(workdir=not_a_folder / "sub")
    assert caught.value.code == "invalid_workdir" and "workdir=" in caught.value.message


def test_the_child_is_the_same_interpreter(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            FunctionCall("run_python", {"code": "import sys; print(sys.executable)"}),
            "ok",
        ]
    )
    result = LlmAgent(name="which", model=model, tools=[PythonCodeExecutor(workdir=tmp_path)]).run("which python?")
    [response] = _responses(result.events)
    assert os.path.realpath(response.response["stdout"].strip()) == os.path.realpath(sys.executable)


# -- the sandbox -----------------------------------------------------------------------------
@pytest.fixture
def fresh_probe() -> Iterator[None]:
    """The bubblewrap probe and the fallback's warning, found anew (each is once per process)."""
    code_sandbox.bwrap_problem.cache_clear()
    code_executor._warn_unconfined.cache_clear()
    yield
    code_sandbox.bwrap_problem.cache_clear()
    code_executor._warn_unconfined.cache_clear()


def test_auto_uses_bubblewrap_where_it_runs(tmp_path: Path) -> None:
    require_bwrap()
    executor = PythonCodeExecutor(workdir=tmp_path)
    assert executor.sandbox_mode == "bwrap" and "it has no network" in executor.description
    online = PythonCodeExecutor(workdir=tmp_path, network=True)
    assert online.sandbox_mode == "bwrap" and "network" not in online.description
    assert PythonCodeExecutor(workdir=tmp_path, sandbox="guard").sandbox_mode == "guard"


async def test_without_bubblewrap_auto_falls_back_to_the_guard_and_says_once_what_is_not_confined(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_probe: None
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-programs"))  # no bwrap to be found
    with pytest.warns(RuntimeWarning) as warned:
        first = PythonCodeExecutor(workdir=tmp_path / "a")
        second = PythonCodeExecutor(workdir=tmp_path / "b")
    assert first.sandbox_mode == second.sandbox_mode == "guard"
    [warning] = [w for w in warned if "PythonCodeExecutor" in str(w.message)]
    said = str(warning.message)
    assert "bubblewrap (bwrap) is not installed" in said
    for unconfined in ("kernel's environment", "outside its folder", "signal your processes", "network"):
        assert unconfined in said
    assert warning.filename == __file__, "it points at the line that made the executor"
    response = await run_code(first, "print('still runs')")
    assert response == {"stdout": "still runs\n", "stderr": "", "figures": 0}


def test_a_bwrap_that_cannot_make_namespaces_is_found_by_the_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_probe: None
) -> None:
    # A stand-in for bubblewrap on a kernel without user namespaces: it fails as bwrap does there.
    programs = tmp_path / "programs"
    programs.mkdir()
    fake = programs / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(programs))
    with pytest.raises(AdkError) as caught:
        PythonCodeExecutor(workdir=tmp_path / "work", sandbox="bwrap")
    assert caught.value.code == "sandbox_unavailable"
    assert "No permissions to create new namespace" in caught.value.message
    with pytest.warns(RuntimeWarning, match="No permissions to create new namespace"):
        assert PythonCodeExecutor(workdir=tmp_path / "work").sandbox_mode == "guard"


def test_sandbox_bwrap_refuses_to_run_without_bubblewrap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_probe: None
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-programs"))
    with pytest.raises(AdkError) as caught:
        PythonCodeExecutor(workdir=tmp_path, sandbox="bwrap")
    assert caught.value.code == "sandbox_unavailable"
    assert "Install bubblewrap" in caught.value.message and 'sandbox="guard"' in caught.value.message


async def test_under_bubblewrap_the_home_and_the_project_are_not_there(tmp_path: Path) -> None:
    require_bwrap()
    project = Path(__file__).resolve().parents[1]
    mine, its = (Path("/tmp") / f"adk-{who}-{uuid.uuid4().hex[:12]}" for who in ("host", "sandbox"))
    mine.write_text("the user's")
    code = (
        "import json, os\n"
        f"for path in ({str(Path.home())!r}, {str(project)!r}):\n"
        "    print(json.dumps(sorted(os.listdir(path)) if os.path.isdir(path) else None))\n"
        f"print(json.dumps(os.path.exists({str(mine)!r})))\n"
        f"open({str(its)!r}, 'w').write('its own')\n"
    )
    try:
        executor = PythonCodeExecutor(workdir=tmp_path / "work", sandbox="bwrap")
        response = await run_code(executor, code)
        home, in_project, sees_mine = map(json.loads, response["stdout"].splitlines())
    finally:
        mine.unlink()
    # the project is not there, but for the virtual environment Python runs from when it lives in
    # the project (CI's .ci/venv): bound read-only, as Python's folders are
    venv = [Path(p).relative_to(project).parts[0] for p in (sys.prefix,) if Path(p).is_relative_to(project)]
    assert in_project is None or in_project == venv, f"no project: {in_project}"
    assert sees_mine is False and not its.exists(), "a /tmp of its own"
    # Python may live under the home (pyenv): that folder alone is there, read-only
    pythons = {
        Path(p).relative_to(Path.home()).parts[0]
        for p in (sys.prefix, sys.base_prefix)
        if Path(p).is_relative_to(Path.home())
    }
    assert home is None or set(home) <= pythons, home


# -- in a real kernel ------------------------------------------------------------------------
@pytest.mark.notebook
def test_in_a_kernel_bad_code_a_runaway_loop_and_a_memory_hog_leave_it_as_it_was(
    tmp_path: Path,
) -> None:
    import nbformat
    from nbclient import NotebookClient

    cells = [
        (
            "%load_ext adk_notebook\nimport os\nfrom adk_notebook import FunctionCall, PythonCodeExecutor, ScriptedModel\n"
            "x, kernel_pid = 41, os.getpid()"
        ),
        (
            "run_python = PythonCodeExecutor(timeout=2, memory_limit=200, workdir='scratch')\n"
            "codes = ['1/0', 'while True: pass', 'hog = bytearray(2**30)', 'import os; os.kill(os.getppid(), 9)']\n"
            "scripted = ScriptedModel([[FunctionCall('run_python', {'code': c}) for c in codes], 'None of it worked.'])"
        ),
        "%%agent coder --model scripted --tools run_python\nYou run code.",
        "%%chat coder\nTry these.",
        "print(x + 1, os.getpid() == kernel_pid)",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(
        nb,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    ).execute()

    chat, after = nb.cells[3], nb.cells[4]
    assert not [o for c in nb.cells for o in c.outputs if o.output_type == "error"]
    [view] = [o for o in chat.outputs if o.output_type == "display_data" and "text/html" in o.data]
    html = view.data["text/html"]
    assert html.count("run_python") >= 4, "four normal tool cards"
    for outcome in (
        "ZeroDivisionError",
        "time limit of 2 s",
        "MemoryError",
        "may not signal other processes",
    ):
        assert outcome in html, outcome
    assert "None of it worked." in html
    assert after.outputs[0]["text"] == "42 True\n", "the kernel kept its variables and was never replaced"


@pytest.mark.notebook
def test_in_a_kernel_without_bubblewrap_the_fallback_is_said_once_under_the_cell(tmp_path: Path) -> None:
    import nbformat
    from nbclient import NotebookClient

    cells = [
        "import os\nos.environ['PATH'] = '/nonexistent'  # no bwrap to be found\nfrom adk_notebook import PythonCodeExecutor",
        "first = PythonCodeExecutor(workdir='a')\nprint(first.sandbox_mode)",
        "second = PythonCodeExecutor(workdir='b')\nprint(second.sandbox_mode)",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(nb, timeout=60, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()

    first, second = (nb.cells[i].outputs for i in (1, 2))
    said = [o["text"] for o in first if o.get("name") == "stderr"]
    assert len(said) == 1 and "RuntimeWarning" in said[0] and "audit-hook guard alone" in said[0], first
    assert "Install bubblewrap" in said[0]
    assert [o["text"] for o in first if o.get("name") == "stdout"] == ["guard\n"]
    assert [o["text"] for o in second] == ["guard\n"], "said once"
