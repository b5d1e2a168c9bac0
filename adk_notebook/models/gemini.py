"""Gemini through the Generative Language API (Google AI Studio keys), over plain HTTP.

```
POST {base_url}/models/{model}:generateContent               one answer
POST {base_url}/models/{model}:streamGenerateContent?alt=sse  server-sent chunks
header x-goog-api-key: <key>                                  never in the URL
```
Our roles map to Gemini's: `user` → user, `model` → model, `tool` → user with
`functionResponse` parts (images and files a tool returned ride inside the
`functionResponse.parts` list). Tool parameters and output schemas pass through
`gemini_schema`, the subset of JSON schema Gemini accepts. A blocked prompt or answer is an
`AdkError` (forbidden, ``safety_blocked``) that names the reason.

Gemini 3 signs parts of its answers (`thoughtSignature`) and rejects a history that drops the
signature of a function call. The signature travels on our `Part.thought_signature` (so it is
stored with the session) and is sent back with the part; a model turn whose calls carry none
(history from another model) gets the documented placeholder that skips the check.

Provider-native features: `ThinkingConfig` becomes `generationConfig.thinkingConfig`
(`thinkingBudget`, `includeThoughts`); thought summaries come back as parts marked
`thought: true` (streamed as thought chunks) and their tokens as `thoughtsTokenCount`.
`GoogleSearch()` and `CodeExecution()` are declared as `{googleSearch: {}}` and
`{codeExecution: {}}` beside the function declarations; the code Gemini ran comes back as
`executableCode` / `codeExecutionResult` parts (ours: `Part.executable_code` /
`Part.code_execution_result`, sent back as they came), and a search's `groundingMetadata`
(webSearchQueries, groundingChunks, groundingSupports) as the response's `Grounding`.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from ..core.content import (
    Blob,
    CodeExecutionResult,
    Content,
    ExecutableCode,
    FileData,
    FunctionCall,
    Part,
)
from ..core.errors import AdkError
from ..core.events import Usage, new_id
from ..tools.base import FunctionDeclaration
from ..tools.builtin import (
    BuiltinTool,
    Citation,
    CodeExecution,
    GoogleSearch,
    Grounding,
    Source,
    unsupported_builtin,
)
from ..tools.dialects import gemini_schema
from .base import GenerateContentConfig, Llm, LlmRequest, LlmResponse
from .http import DEFAULT_IDLE_TIMEOUT, DEFAULT_TIMEOUT, RetryPolicy
from .payload import Payload
from .providers import GeminiProvider, chosen_provider

if TYPE_CHECKING:
    import httpx

__all__ = ["GeminiModel"]

# Ids we make up (the agent's "adk-…" ids) are not Gemini's: like google-adk, keep them out of
# the request; Gemini pairs calls and responses by name and order then.
_CLIENT_ID_PREFIX = "adk-"
# https://ai.google.dev/gemini-api/docs/thought-signatures (FAQ): a call Gemini did not sign.
_SKIP_SIGNATURE = "skip_thought_signature_validator"
# Models before Gemini 3 neither require signatures nor need the placeholder.
_UNSIGNED_MODELS = re.compile(r"^(models/)?gemini-[12](\.|-)")
_SAFETY_REASONS = frozenset({"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"})
# Finish reasons in the vocabulary all providers share (see openai.py): stop, tool_calls,
# max_tokens, safety; anything else lower-cased.
_FINISH_REASONS = {"STOP": "stop", "MAX_TOKENS": "max_tokens"}


class GeminiModel(Llm):
    """A Gemini model, e.g. `GeminiModel("gemini-2.5-flash")`.

    Args:
        model: The model id ("gemini-2.5-flash", "gemini-3-flash-preview", ...).
        provider: A `GeminiProvider` to send with; the options below build one when none is
            passed. (A provider passed in is asked for its key only when a request is sent.)
        api_key: The API key; defaults to $GOOGLE_API_KEY, then $GEMINI_API_KEY. Sent in the
            `x-goog-api-key` header, never in a URL, and never shown.
        base_url: The API root, default "https://generativelanguage.googleapis.com/v1beta".
        http_client: An `httpx.AsyncClient` to send requests with (you close it).
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
        model: str = "gemini-2.5-flash",
        *,
        provider: GeminiProvider | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        http_client: httpx.AsyncClient | None = None,
        retry: RetryPolicy | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
    ) -> None:
        self.name = model.removeprefix("models/")
        self.provider = chosen_provider(
            "GeminiModel",
            provider,
            GeminiProvider,
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
        payload = transport.payload
        turn = _Turn(payload, streamed=stream)
        if not stream:
            turn.add(await transport.post_json(f"/models/{self.name}:generateContent", body))
            yield turn.finish()
            return
        events = transport.stream_sse(f"/models/{self.name}:streamGenerateContent", body, params={"alt": "sse"})
        async with aclosing(events):
            async for event in events:
                new = turn.add(payload.loads(event.data, "stream chunk"))
                if new:
                    yield LlmResponse(Content("model", new), partial=True, turn_complete=False)
        yield turn.finish()

    def build_body(self, request: LlmRequest, stream: bool = False) -> dict[str, Any]:
        """The JSON body sent for `request` (the same streamed or not), e.g. for `%adk request`; needs no key."""
        body: dict[str, Any] = {"contents": self._contents(request.contents)}
        if request.system_instruction:
            body["systemInstruction"] = {"parts": [{"text": request.system_instruction}]}
        tools = [_builtin(t) for t in request.builtin_tools]
        if request.tools:
            tools.append({"functionDeclarations": [_declaration(d) for d in request.tools]})
        if tools:
            body["tools"] = tools
        if request.tools:
            choice = request.config.tool_choice
            if choice is not None:
                mode = {"auto": "AUTO", "none": "NONE", "required": "ANY"}.get(choice, "ANY")
                calling: dict[str, Any] = {"mode": mode}
                if mode == "ANY" and choice != "required":
                    calling["allowedFunctionNames"] = [choice]
                body["toolConfig"] = {"functionCallingConfig": calling}
        config = _generation_config(request.config)
        if config:
            body["generationConfig"] = config
        return body

    async def aclose(self) -> None:
        """Close the HTTP connections this model opened."""
        await self.provider.aclose()

    # -- our contents -> Gemini's ----------------------------------------------------------------
    def _contents(self, contents: list[Content]) -> list[dict[str, Any]]:
        placeholder = not _UNSIGNED_MODELS.match(self.name)
        out = []
        for content in contents:
            parts = []
            signed = False
            for part in content.parts:
                wire = _part(part)
                if wire is None:
                    continue
                if part.thought_signature is not None:
                    wire["thoughtSignature"] = part.thought_signature
                    signed = signed or part.function_call is not None
                parts.append(wire)
            if not parts:
                continue
            if placeholder and not signed and content.role == "model":
                first_call = next((p for p in parts if "functionCall" in p), None)
                if first_call is not None:
                    first_call["thoughtSignature"] = _SKIP_SIGNATURE
            out.append({"role": "model" if content.role == "model" else "user", "parts": parts})
        return out


def _part(part: Part) -> dict[str, Any] | None:
    if part.text is not None:
        if part.thought:  # a thought goes back only to carry its signature
            return {"text": part.text, "thought": True} if part.thought_signature else None
        # An empty text can carry Gemini 3's signature of the whole answer: it goes back too.
        return {"text": part.text} if part.text or part.thought_signature else None
    if part.executable_code is not None:
        return {"executableCode": {"language": part.executable_code.language, "code": part.executable_code.code}}
    if part.code_execution_result is not None:
        result = part.code_execution_result
        return {"codeExecutionResult": {"outcome": result.outcome, "output": result.output}}
    if part.inline_data is not None:
        return {"inlineData": _inline(part.inline_data)}
    if part.file_data is not None:
        return {"fileData": {"mimeType": part.file_data.mime_type, "fileUri": part.file_data.file_uri}}
    if part.function_call is not None:
        call = part.function_call
        wire: dict[str, Any] = {"name": call.name, "args": call.args}
        if call.id and not call.id.startswith(_CLIENT_ID_PREFIX):
            wire["id"] = call.id
        return {"functionCall": wire}
    if part.function_response is not None:
        resp = part.function_response
        wire = {"name": resp.name, "response": resp.response}
        if resp.id and not resp.id.startswith(_CLIENT_ID_PREFIX):
            wire["id"] = resp.id
        media = [_media(p) for p in resp.parts if p.is_media()]
        if media:
            wire["parts"] = media
        return {"functionResponse": wire}
    return None


def _inline(blob: Blob) -> dict[str, str]:
    return {"mimeType": blob.mime_type, "data": base64.b64encode(blob.data).decode("ascii")}


def _media(part: Part) -> dict[str, Any]:
    """An image or file a tool returned, as an entry of `functionResponse.parts`."""
    if part.inline_data is not None:
        return {"inlineData": _inline(part.inline_data)}
    assert part.file_data is not None
    return {"fileData": {"mimeType": part.file_data.mime_type, "fileUri": part.file_data.file_uri}}


def _builtin(tool: BuiltinTool) -> dict[str, Any]:
    if isinstance(tool, GoogleSearch):
        return {"googleSearch": {}}
    if isinstance(tool, CodeExecution):
        return {"codeExecution": {}}
    raise unsupported_builtin(tool, "GeminiModel")


def _declaration(decl: FunctionDeclaration) -> dict[str, Any]:
    wire: dict[str, Any] = {"name": decl.name, "description": decl.description}
    if decl.parameters:
        params = gemini_schema(decl.parameters)
        # Gemini rejects an OBJECT with no properties ("should be non-empty"): a tool without
        # arguments simply has no `parameters`.
        if params.get("type") != "object" or params.get("properties"):
            wire["parameters"] = params
    return wire


def _generation_config(config: GenerateContentConfig) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for ours, theirs in (
        ("temperature", "temperature"),
        ("top_p", "topP"),
        ("top_k", "topK"),
        ("max_output_tokens", "maxOutputTokens"),
        ("stop_sequences", "stopSequences"),
    ):
        value = getattr(config, ours)
        if value is not None:
            out[theirs] = value
    if config.response_schema is not None:
        out["responseMimeType"] = config.response_mime_type or "application/json"
        out["responseSchema"] = gemini_schema(config.response_schema)
    elif config.response_mime_type:
        out["responseMimeType"] = config.response_mime_type
    if config.thinking is not None:
        thinking: dict[str, Any] = {"includeThoughts": config.thinking.include_thoughts}
        if config.thinking.budget_tokens is not None:
            thinking["thinkingBudget"] = config.thinking.budget_tokens
        out["thinkingConfig"] = thinking
    return out


# -- Gemini's answer -> ours ---------------------------------------------------------------------
class _Turn:
    """Collects one answer from one response or from its streamed chunks, read through `Payload`."""

    __slots__ = ("candidates", "grounding", "parts", "payload", "ratings", "reason", "streamed", "usage")

    def __init__(self, payload: Payload, *, streamed: bool) -> None:
        self.payload = payload
        self.parts: list[Part] = []
        self.usage: Usage | None = None
        self.reason: str | None = None  # Gemini's finishReason
        self.ratings: list[dict[str, Any]] = []
        self.candidates = False
        self.streamed = streamed
        self.grounding: Grounding | None = None

    def add(self, chunk: Any) -> list[Part]:
        """Take one response (or streamed chunk) in; return the text it adds, answer and thoughts, as new parts."""
        p = self.payload
        chunk = p.object(chunk, "stream chunk" if self.streamed else "response body")
        feedback = p.get_dict(chunk, "promptFeedback")
        block_reason = p.get_str(feedback, "blockReason", "promptFeedback")
        if block_reason:
            message = p.get_str(feedback, "blockReasonMessage", "promptFeedback")
            raise _blocked(p, "the prompt", block_reason, message, feedback, "promptFeedback")
        meta = p.get_dict(chunk, "usageMetadata")
        if meta:
            self.usage = _usage(p, meta)
        candidates = p.get_dicts(chunk, "candidates")
        if not candidates:
            return []
        self.candidates = True
        candidate, at = candidates[0], "candidates[0]"
        reason = p.get_str(candidate, "finishReason", at)
        if reason:
            self.reason = reason
            self.ratings = p.get_dicts(candidate, "safetyRatings", at)
        grounding = p.get_dict(candidate, "groundingMetadata", at)
        if grounding:
            self.grounding = _grounding(p, grounding, f"{at}.groundingMetadata")
        new_text = []
        content = p.get_dict(candidate, "content", at)
        for i, wire in enumerate(p.get_dicts(content, "parts", f"{at}.content")):
            part = self._part(wire, f"{at}.content.parts[{i}]")
            if part is None:
                continue
            if part.text is not None:
                if part.text:
                    new_text.append(Part(text=part.text, thought=part.thought))
                last = self.parts[-1] if self.parts else None
                if (
                    last is not None
                    and last.text is not None
                    and last.thought == part.thought
                    and part.thought_signature is None
                ):
                    last.text += part.text
                    continue
            self.parts.append(part)
        return new_text

    def finish(self) -> LlmResponse:
        """The complete answer, or the error that stands in its place."""
        p = self.payload
        if not self.candidates:
            raise p.error(
                "internal",
                "empty_response",
                "Gemini returned no candidates and gave no reason (no promptFeedback.blockReason). "
                "Try the request again; if it keeps happening, rephrase the prompt.",
            )
        if self.streamed and self.reason is None:
            raise p.error(
                "unavailable",
                "stream_interrupted",
                "The Gemini stream ended before its last chunk (no finishReason); the answer is incomplete. "
                "Run the request again.",
            )
        has_content = any(
            part.text or part.function_call or part.is_media() or part.executable_code or part.code_execution_result
            for part in self.parts
            if not part.thought
        )
        if not has_content and self.reason in _SAFETY_REASONS:
            raise _blocked(p, "the answer", self.reason, None, {"safetyRatings": self.ratings}, "candidates[0]")
        if not has_content and self.reason not in (None, "STOP"):
            hint = (
                " Raise max_output_tokens (thinking models spend tokens before they answer)."
                if (self.reason == "MAX_TOKENS")
                else ""
            )
            raise p.error(
                "internal",
                "empty_response",
                f"Gemini stopped without an answer (finishReason {self.reason}).{hint}",
                finish_reason=self.reason,
            )
        content = p.final(Content("model", self.parts))
        return LlmResponse(content, finish_reason=self._finish_reason(), usage=self.usage, grounding=self.grounding)

    def _finish_reason(self) -> str | None:
        if self.reason is None:
            return None
        if self.reason == "STOP" and any(p.function_call for p in self.parts):
            return "tool_calls"
        if self.reason in _SAFETY_REASONS:
            return "safety"
        return _FINISH_REASONS.get(self.reason, self.reason.lower())

    def _part(self, wire: dict[str, Any], at: str) -> Part | None:
        p = self.payload
        text = p.get_str(wire, "text", at)
        if text is not None:
            return Part(
                text=text,
                thought=bool(p.get_bool(wire, "thought", at)),
                thought_signature=p.get_str(wire, "thoughtSignature", at),
            )
        if wire.get("functionCall") is not None:
            call, where = p.get_dict(wire, "functionCall", at), f"{at}.functionCall"
            args = p.checked_depth(p.get_dict(call, "args", where), f"{where}.args")
            call_id = p.get_str(call, "id", where) or _CLIENT_ID_PREFIX + new_id()
            return Part(
                function_call=FunctionCall(p.get_str(call, "name", where) or "", args, call_id),
                thought_signature=p.get_str(wire, "thoughtSignature", at),
            )
        if wire.get("inlineData") is not None:
            blob, where = p.get_dict(wire, "inlineData", at), f"{at}.inlineData"
            try:
                data = base64.b64decode(p.get_str(blob, "data", where) or "", validate=True)
            except (binascii.Error, ValueError) as exc:
                raise p.invalid(f"{where}.data", f"is not base64 ({exc})") from None
            return Part(inline_data=Blob(p.get_str(blob, "mimeType", where) or "application/octet-stream", data))
        if wire.get("fileData") is not None:
            ref, where = p.get_dict(wire, "fileData", at), f"{at}.fileData"
            return Part(
                file_data=FileData(p.get_str(ref, "mimeType", where) or "", p.get_str(ref, "fileUri", where) or "")
            )
        if wire.get("executableCode") is not None:
            code, where = p.get_dict(wire, "executableCode", at), f"{at}.executableCode"
            return Part(
                executable_code=ExecutableCode(
                    p.get_str(code, "code", where) or "", p.get_str(code, "language", where) or "PYTHON"
                )
            )
        if wire.get("codeExecutionResult") is not None:
            result, where = p.get_dict(wire, "codeExecutionResult", at), f"{at}.codeExecutionResult"
            return Part(
                code_execution_result=CodeExecutionResult(
                    p.get_str(result, "outcome", where) or "OUTCOME_UNSPECIFIED",
                    p.get_str(result, "output", where) or "",
                )
            )
        return None  # part kinds added later: nothing of ours to carry them


def _grounding(p: Payload, meta: dict[str, Any], at: str) -> Grounding:
    """groundingMetadata: the queries searched, the pages found (web chunks), what each supports."""
    grounding = Grounding(queries=[q for q in p.get_list(meta, "webSearchQueries", at) if isinstance(q, str)])
    for i, chunk in enumerate(p.get_dicts(meta, "groundingChunks", at)):
        web, where = p.get_dict(chunk, "web", f"{at}.groundingChunks[{i}]"), f"{at}.groundingChunks[{i}].web"
        grounding.sources.append(Source(p.get_str(web, "uri", where) or "", p.get_str(web, "title", where) or ""))
    count = len(grounding.sources)
    for i, support in enumerate(p.get_dicts(meta, "groundingSupports", at)):
        where = f"{at}.groundingSupports[{i}]"
        segment = p.get_dict(support, "segment", where)
        indices = [
            n
            for n in p.get_list(support, "groundingChunkIndices", where)
            if isinstance(n, int) and not isinstance(n, bool) and 0 <= n < count
        ]
        text = p.get_str(segment, "text", f"{where}.segment") or ""
        if text:
            grounding.citations.append(Citation(text, indices))
    return grounding


def _usage(p: Payload, meta: dict[str, Any]) -> Usage:
    """Token counts; a count that is absent or null is 0."""
    prompt = p.get_int(meta, "promptTokenCount", "usageMetadata") or 0
    output = (p.get_int(meta, "candidatesTokenCount", "usageMetadata") or 0) + (
        p.get_int(meta, "thoughtsTokenCount", "usageMetadata") or 0
    )
    thoughts = p.get_int(meta, "thoughtsTokenCount", "usageMetadata") or 0
    return Usage(prompt, output, p.get_int(meta, "totalTokenCount", "usageMetadata") or prompt + output, thoughts)


def _blocked(p: Payload, what: str, reason: str, message: str | None, holder: dict[str, Any], at: str) -> AdkError:
    """A prompt or answer Gemini refused for its content: not retryable, rephrase instead."""
    flagged = []
    for i, rating in enumerate(p.get_dicts(holder, "safetyRatings", at)):
        where = f"{at}.safetyRatings[{i}]"
        if p.get_bool(rating, "blocked", where) or p.get_str(rating, "probability", where) in ("MEDIUM", "HIGH"):
            flagged.append((p.get_str(rating, "category", where) or "?").removeprefix("HARM_CATEGORY_").lower())
    text = f"Gemini blocked {what} (reason {reason}"
    text += f": {', '.join(flagged)})" if flagged else ")"
    text += f". {message}" if message else "."
    text += " Rephrase the request; retrying the same one will be blocked again."
    return p.error("forbidden", "safety_blocked", text, block_reason=reason, flagged=flagged)
