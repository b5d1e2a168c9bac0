"""What a newcomer met trying the project (issue 26): each mistake is one line at the place it is made.

- A tool parameter of a type the model cannot send (a callable, a plain class, a lock) is one
  line naming the function, the parameter and what to use instead, from `@tool`, `FunctionTool`
  and a `%%tool` cell alike, as `*args` already was (it was a 220-line pydantic traceback).
- A bad `--model` string fails the `%%agent` cell that holds it (it failed at `%%chat`); a known
  provider without its key set does not (keys are read when a request is sent).
- `%%agent?` says what the default model is.
- A `SqliteSessionService` leaves only its database file behind: after `close()`, and when the
  program ends without closing it (the write-ahead log is folded back, `-wal` / `-shm` removed).
- Notebook 06 describes the agent graph's arrows as they are drawn.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from provider_env import PROVIDER_VARIABLES
from pydantic import BaseModel
from test_magics import ip

from adk_notebook import FunctionTool, LlmAgent, SqliteSessionService, tool
from adk_notebook.notebook import get_workspace
from adk_notebook.notebook.render import EDGE_DASHES

__all__ = ["ip"]  # the fixture, test_magics' one global shell with the extension


class Plain:
    """A class pydantic knows nothing about."""


class Job(BaseModel):
    name: str
    on_done: Callable[[str], None]


class Step(BaseModel):
    """A model that contains itself, with the unsupported field one level down."""

    next: Step | None = None
    check: Callable[[], bool] | None = None


def takes_callable(on_done: Callable[[str], None]) -> str:
    return "ok"


def takes_plain(thing: Plain) -> str:
    return "ok"


def takes_lock(city: str, lock: threading.Lock) -> str:  # type: ignore[valid-type]  # 3.11: a function
    return city


def takes_list_of_plain(things: list[Plain] | None = None) -> str:
    return "ok"


def takes_model(job: Job) -> str:
    return job.name


def takes_steps(first: Step) -> str:
    return "ok"


BAD_PARAMETERS = [
    (takes_callable, "on_done", "Callable"),
    (takes_plain, "thing", "Plain"),
    (takes_lock, "lock", "allocate_lock"),
    (takes_list_of_plain, "things", "Plain"),
    (takes_model, "job", "Job (with Callable"),
    (takes_steps, "first", "Step (with Callable"),
]


def _one_line_naming(message: str, *names: str) -> None:
    assert "\n" not in message and len(message) < 400, f"not one short line: {message!r}"
    for name in names:
        assert name in message, f"{name!r} not in {message!r}"
    assert "use str, int" in message, f"does not say what to use instead: {message!r}"


@pytest.mark.parametrize(("fn", "param", "type_text"), BAD_PARAMETERS, ids=lambda v: getattr(v, "__name__", v))
def test_a_parameter_of_an_unsupported_type_is_one_line(
    fn: Callable[..., Any], param: str, type_text: str, tally: Any
) -> None:
    with tally.case(f"first use: tool parameter of an unsupported type ({fn.__name__})"):
        with pytest.raises(TypeError) as raised:
            tool(fn)
        _one_line_naming(str(raised.value), fn.__name__, repr(param), type_text)
        assert raised.value.__cause__ is None and raised.value.__suppress_context__, "pydantic's chain is not shown"


def test_a_parameters_model_with_an_unsupported_field_is_one_line(tally: Any) -> None:
    with tally.case("first use: FunctionTool parameters model with an unsupported field"):
        with pytest.raises(TypeError) as raised:
            FunctionTool("run_job", "Run a job.", lambda ctx, args: args, parameters=Job)
        _one_line_naming(str(raised.value), "Job", "'on_done'", "Callable")


# -- the same in a notebook's %%tool cell -----------------------------------------------------
@pytest.fixture()
def shell(ip: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for key in PROVIDER_VARIABLES:  # no provider key: a model string is checked without one
        monkeypatch.delenv(key, raising=False)
    get_workspace(ip).reset()
    before = set(ip.user_ns)
    yield ip
    for name in set(ip.user_ns) - before:
        if not name.startswith("_"):
            ip.user_ns.pop(name, None)


def _fails_in_one_line(shell: Any, cell: str, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    result = shell.run_cell(cell)
    out = capsys.readouterr()
    lines = [line for line in (out.out + out.err).splitlines() if line.strip()]
    assert not result.success and len(lines) == 1, f"expected one line, got {len(lines)}: {lines[:5]}"
    return lines[0]


@pytest.mark.parametrize(
    ("annotation", "type_text"),
    [("Callable[[int], int]", "Callable"), ("Plain", "Plain"), ("threading.Lock", "allocate_lock")],
)
def test_a_tool_cell_with_an_unsupported_parameter_is_one_line(
    shell: Any, annotation: str, type_text: str, capsys: pytest.CaptureFixture[str], tally: Any
) -> None:
    with tally.case(f"first use: %%tool parameter of an unsupported type ({type_text})"):
        shell.run_cell("import threading\nfrom collections.abc import Callable\nclass Plain:\n    pass\n")
        line = _fails_in_one_line(
            shell,
            f'%%tool\ndef lookup(city: str, helper: {annotation}) -> str:\n    """Look up."""\n    return city\n',
            capsys,
        )
        assert line.startswith("UsageError: %%tool lookup: "), line
        _one_line_naming(line, "lookup", "'helper'", type_text)
        assert get_workspace(shell).tools == {}


# -- --model checked where it is written ----------------------------------------------------------
@pytest.mark.parametrize(
    ("model", "says"),
    [
        ("nosuchprovider:x", "Unknown model string 'nosuchprovider:x'."),
        ("gemnii-2.5", "Did you mean 'gemini-2.5'?"),
        ("opnai:gpt-4o", "Did you mean 'openai:gpt-4o'?"),
        ("openai:", "names no model: write 'openai:<model>'"),
        ("gpt5", "not a model string"),
    ],
)
def test_a_bad_model_string_fails_its_agent_cell(
    shell: Any, model: str, says: str, capsys: pytest.CaptureFixture[str], tally: Any
) -> None:
    with tally.case(f"first use: bad --model at %%agent ({model})"):
        line = _fails_in_one_line(shell, f"%%agent bot --model {model}\nHelp.", capsys)
        assert line.startswith(f"UsageError: %%agent bot: --model {model}: "), line
        assert says in line and "openai:gpt-4o-mini" in line, f"does not say what model strings look like: {line}"
        assert "bot" not in shell.user_ns and "bot" not in get_workspace(shell).agents
        line = _fails_in_one_line(shell, f"%adk model {model}", capsys)
        assert says in line, line


@pytest.mark.parametrize("model", ["auto", "anthropic:claude-haiku-4-5", "openai:gpt-4o-mini", "gemini-2.5-flash"])
def test_a_good_model_string_without_its_key_is_fine_at_the_agent_cell(shell: Any, model: str, tally: Any) -> None:
    with tally.case(f"first use: good --model without a key at %%agent ({model})"):
        result = shell.run_cell(f"%%agent bot --model {model}\nHelp.")
        assert result.success, result.error_in_exec
        assert isinstance(shell.user_ns["bot"], LlmAgent) and shell.user_ns["bot"].model == model
        if model != "auto":  # the request a model would get is shown without a key
            assert shell.run_cell("%adk request bot --message hi").success


def test_agent_help_says_what_the_default_model_is(ip: Any, tally: Any) -> None:
    with tally.case("first use: %%agent? names the default model"):
        help_text = " ".join(ip.find_cell_magic("agent").__doc__.split())
        model_help = help_text[help_text.index("--model MODEL A model string") : help_text.index("--tools <A,B>")]
        assert "%%adk" not in model_help, "%adk is a line magic; there is no %%adk"
        assert "Default: auto, or the model set with %adk model STRING" in model_help, model_help


# -- a SQLite session file leaves nothing beside it -----------------------------------------------
SQLITE_RUN = """
import asyncio, sys
from adk_notebook import FunctionCall, LlmAgent, Runner, ScriptedModel, SqliteSessionService, tool

@tool
def get_weather(city: str) -> dict:
    \"\"\"Get the weather.\"\"\"
    return {"city": city, "condition": "sunny"}

async def talk(sessions: SqliteSessionService) -> None:
    model = ScriptedModel([FunctionCall("get_weather", {"city": "Oslo"}), "Sunny in Oslo."])
    runner = Runner(app_name="app", agent=LlmAgent(name="bot", model=model, tools=[get_weather]), session_service=sessions)
    await sessions.create(app_name="app", user_id="u", session_id="s1", state={"user:name": "Ana"})
    async for _ in runner.run(user_id="u", session_id="s1", content="Weather in Oslo?"):
        pass
"""


def _talk(path: Path, ending: str) -> None:
    """A conversation with a tool call kept in `path`, in a process of its own; `ending` after it."""
    code = f"{SQLITE_RUN}\nsessions = SqliteSessionService({str(path)!r})\nasyncio.run(talk(sessions))\n{ending}\n"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120, cwd=path.parent)


def _reads_back(path: Path) -> None:
    with SqliteSessionService(path) as sessions:
        session = asyncio.run(sessions.get(app_name="app", user_id="u", session_id="s1"))
    assert session is not None and session.state["user:name"] == "Ana"
    assert [e.author for e in session.events] == ["user", "bot", "bot", "bot"], "the run was kept"


@pytest.mark.parametrize(
    ("case", "ending"),
    [
        (
            "close, then the process goes on",
            "sessions.close(); import os; assert os.listdir('.') == ['chats.db'], os.listdir('.')",
        ),
        ("the process ends without close", ""),
        (
            "the process ends while a second service is open",
            "other = SqliteSessionService('chats.db'); sessions.close()",
        ),
    ],
)
def test_a_sqlite_session_file_leaves_nothing_beside_it(tmp_path: Path, case: str, ending: str, tally: Any) -> None:
    with tally.case(f"first use: SQLite sessions leave no -wal/-shm ({case})"):
        path = tmp_path / "chats.db"
        _talk(path, ending)
        assert sorted(os.listdir(tmp_path)) == ["chats.db"]
        _reads_back(path)
        assert sorted(os.listdir(tmp_path)) == ["chats.db"], "reading it back left files too"


# -- notebook 06 says what the graph draws ----------------------------------------------------------
def _style(kind: str) -> str:
    """How `render.graph_svg` (and the live view, which shares EDGE_DASHES) draws an edge kind."""
    dashes = EDGE_DASHES.get(kind)
    if dashes is None:
        return "solid"
    return "dotted" if float(dashes.split(",")[0]) <= 1 else "dashed"


def test_notebook_06_describes_the_graph_arrows_as_drawn(tally: Any) -> None:
    with tally.case("first use: notebook 06 names the graph's arrow styles as drawn"):
        notebook = json.loads((Path(__file__).parents[2] / "notebooks" / "06_multi_agent.ipynb").read_text())
        text = next(
            " ".join("".join(c["source"]).split())
            for c in notebook["cells"]
            if c["cell_type"] == "markdown" and "## The agent graph" in "".join(c["source"])
        )
        for phrase, kind in [
            ("sub-agents and tools", "tree"),
            ("sub-agents and tools", "tool"),
            ("agents it uses as tools", "agent_tool"),
            ("hand-offs", "transfer"),
        ]:
            assert re.search(rf"{phrase}[^,;.]*\b{_style(kind)}\b", text), f"{phrase}: not said to be {_style(kind)}"
