"""The notebook on any store: ADK_SESSIONS (or `%adk sessions --use URL`) names it, `%%chat` and
`%adk sessions` work the same, and what a chat stored is there for any other process to read."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import nbformat
import pytest
from IPython.testing import globalipapp
from nbclient import NotebookClient
from session_stores import fresh_schema
from test_magics import FakeView, define_weather_bot, run

from adk_notebook.notebook import get_workspace
from adk_notebook.sessions.urls import ENV, open_session_service


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        return fresh_schema(request.getfixturevalue("postgres_dsn"))
    return f"sqlite:///{tmp_path / 'chats.db'}"


@pytest.fixture()
def shell(monkeypatch: pytest.MonkeyPatch) -> Any:
    ip = globalipapp.start_ipython() or globalipapp.get_ipython()
    ip.run_cell("%load_ext adk_notebook")
    for key in (
        "GOOGLE_API_KEY",
        "GEMINI_API_KEY",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
    ):
        monkeypatch.delenv(key, raising=False)
    yield ip
    monkeypatch.delenv(ENV, raising=False)
    get_workspace(ip).reset()


def stored_texts(url: str, session_id: str, app: str = "weather_bot") -> list[str]:
    """What another process reading `url` finds in the chat's session."""

    async def read() -> list[str]:
        service = open_session_service(url)
        try:
            session = await service.get(app_name=app, user_id="user", session_id=session_id)
            return [e.text for e in session.events] if session else []
        finally:
            await _close(service)

    return asyncio.run(read())


async def _close(service: Any) -> None:
    if hasattr(service, "aclose"):
        await service.aclose()
    else:
        service.close()


def start(shell: Any) -> None:
    ws = get_workspace(shell)
    ws.view_factory = FakeView
    define_weather_bot(shell, ["one", "two"])


@pytest.mark.parametrize("how", ["ADK_SESSIONS", "--use URL"])
def test_chats_keep_their_sessions_in_the_store_a_url_names(
    shell: Any, url: str, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if how == "ADK_SESSIONS":
        monkeypatch.setenv(ENV, url)
        get_workspace(shell).reset()  # what a kernel started with the variable set does at %load_ext
    start(shell)
    if how == "--use URL":
        run(shell, f"%adk sessions --use {url}")
    kind = "Postgres" if url.startswith("postgresql") else "Sqlite"
    assert type(get_workspace(shell).session_service).__name__ == f"{kind}SessionService"

    run(shell, "%%chat weather_bot --session s1 --state user_name=Ana\nHi")
    run(shell, "%%chat weather_bot --session s1\nAgain")
    table = run(shell, "%adk sessions")._repr_mimebundle_()["text/plain"]
    assert f"in {kind}SessionService" in table and "s1" in table
    assert stored_texts(url, "s1") == ["Hi", "one", "Again", "two"]


def test_a_url_that_names_no_store_is_one_clear_line(shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    start(shell)
    capsys.readouterr()
    assert not shell.run_cell("%adk sessions --use mysql://root:hunter2@db/x").success
    shown = capsys.readouterr()
    out = shown.out + shown.err
    assert "names no session service" in out and "postgresql://" in out
    assert "hunter2" not in out, "a password in a URL is never shown"


def test_the_store_a_url_names_is_shown_without_its_secrets(
    shell: Any, postgres_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # The test server trusts loopback logins (the password goes unused) and has no SSL (so has sslpassword).
    url = fresh_schema(postgres_dsn) + "&password=pw-secret-41d2&sslpassword=ssl-secret-8b0c"
    start(shell)
    capsys.readouterr()
    shown = [run(shell, f"%adk sessions --use {url}")._repr_mimebundle_()]
    run(shell, "%%chat weather_bot --session s1 --state user_name=Ana\nHi")
    shown.append(run(shell, "%adk sessions")._repr_mimebundle_())
    out = capsys.readouterr()
    text = f"{shown} {out.out} {out.err}"
    assert "PostgresSessionService(" in text and "127.0.0.1" in text
    assert "pw-secret-41d2" not in text and "ssl-secret-8b0c" not in text, text


KERNEL_CELLS = [
    "%load_ext adk_notebook",
    "from adk_notebook import ScriptedModel\nmodel = ScriptedModel([{answer!r}])",
    "%%agent helper --model model\nYou help.",
    "%%chat helper --session shared\n{message}",
    "print(len(model.requests[0].contents), 'contents sent')",
    "%adk sessions",
]


def run_kernel(url: str, message: str, answer: str) -> list[str]:
    """A real kernel started as a JupyterHub spawner would start it (ADK_SESSIONS set); its outputs' text."""
    cells = [c.format(answer=answer, message=message) for c in KERNEL_CELLS]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(nb, timeout=120, kernel_name="python3").execute(env={**os.environ, ENV: url})
    return [o.get("text", "") + o.get("data", {}).get("text/plain", "") for cell in nb.cells for o in cell.outputs]


@pytest.mark.notebook
def test_two_kernels_pointed_at_one_database_continue_one_conversation(
    url: str,
) -> None:
    first = "\n".join(run_kernel(url, "Remember: blue.", "Noted."))
    assert "1 contents sent" in first
    second = "\n".join(run_kernel(url, "What did I say?", "You said blue."))
    # The second kernel's model saw the first kernel's conversation: 2 messages before its own.
    assert "3 contents sent" in second
    assert "shared" in second.split("Sessions (")[1]
    assert stored_texts(url, "shared", app="helper") == [
        "Remember: blue.",
        "Noted.",
        "What did I say?",
        "You said blue.",
    ]
