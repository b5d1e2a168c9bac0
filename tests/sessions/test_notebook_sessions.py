"""The notebook on any store: ADK_SESSIONS (or `%adk sessions --use URL`) names it, `%%chat` and
`%adk sessions` work the same, and what a chat stored is there for any other process to read."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from IPython.testing import globalipapp
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


def stored_texts(url: str, session_id: str) -> list[str]:
    """What another process reading `url` finds in the chat's session."""

    async def read() -> list[str]:
        service = open_session_service(url)
        try:
            session = await service.get(
                app_name="weather_bot", user_id="user", session_id=session_id
            )
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
        get_workspace(
            shell
        ).reset()  # what a kernel started with the variable set does at %load_ext
    start(shell)
    if how == "--use URL":
        run(shell, f"%adk sessions --use {url}")
    kind = "Postgres" if url.startswith("postgresql") else "Sqlite"
    assert (
        type(get_workspace(shell).session_service).__name__ == f"{kind}SessionService"
    )

    run(shell, "%%chat weather_bot --session s1 --state user_name=Ana\nHi")
    run(shell, "%%chat weather_bot --session s1\nAgain")
    table = run(shell, "%adk sessions")._repr_mimebundle_()["text/plain"]
    assert f"in {kind}SessionService" in table and "s1" in table
    assert stored_texts(url, "s1") == ["Hi", "one", "Again", "two"]


def test_a_url_that_names_no_store_is_one_clear_line(
    shell: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    start(shell)
    capsys.readouterr()
    assert not shell.run_cell("%adk sessions --use mysql://root:hunter2@db/x").success
    shown = capsys.readouterr()
    out = shown.out + shown.err
    assert "names no session service" in out and "postgresql://" in out
    assert "hunter2" not in out, "a password in a URL is never shown"
