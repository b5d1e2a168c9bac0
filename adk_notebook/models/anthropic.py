"""Claude through Anthropic's Messages API, over plain HTTP.

```
POST {base_url}/v1/messages          (`"stream": true` for server-sent events)
headers x-api-key: <key>, anthropic-version: 2023-06-01
```
The system instruction is the top-level `system`; our `model` role is `assistant`, and our
`tool` role is a `user` message of `tool_result` blocks (the result as JSON text, followed by
any image or PDF the tool returned, inside the block's `content` list). Messages must
alternate, so consecutive messages of one role are merged. `max_tokens` is required and
always sent.

Output schemas use Anthropic's structured outputs (`output_config.format`, a `json_schema`),
generally available since Claude Sonnet 4.5 / Opus 4.5 / Haiku 4.5. It constrains the final
text to the schema and, unlike a forced tool call, leaves the agent's tools usable in the
same request. The schema is narrowed to what that feature accepts: every object closed with
`additionalProperties: false`, numeric/length bounds moved into the description (the agent
still validates the answer against the full schema).

Provider-native features: `ThinkingConfig` becomes `thinking` (`{type: "enabled",
budget_tokens}`, or `{type: "adaptive"}` without a budget; `max_tokens` then leaves the answer
its own room above the budget). `thinking` and `redacted_thinking` blocks become thought parts
whose `signature` (a redacted block's `data`) rides on `Part.thought_signature` and goes back
unchanged on the next turn, as the API requires when the turn used tools. `WebSearch()` is the
`web_search_20250305` server tool; its `server_tool_use` and `web_search_tool_result` blocks and
the `citations` of text blocks become the response's `Grounding` (they are not sent back: the
answer's text is).

A turn whose server tools run long ends with `stop_reason: "pause_turn"`: the model sends the
paused answer's blocks back unchanged, as the last assistant message, and the API goes on with
the turn; the parts of every stretch make one answer. After `MAX_CONTINUATIONS` the answer is
returned as it stands, its finish reason "pause_turn".
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from ..core.content import Content, FunctionCall, Part, malformed_call
from ..core.errors import AdkError, ErrorCategory
from ..core.events import Usage
from ..tools.base import FunctionDeclaration
from ..tools.builtin import (
    BuiltinTool,
    Citation,
    Grounding,
    WebSearch,
    unsupported_builtin,
)
from ..tools.dialects import anthropic_output_schema
from .base import GenerateContentConfig, Llm, LlmRequest, LlmResponse
from .http import DEFAULT_IDLE_TIMEOUT, DEFAULT_TIMEOUT, HttpTransport, RetryPolicy
from .payload import Payload
from .providers import AnthropicProvider, chosen_provider

if TYPE_CHECKING:
    import httpx

__all__ = ["AnthropicModel"]

MAX_CONTINUATIONS = 8  # requests that go on with a paused turn, after the first

_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
# Stop reasons in the vocabulary all providers share (see openai.py); others pass through.
_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
    "refusal": "safety",
}
_ERROR_CATEGORIES = {
    "invalid_request_error": ErrorCategory.INVALID_INPUT,
    "request_too_large": ErrorCategory.INVALID_INPUT,
    "authentication_error": ErrorCategory.UNAUTHORIZED,
    "permission_error": ErrorCategory.FORBIDDEN,
    "billing_error": ErrorCategory.FORBIDDEN,
    "not_found_error": ErrorCategory.NOT_FOUND,
    "rate_limit_error": ErrorCategory.RATE_LIMITED,
    "timeout_error": ErrorCategory.TIMEOUT,
    "overloaded_error": ErrorCategory.UNAVAILABLE,
    "api_error": ErrorCategory.UNAVAILABLE,
}


class AnthropicModel(Llm):
    """A Claude model, e.g. `AnthropicModel("claude-sonnet-4-6")`.

    Args:
        model: The model id ("claude-sonnet-4-6", "claude-opus-4-7", "claude-haiku-4-5", ...).
        provider: An `AnthropicProvider` to send with; the options below (but max_tokens) build
            one when none is passed. (A provider passed in is asked for its key only when a
            request is sent.)
        api_key: The API key; defaults to $ANTHROPIC_API_KEY. Sent in the `x-api-key` header and
            never shown.
        base_url: The API root, default "https://api.anthropic.com".
        http_client: An `httpx.AsyncClient` to send requests with (you close it).
        max_tokens: The answer's token limit when the request sets no `max_output_tokens`
            (Anthropic requires one).
        retry: How 429s, 5xx and dropped connections are retried.
        timeout: Seconds one call may take in all: connecting, sending, and reading the answer
            to its last streamed event, retries included (``deadline_exceeded`` past it).
        idle_timeout: Seconds to wait for the connection or for the next bytes of the answer;
            a stall before the answer starts is retried while `timeout` leaves time.

    Raises:
        AdkError: (config, unauthorized, ``missing_api_key``) when no provider, no key is given
            and none is set.
    """

    def __init__(
        self,
        model: str = "claude-sonnet-4-6",
        *,
        provider: AnthropicProvider | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        http_client: httpx.AsyncClient | None = None,
        max_tokens: int = 4096,
        retry: RetryPolicy | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
    ) -> None:
        self.name = model
        self.max_tokens = max_tokens
        self.provider = chosen_provider(
            "AnthropicModel",
            provider,
            AnthropicProvider,
            api_key=api_key,
            base_url=base_url,
            http_client=http_client,
            retry=retry,
            timeout=timeout,
            idle_timeout=idle_timeout,
        )
        if provider is None:
            self.provider.check_key()  # say at once which variable to set, not at the first request

    async def generate_content(self, request: LlmRequest, stream: bool = False) -> AsyncIterator[LlmResponse]:
        transport = self.provider.transport
        body = self.build_body(request, stream)
        message = _Message(transport.payload)
        asked = body["messages"]
        for continuation in range(MAX_CONTINUATIONS + 1):
            if continuation:  # a paused turn: its blocks so far go back as they came, and the API goes on
                body = {**body, "messages": [*asked, {"role": "assistant", "content": message.sent_back()}]}
                message.next_stretch()
            if stream:
                async with aclosing(_stream_into(message, transport, body)) as partials:
                    async for partial in partials:
                        yield partial
            else:
                message.add_message(await transport.post_json("/v1/messages", body))
            if message.stop_reason != "pause_turn":
                break
        yield message.finish()

    def build_body(self, request: LlmRequest, stream: bool = False) -> dict[str, Any]:
        """The JSON body sent for `request`: what Claude receives, e.g. for `%adk request`; needs no key."""
        config = request.config
        thinking = _thinking(config)
        budget = thinking.get("budget_tokens", 0)
        body: dict[str, Any] = {
            "model": self.name,
            "max_tokens": config.max_output_tokens or self.max_tokens + budget,
            "messages": _messages(request.contents),
        }
        if request.system_instruction:
            body["system"] = request.system_instruction
        tools = [_tool(d) for d in request.tools] + [_server_tool(t) for t in request.builtin_tools]
        if tools:
            body["tools"] = tools
        if thinking:
            body["thinking"] = thinking
        if tools and config.tool_choice is not None:
            body["tool_choice"] = {"auto": {"type": "auto"}, "none": {"type": "none"}, "required": {"type": "any"}}.get(
                config.tool_choice, {"type": "tool", "name": config.tool_choice}
            )
        body.update(_sampling(config))
        if stream:
            body["stream"] = True
        if config.response_schema is not None:
            schema = anthropic_output_schema(config.response_schema)
            body["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
        return body

    async def aclose(self) -> None:
        """Close the HTTP connections this model opened."""
        await self.provider.aclose()


# -- our contents -> Anthropic's messages --------------------------------------------------------
def _messages(contents: list[Content]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for content in contents:
        role = "assistant" if content.role == "model" else "user"
        blocks = [block for part in content.parts for block in _blocks(part)]
        if not blocks:
            continue
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)  # the API requires alternating roles
        else:
            messages.append({"role": role, "content": blocks})
    for message in messages:
        # In a user message, tool results must come before anything else.
        message["content"].sort(key=lambda block: block["type"] != "tool_result")
    return messages


def _blocks(part: Part) -> list[dict[str, Any]]:
    if part.thought:  # only Claude's own thoughts go back (signed), exactly as they came
        if part.thought_signature is None:
            return []
        if part.text is None:
            return [{"type": "redacted_thinking", "data": part.thought_signature}]
        return [{"type": "thinking", "thinking": part.text, "signature": part.thought_signature}]
    if part.text is not None:
        return [{"type": "text", "text": part.text}] if part.text else []
    if part.function_call is not None:
        call = part.function_call
        return [{"type": "tool_use", "id": call.id or f"call_{call.name}", "name": call.name, "input": call.args}]
    if part.function_response is not None:
        resp = part.function_response
        content = [{"type": "text", "text": json.dumps(resp.response, ensure_ascii=False)}]
        content += [_media(p) for p in resp.parts if p.is_media()]
        call_id = resp.id or f"call_{resp.name}"
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": content}
        if "error" in resp.response:
            block["is_error"] = True
        return [block]
    if part.is_media():
        return [_media(part)]
    return []


def _media(part: Part) -> dict[str, Any]:
    """An image, a PDF or plain text as a content block; anything else as a note saying so."""
    mime = (part.mime_type or "").split(";")[0].strip().lower()
    if part.inline_data is not None:
        data = base64.b64encode(part.inline_data.data).decode("ascii")
        if mime in _IMAGE_TYPES:
            return {"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}}
        if mime == "application/pdf":
            return {"type": "document", "source": {"type": "base64", "media_type": mime, "data": data}}
        if mime == "text/plain":
            text = part.inline_data.data.decode("utf-8", "replace")
            return {"type": "document", "source": {"type": "text", "media_type": mime, "data": text}}
        return _note(
            f"[{mime or 'binary'} data of {len(part.inline_data.data)} bytes omitted: Claude accepts images "
            "(JPEG, PNG, GIF, WebP), PDFs and plain text]"
        )
    uri = part.file_uri or ""
    if uri.startswith(("https://", "http://")):
        if mime in _IMAGE_TYPES or (not mime and uri.lower().endswith((".png", ".jpg", ".jpeg", ".gif", ".webp"))):
            return {"type": "image", "source": {"type": "url", "url": uri}}
        if mime == "application/pdf":
            return {"type": "document", "source": {"type": "url", "url": uri}}
    return _note(f"[file {uri} ({mime or 'unknown type'}): not readable by Claude from here]")


def _note(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _tool(decl: FunctionDeclaration) -> dict[str, Any]:
    tool: dict[str, Any] = {"name": decl.name}
    if decl.description:
        tool["description"] = decl.description
    tool["input_schema"] = decl.parameters or {"type": "object", "properties": {}}
    return tool


def _server_tool(tool: BuiltinTool) -> dict[str, Any]:
    if not isinstance(tool, WebSearch):
        raise unsupported_builtin(tool, "AnthropicModel")
    wire: dict[str, Any] = {"type": "web_search_20250305", "name": "web_search"}
    if tool.max_uses is not None:
        wire["max_uses"] = tool.max_uses
    if tool.allowed_domains:
        wire["allowed_domains"] = list(tool.allowed_domains)
    if tool.blocked_domains:
        wire["blocked_domains"] = list(tool.blocked_domains)
    return wire


def _thinking(config: GenerateContentConfig) -> dict[str, Any]:
    """The `thinking` field for `config.thinking` ({} for none), checked against what the API accepts."""
    if config.thinking is None or config.thinking.budget_tokens == 0:
        return {}
    if config.tool_choice not in (None, "auto", "none"):
        raise AdkError.config(
            f"Claude cannot think and be forced to call a tool (tool_choice={config.tool_choice!r}): use "
            "tool_choice 'auto' or 'none', or turn thinking off (ThinkingConfig(budget_tokens=0)).",
            code="thinking_with_forced_tool",
        )
    if (config.temperature not in (None, 1)) or config.top_k is not None:
        raise AdkError.config(
            "Claude's thinking works only with the default sampling: leave temperature (or set it to 1) and top_k "
            "unset, or turn thinking off (ThinkingConfig(budget_tokens=0)).",
            code="thinking_with_sampling",
        )
    budget = config.thinking.budget_tokens
    if budget is None:
        return {"type": "adaptive"}
    if budget < 1024:
        raise AdkError.config(
            f"Claude's thinking budget must be at least 1024 tokens, got {budget}.", code="invalid_thinking_budget"
        )
    if config.max_output_tokens is not None and config.max_output_tokens <= budget:
        raise AdkError.config(
            f"max_output_tokens ({config.max_output_tokens}) must be above the thinking budget ({budget}): "
            "Claude's thinking counts against it. Raise max_output_tokens or lower budget_tokens.",
            code="invalid_thinking_budget",
        )
    return {"type": "enabled", "budget_tokens": budget}


def _sampling(config: GenerateContentConfig) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for ours, theirs in (("temperature", "temperature"), ("top_p", "top_p"), ("top_k", "top_k"),
                         ("stop_sequences", "stop_sequences")):  # fmt: skip
        value = getattr(config, ours)
        if value is not None:
            out[theirs] = value
    return out


# -- Anthropic's answer -> ours ------------------------------------------------------------------
async def _stream_into(
    message: _Message, transport: HttpTransport, body: dict[str, Any]
) -> AsyncGenerator[LlmResponse, None]:
    """One streamed request read into `message`; the text it adds, as partial responses."""
    payload = transport.payload
    events = transport.stream_sse("/v1/messages", body)
    async with aclosing(events):
        async for event in events:
            part = message.add_event(payload.loads(event.data, "stream chunk"))
            if part is not None:
                yield LlmResponse(Content("model", [part]), partial=True, turn_complete=False)
            if message.stopped:
                break
    if not message.stopped:
        raise payload.error(
            "unavailable", "stream_interrupted",
            "The Anthropic stream ended before message_stop; the answer is incomplete. Run the request again.",
        )  # fmt: skip


class _Message:
    """Collects one answer from a message, or from the events of a streamed one, read through `Payload`.

    A paused turn's answer comes in stretches, one a request: `next_stretch` numbers the next
    one's blocks after those so far and keeps the usage spent.
    """

    __slots__ = ("base", "blocks", "input_tokens", "output_tokens", "payload", "spent", "stop_reason", "stopped")

    def __init__(self, payload: Payload) -> None:
        self.payload = payload
        self.blocks: dict[int, dict[str, Any]] = {}  # index -> {"type", "raw", "text" | "json" | "id", ...}
        self.base = 0  # the first block index of this stretch
        self.spent = (0, 0)  # input and output tokens of the stretches before this one
        self.stop_reason: str | None = None
        self.input_tokens = 0
        self.output_tokens = 0
        self.stopped = False

    def next_stretch(self) -> None:
        """Get ready for the answer's next stretch, the response to a continuation."""
        self.base = len(self.blocks)
        self.spent = (self.spent[0] + self.input_tokens, self.spent[1] + self.output_tokens)
        self.input_tokens = self.output_tokens = 0
        self.stop_reason = None
        self.stopped = False

    def sent_back(self) -> list[dict[str, Any]]:
        """The answer so far as the API gave it, each block with its streamed deltas put back in."""
        sent = []
        for _, block in sorted(self.blocks.items()):
            raw, kind = dict(block["raw"]), block["type"]
            if kind in ("text", "thinking"):
                raw[kind] = "".join(block["text"])
                if not raw[kind] and kind == "text":
                    continue  # the API refuses an empty text block
            if kind == "text" and block["citations"]:
                raw["citations"] = block["citations"]
            elif kind == "thinking":
                raw["signature"] = block["signature"]
            elif kind in ("tool_use", "server_tool_use"):
                raw["input"] = _input(self.payload, block, self.stop_reason).args
            sent.append(raw)
        return sent

    def add_message(self, message: dict[str, Any]) -> None:
        """Take a complete (non-streamed) message in."""
        p = self.payload
        for index, block in enumerate(p.get_dicts(message, "content")):
            self.blocks[self.base + index] = started = _start(p, block, index, f"content[{index}]")
            if started["type"] in ("tool_use", "server_tool_use"):
                started["input"] = p.checked_depth(p.get_dict(block, "input", f"content[{index}]"), started["field"])
        self._usage(p.get_dict(message, "usage"), "usage")
        self.stop_reason = p.get_str(message, "stop_reason")
        self.stopped = True

    def add_event(self, event: Any) -> Part | None:
        """Take one streamed event in; return the text it adds (answer or thought) as a new part."""
        p = self.payload
        event = p.object(event, "stream chunk")
        kind = p.get_str(event, "type")
        if kind == "content_block_delta":
            delta = p.get_dict(event, "delta")
            index = p.get_int(event, "index")
            block = self.blocks.get(-1 if index is None else self.base + index)
            if block is None:
                raise p.invalid("index", "names a content block that was never started")
            delta_kind = p.get_str(delta, "type", "delta")
            if delta_kind == "text_delta" and block["type"] == "text":
                text = p.get_str(delta, "text", "delta") or ""
                block["text"].append(text)
                return Part(text=text) if text else None
            if delta_kind == "input_json_delta" and block["type"] in ("tool_use", "server_tool_use"):
                block["json"].append(p.get_str(delta, "partial_json", "delta") or "")
            elif delta_kind == "thinking_delta" and block["type"] == "thinking":
                text = p.get_str(delta, "thinking", "delta") or ""
                block["text"].append(text)
                return Part(text=text, thought=True) if text else None
            elif delta_kind == "signature_delta" and block["type"] == "thinking":
                block["signature"] += p.get_str(delta, "signature", "delta") or ""
            elif delta_kind == "citations_delta" and block["type"] == "text":
                block["citations"].append(p.get_dict(delta, "citation", "delta"))
            elif delta_kind in ("text_delta", "input_json_delta", "thinking_delta", "signature_delta"):
                raise p.invalid("delta.type", f"is {delta_kind!r}, but block {index} is a {block['type']} block")
            return None
        if kind == "content_block_start":
            index = p.get_int(event, "index")
            index = len(self.blocks) if index is None else self.base + index
            block = self.blocks[index] = _start(p, p.get_dict(event, "content_block"), index, "content_block")
            text = "".join(block.get("text", ()))
            return Part(text=text, thought=block["type"] == "thinking") if text else None
        if kind == "message_start":
            self._usage(p.get_dict(p.get_dict(event, "message"), "usage", "message"), "message.usage")
        elif kind == "message_delta":
            self.stop_reason = p.get_str(p.get_dict(event, "delta"), "stop_reason", "delta") or self.stop_reason
            self._usage(p.get_dict(event, "usage"), "usage")
        elif kind == "message_stop":
            self.stopped = True
        elif kind == "error":
            raise _stream_error(p, p.get_dict(event, "error"))
        return None  # ping, content_block_stop, and event types added later

    def finish(self) -> LlmResponse:
        parts: list[Part] = []
        grounding = Grounding()
        for _, block in sorted(self.blocks.items()):
            kind = block["type"]
            if kind == "text":
                text = "".join(block["text"])
                if text:
                    parts.append(Part(text=text))
                    _cite(self.payload, grounding, text, block["citations"])
            elif kind == "thinking":
                parts.append(
                    Part(text="".join(block["text"]), thought=True, thought_signature=block["signature"] or None)
                )
            elif kind == "redacted_thinking":
                parts.append(Part(thought=True, thought_signature=block["data"]))
            elif kind == "tool_use":
                call = _input(self.payload, block, self.stop_reason)
                parts.append(Part(function_call=call))
            elif kind == "server_tool_use":
                query = _input(self.payload, block, self.stop_reason).args.get("query")
                if isinstance(query, str) and query:
                    grounding.queries.append(query)
            elif kind == "web_search_tool_result":
                for result in block["results"]:
                    grounding.source_index(result["url"], result["title"])
        if not parts and self.stop_reason == "refusal":
            raise self.payload.error(
                "forbidden",
                "safety_blocked",
                "Claude declined to answer (stop_reason refusal). Rephrase the request; retrying the same one "
                "will be refused again.",
                stop_reason="refusal",
            )
        reason = _STOP_REASONS.get(self.stop_reason or "", self.stop_reason)
        spent_in, spent_out = self.spent[0] + self.input_tokens, self.spent[1] + self.output_tokens
        usage = Usage(spent_in, spent_out, spent_in + spent_out)
        return LlmResponse(
            self.payload.final(Content("model", parts)), finish_reason=reason, usage=usage, grounding=grounding or None
        )

    def _usage(self, usage: dict[str, Any], at: str) -> None:
        """Counts are cumulative: a later event's count replaces an earlier one."""
        if not usage:
            return
        p = self.payload
        prompt = [
            p.get_int(usage, k, at) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        ]
        if any(n is not None for n in prompt):
            self.input_tokens = sum(n or 0 for n in prompt)
        output = p.get_int(usage, "output_tokens", at)
        if output is not None:
            self.output_tokens = output


def _start(p: Payload, block: dict[str, Any], index: int, at: str) -> dict[str, Any]:
    """What a block's start gives, read; under "raw", the block itself (a paused turn sends it back)."""
    return {**_read_start(p, block, index, at), "raw": block}


def _read_start(p: Payload, block: dict[str, Any], index: int, at: str) -> dict[str, Any]:
    kind = p.get_str(block, "type", at) or ""
    if kind == "text":
        return {
            "type": "text",
            "text": [p.get_str(block, "text", at) or ""],
            "citations": p.get_dicts(block, "citations", at),
        }
    if kind in ("tool_use", "server_tool_use"):
        return {
            "type": kind,
            "id": p.get_str(block, "id", at) or "",
            "name": p.get_str(block, "name", at) or "",
            "json": [],
            "field": f"content[{index}].input",
        }
    if kind == "thinking":
        return {
            "type": kind,
            "text": [p.get_str(block, "thinking", at) or ""],
            "signature": p.get_str(block, "signature", at) or "",
        }
    if kind == "redacted_thinking":
        return {"type": kind, "data": p.get_str(block, "data", at) or ""}
    if kind == "web_search_tool_result":
        return {"type": kind, "results": _search_results(p, block, at)}
    return {"type": kind}  # block types added later: kept out of the answer


def _search_results(p: Payload, block: dict[str, Any], at: str) -> list[dict[str, str]]:
    """The pages of a web_search_tool_result; none for a search that failed (its content is an error object)."""
    if not isinstance(block.get("content"), list):
        return []
    results = []
    for i, item in enumerate(p.get_dicts(block, "content", at)):
        where = f"{at}.content[{i}]"
        url = p.get_str(item, "url", where)
        if p.get_str(item, "type", where) == "web_search_result" and url:
            results.append({"url": url, "title": p.get_str(item, "title", where) or ""})
    return results


def _cite(p: Payload, grounding: Grounding, text: str, citations: list[dict[str, Any]]) -> None:
    """A text block's web citations: the block's text, supported by the pages it cites."""
    sources = []
    for i, citation in enumerate(citations):
        url = p.get_str(citation, "url", f"citations[{i}]")
        if p.get_str(citation, "type", f"citations[{i}]") == "web_search_result_location" and url:
            index = grounding.source_index(url, p.get_str(citation, "title", f"citations[{i}]") or "")
            if index not in sources:
                sources.append(index)
    if sources:
        grounding.citations.append(Citation(text, sources))


def _input(p: Payload, block: dict[str, Any], stop_reason: str | None) -> FunctionCall:
    """The tool call a tool_use block adds up to (see `core.content.malformed_call`)."""
    name, call_id = block["name"], block.get("id") or None
    if "input" in block:
        return FunctionCall(name, block["input"], call_id)
    raw = "".join(block["json"]).strip()
    if not raw:
        return FunctionCall(name, {}, call_id)
    try:
        value = p.arguments(raw, block["field"])
    except ValueError as exc:
        if stop_reason == "max_tokens":
            raise p.error(
                "invalid_input",
                "truncated_tool_call",
                f"Claude's call of {name!r} was cut off by the token limit; raise max_tokens "
                "(AnthropicModel(max_tokens=...) or max_output_tokens).",
            ) from None
        return malformed_call(name, raw, f"not valid JSON ({exc})", call_id)
    if not isinstance(value, dict):
        return malformed_call(name, raw, f"a JSON {type(value).__name__}, not an object", call_id)
    return FunctionCall(name, value, call_id)


def _stream_error(p: Payload, error: dict[str, Any]) -> AdkError:
    """An `error` event in the middle of a stream, e.g. `overloaded_error`."""
    kind = p.get_str(error, "type", "error") or "api_error"
    category = _ERROR_CATEGORIES.get(kind, ErrorCategory.UNAVAILABLE)
    message = p.get_str(error, "message", "error") or kind
    return p.error(
        category,
        kind if kind in _ERROR_CATEGORIES else "api_error",  # a code is ours: a type we do not know is not one
        f"Anthropic stopped the stream with {kind}: {message}. The answer is incomplete"
        + ("; run the request again." if category in (ErrorCategory.UNAVAILABLE, ErrorCategory.RATE_LIMITED) else "."),
        error_type=kind,
    )
