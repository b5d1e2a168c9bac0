"""Canary API keys must never surface: not in reprs, errors, logs, saved notebooks or their HTML.

The three provider keys are set to canary values in the environment. Then:
- repr()/str() of each provider model (built from the environment and with api_key=);
- every AdkError from a 401 whose body ECHOES the key back (as proxies and some providers
  do), streamed and not, directly and through the agent loop: str, repr, details, to_dict and
  the formatted traceback (with its chained causes);
- everything `logging` emitted at DEBUG during those runs (httpx and httpcore included);
- the saved .ipynb and the nbconvert HTML of every notebook executed on a real kernel
  whose environment holds the canary keys;
- errors a provider reports inside a 200 answer that echo the key: OpenAI's `error` chunk and
  body, Anthropic's `error` event (its type too), Gemini's `blockReasonMessage` and
  `blockReason`, and the excerpt of a chunk or body that is not JSON; and an answer whose text
  carries the key, cut in two across deltas. Each streamed and not, directly and through the
  agent loop (every event of the run, as stored), with the logs;
- the same for credentials that are not API keys: `extra_headers` values whose names say
  nothing (Cookie, X-Auth) and the user:password of a base_url;
- a notebook on a real kernel whose loopback server echoes the key in each of those places:
  the saved .ipynb (widget state included), its HTML, and the run's HTML and text transcripts.
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

from adk_notebook import (
    AdkError,
    AnthropicModel,
    Content,
    GeminiModel,
    InMemorySessionService,
    LlmAgent,
    LlmRequest,
    tool,
)
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
        body: Any = {
            "error": {
                "message": f"Incorrect API key provided: {key}. Header was 'Bearer {key}'.",
                "type": "invalid_request_error",
                "code": "invalid_api_key",
            }
        }
    elif provider == "gemini":
        key = CANARIES["GOOGLE_API_KEY"]
        body = [
            {
                "error": {
                    "code": 401,
                    "message": f"API key not valid: {key}",
                    "status": "UNAUTHENTICATED",
                    "details": [{"reason": "API_KEY_INVALID", "metadata": {"key": key}}],
                }
            }
        ]
    else:
        key = CANARIES["ANTHROPIC_API_KEY"]
        body = {"type": "error", "error": {"type": "authentication_error", "message": f"invalid x-api-key: {key}"}}
    return Reply(401, json.dumps(body))


def error_texts(error: AdkError) -> list[str]:
    return [
        str(error),
        repr(error),
        str(error.details),
        json.dumps(error.to_dict(), default=str),
        "".join(traceback.format_exception(error)),
    ]


@tool
def get_weather(city: str) -> dict:
    """Get the current weather for a city."""
    return {"city": city}


def test_model_reprs_never_show_the_keys(canary_env: None, tally: Any) -> None:
    for provider, model in models(None).items():
        with tally.case(f"secrets: {provider} repr/str"):
            for shown in (repr(model), str(model), repr(model.provider), repr(model.provider.transport)):
                assert leaks(shown) == [], f"{provider}: {shown}"
    for provider, model in {
        "openai": OpenAIModel("gpt-4o-mini", api_key=CANARIES["OPENAI_API_KEY"]),
        "gemini": GeminiModel(api_key=CANARIES["GOOGLE_API_KEY"]),
        "anthropic": AnthropicModel(api_key=CANARIES["ANTHROPIC_API_KEY"]),
    }.items():
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
    # Run in a folder of its own: what a notebook writes (08's eval-set files) stays out of notebooks/.
    workdir = tmp_path / "run"
    workdir.mkdir()
    NotebookClient(
        nb, timeout=180, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(workdir)}}
    ).execute()
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


# -- keys echoed inside 200 answers, and credentials that are not API keys --------------------------

COOKIE = "session=" + "cookie-CANARY-0123456789abcdef"
X_AUTH = "xauth-" + "CANARY-0123456789abcdef"
PASSWORD = "pw-" + "CANARY-0123456789abcdef"
OTHER_SECRETS = {"COOKIE": COOKIE, "X_AUTH": X_AUTH, "PASSWORD": PASSWORD}
SSE = {"Content-Type": "text/event-stream"}


def all_leaks(text: str) -> list[str]:
    found = leaks(text)
    found += [n for n, v in OTHER_SECRETS.items() if v in text or v.split("=")[-1][4:-2] in text]
    return found


def _sse(*events: tuple[str | None, Any]) -> Reply:
    chunks = [
        (f"event: {name}\n" if name else "") + f"data: {d if isinstance(d, str) else json.dumps(d)}\n\n"
        for name, d in events
    ]
    return Reply(200, chunks, headers=SSE)


def _split(secret: str) -> tuple[str, str]:
    return secret[: len(secret) // 2], secret[len(secret) // 2 :]


def echoes(provider: str, secret: str) -> dict[str, tuple[bool, Reply]]:
    """(streamed?, reply) per place a provider's 200 answer can carry `secret` back."""
    a, b = _split(secret)
    if provider == "openai":

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {
                "id": "c",
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }

        return {
            "error chunk": (
                True,
                _sse(
                    (None, chunk({"content": "Hel"})),
                    (None, {"error": {"message": f"upstream rejected key {secret}", "code": 502}}),
                ),
            ),
            "malformed chunk": (True, _sse((None, chunk({"content": "Hel"})), (None, "{not json " + secret))),
            "error body": (False, Reply(200, {"error": {"message": f"bad key {secret}", "code": 401}})),
            "malformed body": (False, Reply(200, "<html>proxy says " + secret + "</html>")),
            "answer text": (
                True,
                _sse(
                    (None, chunk({"content": "Your key is " + a})),
                    (None, chunk({"content": b + "."})),
                    (None, chunk({}, "stop")),
                    (None, "[DONE]"),
                ),
            ),
        }
    if provider == "anthropic":
        start = ("message_start", {"type": "message_start", "message": {"usage": {"input_tokens": 1}}})
        block = (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        )

        def delta(text: str) -> tuple[str, dict[str, Any]]:
            return (
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
            )

        return {
            "error event": (
                True,
                _sse(
                    start,
                    (
                        "error",
                        {"type": "error", "error": {"type": "overloaded_error", "message": f"key {secret} overloaded"}},
                    ),
                ),
            ),
            "error event type": (
                True,
                _sse(start, ("error", {"type": "error", "error": {"type": secret, "message": "x"}})),
            ),
            "malformed event": (True, _sse(start, ("content_block_delta", "{oops " + secret))),
            "malformed body": (False, Reply(200, "not json " + secret)),
            "answer text": (
                True,
                _sse(
                    start,
                    block,
                    delta("Your key is " + a),
                    delta(b + "."),
                    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
                    ("message_stop", {"type": "message_stop"}),
                ),
            ),
        }

    def answer(text: str, finish: str | None = None) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": text}]}}
        if finish:
            candidate["finishReason"] = finish
        return {"candidates": [candidate]}

    blocked = {"promptFeedback": {"blockReason": "OTHER", "blockReasonMessage": f"key {secret} is blocked"}}
    return {
        "blockReasonMessage": (True, _sse((None, blocked))),
        "blockReasonMessage of an answer": (False, Reply(200, blocked)),
        "blockReason": (False, Reply(200, {"promptFeedback": {"blockReason": secret}})),
        "malformed chunk": (True, _sse((None, answer("Hel")), (None, "{not json " + secret))),
        "malformed body": (False, Reply(200, "not json " + secret)),
        "answer text": (True, _sse((None, answer("Your key is " + a)), (None, answer(b + ".", "STOP")))),
    }


def _debug_logs() -> list[logging.Logger]:
    loggers = [logging.getLogger(name) for name in ("httpx", "httpcore", "adk_notebook")]
    for logger in loggers:
        logger.setLevel(logging.DEBUG)
    return loggers


async def _shown_by(model: Any, streamed: bool, error_expected: bool) -> list[str]:
    """Everything a run of `model` shows: each error's texts, or every event of an agent run (stored)."""
    shown: list[str] = []
    request = LlmRequest(contents=[Content.user("Hi")])
    try:
        async for response in model.generate_content(request, stream=streamed):
            shown.append(json.dumps(response.content.to_dict()) if response.content else "")
    except AdkError as error:
        shown += error_texts(error)
    else:
        assert not error_expected
    return shown


CONFIGURED = {"openai": "OPENAI_API_KEY", "gemini": "GOOGLE_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


@pytest.mark.parametrize("provider", ["openai", "gemini", "anthropic"])
async def test_keys_echoed_inside_200_answers_are_scrubbed(
    provider: str, canary_env: None, caplog: pytest.LogCaptureFixture, tally: Any
) -> None:
    caplog.set_level(logging.DEBUG)
    loggers = _debug_logs()
    try:
        for place, (streamed, reply) in echoes(provider, CANARIES[CONFIGURED[provider]]).items():
            with tally.case(f"secrets: {provider} key echoed in {place} ({'streamed' if streamed else 'body'})"):
                with LoopbackServer([reply, reply]) as server:
                    model = models(server.url)[provider]
                    shown = await _shown_by(model, streamed, error_expected=place != "answer text")
                    agent = LlmAgent(name="canary", model=model)
                    sessions = InMemorySessionService()
                    try:
                        result = await agent.run_async(
                            "Hi", session_service=sessions, session_id="s", streaming=streamed
                        )
                        shown += [json.dumps(e.to_dict(), default=str) for e in result.events]
                    except AdkError as error:
                        shown += error_texts(error)
                    session = await sessions.get(app_name="canary", user_id="user", session_id="s")
                    shown += [json.dumps(e.to_dict(), default=str) for e in session.events]
                    assert any(leaks(json.dumps(r.headers)) for r in server.requests)  # the key went out
                for text in shown:
                    assert leaks(text) == [], text
        with tally.case(f"secrets: {provider} DEBUG logs of echoed keys"):
            assert caplog.records and leaks(caplog.text + "".join(str(r.__dict__) for r in caplog.records)) == []
    finally:
        for logger in loggers:
            logger.setLevel(logging.NOTSET)


async def test_extra_headers_and_url_credentials_are_scrubbed(caplog: pytest.LogCaptureFixture, tally: Any) -> None:
    caplog.set_level(logging.DEBUG)
    loggers = _debug_logs()
    try:
        for secret_name, secret in OTHER_SECRETS.items():
            echoed = secret.split("=")[-1]  # a server may echo the cookie's value alone
            places = {
                "401 body": (False, Reply(401, {"error": {"message": f"rejected {echoed}"}})),
                **{k: v for k, v in echoes("openai", echoed).items() if k != "answer text"},
            }
            for place, (streamed, reply) in places.items():
                with tally.case(f"secrets: {secret_name} echoed in {place}"):
                    with LoopbackServer([reply]) as server:
                        host = server.url.removeprefix("http://")
                        model = OpenAIModel(
                            "gpt-4o-mini",
                            base_url=f"http://canary:{PASSWORD}@{host}/v1",
                            retry=RETRY,
                            provider_name="proxy",
                            api_key="sk-" + "other-0123456789abcdef",
                            extra_headers={"Cookie": COOKIE, "X-Auth": X_AUTH, "X-Title": "My App"},
                        )
                        shown = await _shown_by(model, streamed, error_expected=True)
                        shown += [repr(model)]
                        [request] = server.requests
                        assert request.headers["cookie"] == COOKIE and request.headers["x-auth"] == X_AUTH
                    for text in shown:
                        assert all_leaks(text) == [], text
        with tally.case("secrets: extra_headers and URL credentials in DEBUG logs"):
            assert all_leaks(caplog.text + "".join(str(r.__dict__) for r in caplog.records)) == []
    finally:
        for logger in loggers:
            logger.setLevel(logging.NOTSET)


@pytest.mark.notebook
def test_a_notebook_whose_server_echoes_the_key_everywhere(canary_env: None, tmp_path: Path, tally: Any) -> None:
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    script = [
        (provider, place, reply)
        for provider in ("openai", "gemini", "anthropic")
        for place, (streamed, reply) in echoes(provider, CANARIES[CONFIGURED[provider]]).items()
        if streamed
    ]
    with LoopbackServer([reply for _, _, reply in script]) as server:
        cells = [
            "%load_ext adk_notebook",
            (
                "from adk_notebook import AnthropicModel, GeminiModel\nfrom adk_notebook.models.openai import OpenAIModel\n"
                "from adk_notebook.models.http import RetryPolicy\nnever = RetryPolicy(max_retries=0)\n"
                f"openai_m = OpenAIModel('gpt-4o-mini', base_url={server.url + '/v1'!r}, retry=never)\n"
                f"gemini_m = GeminiModel(base_url={server.url!r}, retry=never)\n"
                f"anthropic_m = AnthropicModel(base_url={server.url!r}, retry=never)"
            ),
            *(f"%%agent {p}_bot --model {p}_m\nHelp." for p in ("openai", "gemini", "anthropic")),
            *(f"%%chat {provider}_bot\nTell me about {place}." for provider, place, _ in script),
            "print(repr(openai_m), repr(gemini_m), repr(anthropic_m))",
        ]
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
        NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True, store_widget_state=True).execute()
        assert len(server.requests) == len(script)
        assert all(leaks(json.dumps(r.headers)) for r in server.requests)  # the kernel sent the canary keys
    saved = tmp_path / "echo.ipynb"
    nbformat.write(nb, saved)
    html, _ = HTMLExporter().from_notebook_node(nb)
    chats = nb.cells[5 : 5 + len(script)]
    with tally.case("secrets: notebook whose server echoes the key (outputs, widget state, .ipynb, HTML)"):
        for (provider, place, _), cell in zip(script, chats, strict=True):
            shown = [o for o in cell.outputs if o.output_type == "display_data"]
            assert shown, f"{provider} {place}: the run showed nothing"
            transcripts = [o.data.get(kind, "") for o in shown for kind in ("text/html", "text/plain")]
            assert any(transcripts), f"{provider} {place}: no transcript"
            for output in cell.outputs:
                assert leaks(json.dumps(output)) == [], (provider, place, output)
        assert "widgets" in nb.metadata  # the widget state was saved, and is checked with the file
        assert leaks(saved.read_text()) == []
        assert leaks(html) == []
