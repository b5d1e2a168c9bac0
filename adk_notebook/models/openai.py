"""OpenAI Chat Completions, and every server that speaks it (Ollama, vLLM, llama.cpp, DeepSeek,
Groq, OpenRouter): each is a provider (providers.py) that owns the key, the base URL and the
HTTP client, and what it does its own way is data on its `OpenAIProfile`. The body builder
needs no key: `%adk request` shows any provider's body without one.

Our types in, the wire format out, and back:

- the system instruction becomes a ``system`` message; ``model`` turns become ``assistant``
  messages with ``tool_calls``; each function response becomes one ``tool`` message (its JSON
  as content). Images a tool returned follow in ONE ``user`` message naming the call, since a
  ``tool`` message carries text only (adk-rust drops them; we do not).
- streamed text deltas become partial `LlmResponse`s; tool-call deltas are assembled by
  index (ids from the first delta); usage comes from the last chunk; then one complete response.
- finish reasons are normalised: ``stop``, ``max_tokens`` (length), ``safety``
  (content_filter), ``tool_calls``; anything else is passed through.

Tool-call arguments that are not valid JSON: google-adk either crashes on the
`json.loads` (older) or logs and silently drops the call (newer); pydantic-ai keeps the raw
text and sends the validation error back to the model so it can try again. We do the latter,
which keeps the run going: the call keeps its id and name and its arguments become
``{INVALID_ARGUMENTS_KEY: "<what was wrong and the raw text>"}`` (`core.content.malformed_call`),
and the dispatcher answers it with that explanation. When the answer was cut off by the
token limit (finish reason ``length``) a retry cannot help, so that raises
``AdkError(model, invalid_input, "truncated_tool_call")`` saying to raise max_output_tokens.

`ThinkingConfig` becomes ``reasoning_effort`` (see `ThinkingConfig` for how a budget maps to
an effort); ``usage.completion_tokens_details.reasoning_tokens`` is the usage's thought tokens.
Chat Completions has no built-in tools of ours: one in a request is an error naming the model
that has it.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from ..core.content import Content, FunctionCall, Part, malformed_call
from ..core.errors import AdkError
from ..core.events import Usage
from ..core.json_text import parse_json
from ..tools.builtin import unsupported_builtin
from .base import Llm, LlmRequest, LlmResponse, ThinkingConfig
from .http import (
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_TIMEOUT,
    HttpTransport,
    RetryPolicy,
    _redact_url,
)
from .payload import Payload, excerpt
from .providers import OpenAICompatibleProvider, chosen_provider, openai_provider

if TYPE_CHECKING:
    import httpx

__all__ = ["OpenAIModel"]

_FINISH: dict[str | None, str | None] = {
    "stop": "stop",
    "length": "max_tokens",
    "content_filter": "safety",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
}
_ERROR_CATEGORY = {
    400: "invalid_input",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    408: "timeout",
    429: "rate_limited",
}
_AUDIO_FORMATS = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
}


class OpenAIModel(Llm):
    """A model behind the OpenAI Chat Completions API, at OpenAI or any server that speaks it.

    Args:
        model: The model id, e.g. "gpt-4o-mini", "llama3.2" (Ollama), "deepseek-chat".
        provider: Where requests go (`OpenAIProvider`, `DeepSeekProvider`, `OllamaProvider`,
            `OpenAICompatibleProvider(name, base_url=...)`, ...), or a provider's name
            ("deepseek", "ollama", ...); default OpenAI. Its profile says what the server does
            its own way. The options below build it when none is passed.
        api_key: The key; defaults to the provider's variable (OPENAI_API_KEY for OpenAI), read
            when a request is sent. Servers without keys (Ollama, llama.cpp) work with none.
            Never shown in reprs, logs or errors.
        base_url: The API root ending in "/v1"; for OpenAI it defaults to OPENAI_BASE_URL, else
            OpenAI's own.
        http_client: An `httpx.AsyncClient` to send requests with (you own it).
        provider_name: The same as `provider` given as a name: a known provider's, else a
            plain compatible server's name shown in messages (then base_url= is needed).
        extra_headers: Sent with every request (e.g. OpenRouter's "HTTP-Referer").
        retry: How 429/5xx/connection failures are retried.
        timeout: Seconds one call may take in all: connecting, sending, and reading the answer
            to its last streamed event, retries included (``deadline_exceeded`` past it).
        idle_timeout: Seconds to wait for the connection or for the next bytes of the answer;
            a stall before the answer starts is retried while `timeout` leaves time.

    Example:
        model = OpenAIModel("deepseek-chat", provider=DeepSeekProvider())
        model = OpenAIModel("llama3.2", provider=OllamaProvider(base_url="http://gpu-box:11434/v1"))
    """

    def __init__(
        self,
        model: str,
        *,
        provider: OpenAICompatibleProvider | str | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        http_client: httpx.AsyncClient | None = None,
        provider_name: str | None = None,
        extra_headers: dict[str, str] | None = None,
        retry: RetryPolicy | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
    ) -> None:
        self.name = model
        self.model = model
        if provider_name is not None:
            if provider is not None:
                raise AdkError.config(
                    "Pass OpenAIModel(provider=...) or provider_name=, not both.", code="conflicting_options"
                )
            provider = provider_name
        name = provider if isinstance(provider, str) else None
        self.provider = chosen_provider(
            "OpenAIModel",
            None if isinstance(provider, str) else provider,
            lambda **options: openai_provider(name, **options),
            api_key=api_key,
            base_url=base_url,
            headers=extra_headers,
            http_client=http_client,
            retry=retry,
            timeout=timeout,
            idle_timeout=idle_timeout,
        )

    @property
    def provider_name(self) -> str:
        """The provider's name ("openai", "deepseek", "ollama", ...)."""
        return self.provider.name

    @property
    def base_url(self) -> str:
        return self.provider.base_url

    def __repr__(self) -> str:
        return f"<OpenAIModel {self.model!r} provider={self.provider_name!r} base_url={_redact_url(self.base_url)!r}>"

    async def aclose(self) -> None:
        """Close the HTTP connections this model opened."""
        await self.provider.aclose()

    def generate_content(self, request: LlmRequest, stream: bool = False) -> AsyncIterator[LlmResponse]:
        # A plain method returning the generator that does the work: one async step less per chunk.
        # The provider checks the key here, at once, rather than at the first chunk.
        transport = self.provider.transport
        body = self.build_body(request, stream)
        return self._stream(transport, body) if stream else self._complete(transport, body)

    async def _complete(self, transport: HttpTransport, body: dict[str, Any]) -> AsyncIterator[LlmResponse]:
        yield self._parse_completion(transport.payload, await transport.post_json("/chat/completions", body))

    # -- request ------------------------------------------------------------------------------

    def build_body(self, request: LlmRequest, stream: bool = False) -> dict[str, Any]:
        """The JSON body for `request` (what `%adk request` shows for this provider); needs no key."""
        profile = self.provider.profile
        if request.builtin_tools:
            raise unsupported_builtin(request.builtin_tools[0], "OpenAIModel")
        messages: list[dict[str, Any]] = []
        if request.system_instruction:
            messages.append({"role": "system", "content": request.system_instruction})
        for content in request.contents:
            messages.extend(_to_messages(content))
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": d.name,
                        "description": d.description,
                        "parameters": d.parameters or {"type": "object", "properties": {}},
                    },
                }
                for d in request.tools
            ]
        config = request.config
        if config.tool_choice is not None and request.tools:
            body["tool_choice"] = (
                config.tool_choice
                if config.tool_choice in ("auto", "none", "required")
                else {"type": "function", "function": {"name": config.tool_choice}}
            )
        if config.temperature is not None:
            body["temperature"] = config.temperature
        if config.top_p is not None:
            body["top_p"] = config.top_p
        if config.top_k is not None and profile.top_k:
            body["top_k"] = config.top_k
        if config.max_output_tokens is not None:
            body[profile.max_tokens_field] = config.max_output_tokens
        if config.stop_sequences:
            body["stop"] = list(config.stop_sequences)
        effort = _reasoning_effort(config.thinking)
        if effort is not None:
            body["reasoning_effort"] = effort
        _add_response_format(body, config.response_schema, config.response_mime_type, profile.json_schema)
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    # -- response -----------------------------------------------------------------------------

    def _parse_completion(self, p: Payload, data: dict[str, Any]) -> LlmResponse:
        if data.get("error") is not None:
            raise self._stream_error(p, data["error"])
        choices = p.get_dicts(data, "choices")
        if not choices:
            raise self._no_choices(p)
        finish = p.get_str(choices[0], "finish_reason", "choices[0]")
        at = "choices[0].message"
        message = p.get_dict(choices[0], "message", "choices[0]")
        parts: list[Part] = []
        reasoning = p.get_str(message, "reasoning_content", at) or p.get_str(message, "reasoning", at)
        if reasoning:
            parts.append(Part(text=reasoning, thought=True))
        text: str | None
        if type(message.get("content")) is list:  # some servers answer with content parts
            items = p.get_dicts(message, "content", at)
            text = "".join(p.get_str(item, "text", f"{at}.content[{i}]") or "" for i, item in enumerate(items))
        else:
            text = p.get_str(message, "content", at)
        if text:
            parts.append(Part(text=text))
        refusal = p.get_str(message, "refusal", at)
        if refusal:
            parts.append(Part(text=refusal))
        for i, call in enumerate(p.get_dicts(message, "tool_calls", at)):
            where = f"{at}.tool_calls[{i}]"
            function = p.get_dict(call, "function", where)
            call_id, name = p.get_str(call, "id", where), p.get_str(function, "name", f"{where}.function") or ""
            arguments = _arguments(p, function, f"{where}.function")
            parts.append(
                Part(function_call=_function_call(p, call_id, name, arguments, finish, f"{where}.function.arguments"))
            )
        content = p.final(Content("model", parts))
        return LlmResponse(
            content, finish_reason=_FINISH.get(finish, finish), usage=_usage(p, p.get_dict(data, "usage"))
        )

    async def _stream(self, transport: HttpTransport, body: dict[str, Any]) -> AsyncIterator[LlmResponse]:
        """The per-chunk path: one JSON decode, a few dict lookups, one small response per text delta.

        Its fields are read without a `Payload` getter per field, which would cost more than
        the rest of the chunk's work. A container of the wrong type fails the lookup itself
        (no `.get`, no `[0]`), and `_diagnose` then reads that chunk again with the getters to
        name the field; a value that would pass silently (a text, a finish reason; a falsy
        container) is tested where it is read, the falsy ones only on their rare branch.
        """
        p = transport.payload
        texts: list[str] = []
        thoughts: list[str] = []
        calls: list[list[Any]] = []  # [id, name, [argument pieces], field]
        slot_of: dict[int, int] = {}  # the delta's index -> position in `calls`
        finish: str | None = None
        usage: dict[str, Any] | None = None
        done = answered = False
        loads, response, content, part = parse_json, LlmResponse, Content, Part  # locals: the loop runs per chunk
        batches = transport.stream_sse_batches("/chat/completions", body)
        chunk: Any = None
        try:
            async for batch in batches:
                try:
                    for _, data in batch:
                        if data == "[DONE]":
                            done = True
                            continue
                        try:
                            chunk = loads(data)
                        except ValueError as exc:
                            raise p.invalid("stream chunk", f"is not JSON ({exc}): {excerpt(data)}") from None
                        if type(chunk) is not dict:
                            raise p.wrong("stream chunk", chunk, dict)
                        choices = chunk.get("choices")
                        if choices:
                            answered = True
                            choice = choices[0]
                            delta = choice.get("delta")
                            if delta:
                                text = delta.get("content")
                                if text:
                                    if type(text) is not str:
                                        raise p.wrong("choices[0].delta.content", text, str)
                                    texts.append(text)
                                    yield response(content("model", [part(text)]), True, False)
                                elif text is not None and type(text) is not str:
                                    raise p.wrong("choices[0].delta.content", text, str)
                                if len(delta) > 1 or text is None:  # rarer fields: reasoning, refusal, tool calls
                                    reasoning = _delta_extras(p, delta, texts, calls, slot_of)
                                    if reasoning:
                                        thoughts.append(reasoning)
                                        yield LlmResponse(
                                            Content("model", [Part(reasoning, thought=True)]), True, False
                                        )
                            elif delta is not None and type(delta) is not dict:
                                raise p.wrong("choices[0].delta", delta, dict)
                            reason = choice.get("finish_reason")
                            if reason:
                                if type(reason) is not str:
                                    raise p.wrong("choices[0].finish_reason", reason, str)
                                finish = reason
                            elif reason is not None and type(reason) is not str:
                                raise p.wrong("choices[0].finish_reason", reason, str)
                        elif choices is not None and type(choices) is not list:
                            raise p.wrong("choices", choices, list)
                        elif chunk.get("error") is not None:
                            raise self._stream_error(p, chunk["error"])
                        if "usage" in chunk:
                            chunk_usage = chunk["usage"]
                            if chunk_usage is not None and type(chunk_usage) is not dict:
                                raise p.wrong("usage", chunk_usage, dict)
                            usage = chunk_usage or usage
                except (AttributeError, KeyError, IndexError, TypeError):
                    _diagnose(p, chunk)
                    raise  # not the payload's fault: a bug of ours, shown as one
        finally:
            await batches.aclose()
        if done and not answered:  # [DONE] after chunks with no choices: no answer at all
            raise self._no_choices(p)
        if not done and finish is None:
            raise p.error(
                "unavailable",
                "stream_interrupted",
                f"The {self.provider_name} stream ended before the answer was complete (no finish reason, "
                "no [DONE]). Run the request again.",
            )
        parts: list[Part] = []
        if thoughts:
            parts.append(Part(text="".join(thoughts), thought=True))
        if texts:
            parts.append(Part(text="".join(texts)))
        for call_id, name, pieces, where in calls:
            parts.append(Part(function_call=_function_call(p, call_id, name, "".join(pieces), finish, where)))
        answer = p.final(Content("model", parts))
        yield LlmResponse(answer, finish_reason=_FINISH.get(finish, finish), usage=_usage(p, usage or {}))

    def _no_choices(self, p: Payload) -> AdkError:
        return p.error("unavailable", "no_choices", f"{self.provider_name} answered without choices.")

    def _stream_error(self, p: Payload, error: Any) -> AdkError:
        """An error the server reported inside a 200 answer (OpenRouter does this mid-stream)."""
        if type(error) is str:
            error = {"message": error}
        error = p.object(error, "error")
        code = error.get("code")
        category = _ERROR_CATEGORY.get(code, "unavailable") if type(code) is int else "unavailable"
        message = (p.get_str(error, "message", "error") or "no message")[:500]
        return p.error(category, "provider_error", f"{self.provider_name} reported an error: {message}")


def _function_call(
    p: Payload, call_id: str | None, name: str, arguments: str | dict[str, Any] | None, finish: str | None, field: str
) -> FunctionCall:
    if isinstance(arguments, dict):  # a few servers send an object rather than JSON text
        return FunctionCall(name, p.checked_depth(arguments, field), call_id)
    if not arguments or not arguments.strip():
        return FunctionCall(name, {}, call_id)
    try:
        args = p.arguments(arguments, field)
    except ValueError as exc:
        if finish == "length":
            raise p.error(
                "invalid_input",
                "truncated_tool_call",
                f"The answer was cut off by the token limit in the middle of the arguments of tool {name!r}. "
                "Raise max_output_tokens (GenerateContentConfig) or ask for a shorter answer.",
            ) from None
        problem = f"not valid JSON ({exc})"
    else:
        if isinstance(args, dict):
            return FunctionCall(name, args, call_id)
        problem = f"a JSON {type(args).__name__}, not an object"
    return malformed_call(name, arguments, problem, call_id)


def _add_response_format(
    body: dict[str, Any], schema: dict[str, Any] | None, mime: str | None, json_schema: bool
) -> None:
    if schema is None and mime != "application/json":
        return
    hint = "Respond with JSON."
    if schema is not None and json_schema:
        name = "".join(c if c.isalnum() or c in "_-" else "_" for c in str(schema.get("title") or "response"))[:64]
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": name, "schema": schema, "strict": False},
        }
    else:
        # A server that knows only json_object (DeepSeek) gets the schema in the instruction.
        body["response_format"] = {"type": "json_object"}
        if schema is not None:
            hint = f"Respond with JSON matching this JSON schema: {json.dumps(schema)}"
    # OpenAI and DeepSeek reject json_object unless the word "json" appears in the messages.
    if (schema is not None and not json_schema) or not _mentions_json(body["messages"]):
        body["messages"].insert(0, {"role": "system", "content": hint})


def _diagnose(p: Payload, chunk: Any) -> None:
    """Raise the error naming the field of `chunk` that the fast path of `_stream` could not read."""
    choices = p.get_list(p.object(chunk, "stream chunk"), "choices")
    if choices:
        choice = p.object(choices[0], "choices[0]")
        p.get_dict(choice, "delta", "choices[0]")


def _arguments(p: Payload, function: dict[str, Any], at: str) -> str | dict[str, Any] | None:
    """A call's `arguments`: JSON text, or the object some servers send instead."""
    value = function.get("arguments")
    if value is None or type(value) is str or type(value) is dict:
        return value
    raise p.wrong(f"{at}.arguments", value, str)


def _delta_extras(
    p: Payload, delta: dict[str, Any], texts: list[str], calls: list[list[Any]], slot_of: dict[int, int]
) -> str | None:
    """The rarer fields of a delta: a refusal (joins the text), tool-call pieces; returns the reasoning text."""
    at = "choices[0].delta"
    refusal = p.get_str(delta, "refusal", at)
    if refusal:
        texts.append(refusal)
    for i, tool_delta in enumerate(p.get_dicts(delta, "tool_calls", at)):
        _add_tool_delta(p, tool_delta, f"{at}.tool_calls[{i}]", calls, slot_of)
    return p.get_str(delta, "reasoning_content", at) or p.get_str(delta, "reasoning", at)


def _add_tool_delta(
    p: Payload, delta: dict[str, Any], at: str, calls: list[list[Any]], slot_of: dict[int, int]
) -> None:
    index = p.get_int(delta, "index", at) or 0
    call_id = p.get_str(delta, "id", at)
    slot = slot_of.get(index)
    # A new id at a known index opens a new call (Ollama numbers parallel calls all 0).
    if slot is None or (call_id and calls[slot][0] and call_id != calls[slot][0]):
        slot = len(calls)
        slot_of[index] = slot
        calls.append([call_id, "", [], f"{at}.function.arguments"])
    entry = calls[slot]
    if call_id and not entry[0]:
        entry[0] = call_id
    function = p.get_dict(delta, "function", at)
    if function:
        name = p.get_str(function, "name", f"{at}.function")
        if name:
            entry[1] = name if not entry[1] or entry[1] == name else entry[1] + name
        arguments = _arguments(p, function, f"{at}.function")
        if arguments:
            entry[2].append(
                arguments if isinstance(arguments, str) else json.dumps(p.checked_depth(arguments, entry[3]))
            )


def _reasoning_effort(thinking: ThinkingConfig | None) -> str | None:
    """The effort for a thinking budget (documented on `ThinkingConfig`); None: the model's default."""
    if thinking is None or thinking.budget_tokens is None:
        return None
    budget = thinking.budget_tokens
    return "minimal" if budget == 0 else "low" if budget < 4096 else "medium" if budget < 16384 else "high"


def _usage(p: Payload, data: dict[str, Any]) -> Usage | None:
    if not data:
        return None
    prompt = p.get_int(data, "prompt_tokens", "usage") or 0
    completion = p.get_int(data, "completion_tokens", "usage") or 0
    details = p.get_dict(data, "completion_tokens_details", "usage")
    reasoning = p.get_int(details, "reasoning_tokens", "usage.completion_tokens_details") or 0
    return Usage(prompt, completion, p.get_int(data, "total_tokens", "usage") or prompt + completion, reasoning)


def _mentions_json(messages: list[dict[str, Any]]) -> bool:
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            if "json" in content.lower():
                return True
        elif isinstance(content, list):
            if any("json" in str(p.get("text", "")).lower() for p in content):
                return True
    return False


def _to_messages(content: Content) -> list[dict[str, Any]]:
    """One of our turns as Chat Completions messages."""
    if content.role == "model":
        return [_assistant_message(content)] if content.parts else []
    messages: list[dict[str, Any]] = []
    user_parts: list[dict[str, Any]] = []
    media: list[dict[str, Any]] = []
    for part in content.parts:
        response = part.function_response
        if response is not None:
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": response.id or f"call_{response.name}",
                    "content": json.dumps(response.response),
                }
            )
            images = [_media_part(p) for p in response.parts if p.is_media()]
            if images:
                media.append({"type": "text", "text": f"Images returned by tool {response.name} (call {response.id}):"})
                media.extend(images)
        elif part.text is not None:
            if not part.thought:
                user_parts.append({"type": "text", "text": part.text})
        elif part.is_media():
            user_parts.append(_media_part(part))
    # Tool messages must directly follow the assistant's tool calls; what the tools returned as
    # images (and any user text of the same turn) comes after them in one user message.
    user_parts = media + user_parts
    if user_parts:
        if all(p["type"] == "text" for p in user_parts) and len(user_parts) == 1:
            messages.append({"role": "user", "content": user_parts[0]["text"]})
        else:
            messages.append({"role": "user", "content": user_parts})
    return messages


def _assistant_message(content: Content) -> dict[str, Any]:
    text = "".join(p.text for p in content.parts if p.text is not None and not p.thought)
    # "" rather than null for a message that only calls tools: OpenAI takes both, and some
    # compatible servers (llama.cpp's) fail on null.
    message: dict[str, Any] = {"role": "assistant", "content": text}
    calls = [p.function_call for p in content.parts if p.function_call is not None]
    if calls:
        message["tool_calls"] = [
            {
                "id": c.id or f"call_{c.name}",
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.args)},
            }
            for c in calls
        ]
    return message


def _media_part(part: Part) -> dict[str, Any]:
    mime = part.mime_type or "application/octet-stream"
    if part.inline_data is not None:
        data = part.inline_data.data
        if mime.startswith("image/"):
            return {
                "type": "image_url",
                "image_url": {"url": f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"},
            }
        if mime in _AUDIO_FORMATS:
            return {
                "type": "input_audio",
                "input_audio": {"data": base64.b64encode(data).decode("ascii"), "format": _AUDIO_FORMATS[mime]},
            }
        if mime == "application/pdf":
            encoded = base64.b64encode(data).decode("ascii")
            return {"type": "file", "file": {"filename": "document.pdf", "file_data": f"data:{mime};base64,{encoded}"}}
        if mime.startswith("text/") or mime == "application/json":
            return {"type": "text", "text": data.decode("utf-8", "replace")}
        raise AdkError.model(
            f"Chat Completions cannot carry inline {mime} data; send images, wav/mp3 audio, PDF or text.",
            code="unsupported_media",
            category="unsupported",
        )
    uri = part.file_uri or ""
    if mime.startswith("image/"):
        return {"type": "image_url", "image_url": {"url": uri}}
    # Chat Completions cannot fetch other files by URI: tell the model where the file is.
    return {"type": "text", "text": f"[{mime} file: {uri}]"}
