"""`%adk request` shows a provider's wire format without its key and without a placeholder key:
the body builder needs none, the key is only needed to send."""

from __future__ import annotations

from typing import Any

import pytest
from test_magics import WEATHER_TOOL, ip, run, shell  # noqa: F401 - fixtures

SECRET = "sk-" + "REQUEST-VIEW-SECRET-42"


def test_a_model_string_without_its_key_shows_its_own_provider(
    shell: Any,  # noqa: F811 - the fixture
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    run(shell, WEATHER_TOOL)
    run(
        shell,
        "%%agent desk --model deepseek:deepseek-chat --tools get_weather\nYou help with the weather.",
    )
    text = run(shell, '%adk request desk --message "And in Lima?"')._repr_mimebundle_()["text/plain"]
    assert "As OpenAIModel sends it (deepseek:deepseek-chat)" in text
    assert '"model": "deepseek-chat"' in text
    assert '"type": "function"' in text and "Gemini body" not in text
    assert "not sent" not in text and "could not be built" not in text


def test_the_key_of_a_model_never_shows_in_the_request(
    shell: Any,  # noqa: F811 - the fixture
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GROQ_API_KEY", SECRET)
    run(shell, WEATHER_TOOL)
    run(
        shell,
        "%%agent fast --model groq:llama-3.3-70b --tools get_weather\nYou help with the weather.",
    )
    shown = run(shell, '%adk request fast --message "Lima?"')._repr_mimebundle_()
    assert "As OpenAIModel sends it" in shown["text/plain"]
    assert SECRET not in shown["text/plain"] and SECRET not in shown["text/html"]
    every = run(shell, '%adk request fast --provider all --message "Lima?"')._repr_mimebundle_()["text/plain"]
    for label in (
        "OpenAI Chat Completions body",
        "Gemini body",
        "Anthropic Messages body",
    ):
        assert label in every
    assert "could not be built" not in every and SECRET not in every
