"""Canary API keys must never surface: not in reprs, errors, logs, saved notebooks or their HTML.

The three provider keys are set to canary values in the environment. Then:
- repr()/str() of each provider model (built from the environment and with api_key=);
- every AdkError from a 401 whose body ECHOES the key back (as proxies and some providers
  do), streamed and not, directly and through the agent loop: str, repr, details, to_dict and
  the formatted traceback (with its chained causes);
- everything `logging` emitted at DEBUG during those runs (httpx and httpcore included);
- the saved .ipynb and the nbconvert HTML of every notebook executed on a real kernel
  whose environment holds the canary keys.
"""

from __future__ import annotations

import hashlib
import json
import logging
import traceback
from pathlib import Path
from typing import Any

import pytest

from loopback import LoopbackServer, Reply

from adk_notebook import AdkError, AnthropicModel, Content, GeminiModel, LlmAgent, LlmRequest, tool
from adk_notebook.models.http import RetryPolicy
from adk_notebook.models.openai import OpenAIModel

CANARIES = {
    "OPENAI_API_KEY": "sk-" + "canary-0123456789abcdefghij",
    "GOOGLE_API_KEY": "AIza" + "CANARY-0123456789abcdefghijklmnopq",
    "ANTHROPIC_API_KEY": "sk-ant-" + "canary-0123456789abcdefghij",
}
RETRY = RetryPolicy(max_retries=3, initial_delay=0.001, max_delay=0.01)
NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def leaks(text: str) -> list[str]:
    """The canaries (or their distinctive middle) found in `text`."""
    return [name for name, key in CANARIES.items() if key in text or key[4:-2] in text]


@pytest.fixture
def canary_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, key in CANARIES.items():
        monkeypatch.setenv(name, key)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def models(url: str | None) -> dict[str, Any]:
    """Each provider, its key taken from the environment."""
    if url is None:
        return {"openai": OpenAIModel("gpt-4o-mini"), "gemini": GeminiModel(), "anthropic": AnthropicModel()}
    return {
        "openai": OpenAIModel("gpt-4o-mini", base_url=url + "/v1", retry=RETRY),
        "gemini": GeminiModel(base_url=url, retry=RETRY),
        "anthropic": AnthropicModel(base_url=url, retry=RETRY),
    }


def echo_401(provider: str) -> Reply:
    """A 401 whose body repeats the key the request carried, in the provider's error shape."""
    if provider == "openai":
        key = CANARIES["OPENAI_API_KEY"]
        body: Any = {"error": {"message": f"Incorrect API key provided: {key}. Header was 'Bearer {key}'.",
                               "type": "invalid_request_error", "code": "invalid_api_key"}}
    elif provider == "gemini":
        key = CANARIES["GOOGLE_API_KEY"]
        body = [{"error": {"code": 401, "message": f"API key not valid: {key}", "status": "UNAUTHENTICATED",
                           "details": [{"reason": "API_KEY_INVALID", "metadata": {"key": key}}]}}]
    else:
        key = CANARIES["ANTHROPIC_API_KEY"]
        body = {"type": "error", "error": {"type": "authentication_error", "message": f"invalid x-api-key: {key}"}}
    return Reply(401, json.dumps(body))


def error_texts(error: AdkError) -> list[str]:
    return [
        str(error), repr(error), str(error.details), json.dumps(error.to_dict(), default=str),
        "".join(traceback.format_exception(error)),
    ]


@tool
def get_weather(city: str) -> dict:
    """Get the current weather for a city."""
    return {"city": city}


def test_model_reprs_never_show_the_keys(canary_env: None, tally: Any) -> None:
    for provider, model in models(None).items():
        with tally.case(f"secrets: {provider} repr/str"):
            for shown in (repr(model), str(model), repr(vars(model).get("_transport"))):
                assert leaks(shown) == [], f"{provider}: {shown}"
    for provider, model in {"openai": OpenAIModel("gpt-4o-mini", api_key=CANARIES["OPENAI_API_KEY"]),
                            "gemini": GeminiModel(api_key=CANARIES["GOOGLE_API_KEY"]),
                            "anthropic": AnthropicModel(api_key=CANARIES["ANTHROPIC_API_KEY"])}.items():
        with tally.case(f"secrets: {provider} repr/str (api_key=)"):
            assert leaks(repr(model)) == [] and leaks(str(model)) == []


@pytest.mark.parametrize("provider", ["openai", "gemini", "anthropic"])
async def test_401_echoing_the_key_is_scrubbed_everywhere(
    provider: str, canary_env: None, caplog: pytest.LogCaptureFixture, tally: Any
) -> None:
    caplog.set_level(logging.DEBUG)  # the root logger: adk_notebook, httpx and httpcore all propagate
    for name in ("httpx", "httpcore", "adk_notebook"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    try:
        errors: list[AdkError] = []
        with LoopbackServer([echo_401(provider) for _ in range(3)]) as server:
            model = models(server.url)[provider]
            request = LlmRequest(contents=[Content.user("Hi")])
            for stream in (False, True):
                with pytest.raises(AdkError) as info:
                    async for _ in model.generate_content(request, stream=stream):
                        pass
                errors.append(info.value)
            agent = LlmAgent(name="canary", model=model, tools=[get_weather])
            with pytest.raises(AdkError) as info:
                await agent.run_async("Hi")
            errors.append(info.value)
            sent = [r.headers for r in server.requests]
        with tally.case(f"secrets: {provider} 401 echoing the key"):
            assert len(sent) == 3  # a 401 is not retried
            assert any(leaks(json.dumps(h)) for h in sent)  # the key really went out (and came back)
            for error in errors:
                assert str(error.category.value) == "unauthorized", repr(error)
                for shown in error_texts(error):
                    assert leaks(shown) == [], shown
        with tally.case(f"secrets: {provider} DEBUG logs"):
            logged = caplog.text + "".join(str(r.__dict__) for r in caplog.records)
            assert caplog.records  # something was logged (httpx at least), so the check is not vacuous
            assert leaks(logged) == [], logged
    finally:
        for name in ("httpx", "httpcore", "adk_notebook"):
            logging.getLogger(name).setLevel(logging.NOTSET)


@pytest.mark.notebook
@pytest.mark.parametrize("name", sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")))
def test_executed_notebooks_never_show_the_keys(name: str, canary_env: None, tmp_path: Path, tally: Any) -> None:
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    # The kernel is started after canary_env, so its environment holds the canary keys; a probe
    # cell (removed before the checks) proves it by hash, without printing any key.
    hashes = {k: hashlib.sha256(v.encode()).hexdigest() for k, v in CANARIES.items()}
    probe = nbformat.v4.new_code_cell(
        f"import hashlib as _h, os as _os\nprint('CANARY-ENV', all(_h.sha256(_os.environ.get(k, '').encode()).hexdigest() == v "
        f"for k, v in {hashes!r}.items()))"
    )
    nb.cells.append(probe)
    # allow_errors: with the canary keys set, 'auto' picks a provider that cannot be reached from
    # here; what matters is that no error message, output or export shows a key.
    NotebookClient(nb, timeout=180, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    assert "CANARY-ENV True" in "".join(o.get("text", "") for o in nb.cells.pop().outputs)
    saved = tmp_path / name
    nbformat.write(nb, saved)
    html, _ = HTMLExporter().from_notebook_node(nb)
    with tally.case(f"secrets: notebook {name} outputs, .ipynb and HTML"):
        outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
        assert outputs  # it ran
        for output in outputs:
            assert leaks(json.dumps(output)) == [], output
        assert leaks(saved.read_text()) == []
        assert leaks(html) == []
