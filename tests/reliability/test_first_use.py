"""What a newcomer met trying the project (issue 26): each mistake is one line at the place it is made.

- A tool parameter of a type the model cannot send (a callable, a plain class, a lock) is one
  line naming the function, the parameter and what to use instead, from `@tool`, `FunctionTool`
  and a `%%tool` cell alike, as `*args` already was (it was a 220-line pydantic traceback).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from IPython.testing import globalipapp
from pydantic import BaseModel

from adk_notebook import FunctionTool, tool
from adk_notebook.notebook import get_workspace


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
@pytest.fixture(scope="module")
def ip() -> Any:
    shell = globalipapp.start_ipython() or globalipapp.get_ipython()  # one global shell, whichever module starts it
    shell.run_cell("%load_ext adk_notebook")
    return shell


@pytest.fixture()
def shell(ip: Any) -> Iterator[Any]:
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
