"""Messages: a `Content` is one turn (a role and its parts); a `Part` is one piece of it.

Plain slotted dataclasses: they are created per streamed chunk, so they must be cheap.
`to_dict` / `from_dict` give the JSON form sessions store (bytes as base64).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from .json_value import json_problem, repair_text, repaired

__all__ = [
    "INVALID_ARGUMENTS_KEY",
    "Blob",
    "CodeExecutionResult",
    "Content",
    "ExecutableCode",
    "FileData",
    "FunctionCall",
    "FunctionResponse",
    "Part",
    "Role",
    "chunk_mender",
    "make_sendable",
    "malformed_call",
]

Role = Literal["user", "model", "tool"]


@dataclass(slots=True)
class Blob:
    """Bytes sent inline, e.g. an image a tool produced."""

    mime_type: str
    data: bytes

    def __repr__(self) -> str:  # never dump megabytes into a notebook cell
        return f"Blob(mime_type={self.mime_type!r}, data=<{len(self.data)} bytes>)"


@dataclass(slots=True)
class FileData:
    """A reference to a file by URI; the model (or the notebook) fetches it."""

    mime_type: str
    file_uri: str


@dataclass(slots=True)
class FunctionCall:
    """The model asks for a tool: `FunctionCall("get_weather", {"city": "Tokyo"})`."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    id: str | None = None


# A model sometimes sends tool arguments that are not a JSON object. Providers keep such a call
# (with its id, so the history stays valid) with the reason under this key; the dispatcher
# answers it with that reason instead of running the tool, and the model can try again.
INVALID_ARGUMENTS_KEY = "__invalid_json_arguments__"


def malformed_call(name: str, raw: str, problem: str, call_id: str | None = None) -> FunctionCall:
    """The call a provider returns when the arguments text `raw` could not be used (`problem` says why)."""
    excerpt = raw if len(raw) <= 2000 else raw[:2000] + "…"
    detail = f"The arguments for tool {name!r} were {problem}; send one JSON object. You sent: {excerpt}"
    return FunctionCall(name, {INVALID_ARGUMENTS_KEY: detail}, call_id)


@dataclass(slots=True)
class FunctionResponse:
    """A tool's answer to one call; `parts` carries images or files for multimodal responses."""

    name: str
    response: dict[str, Any]
    id: str | None = None
    parts: list[Part] = field(default_factory=list)


@dataclass(slots=True)
class ExecutableCode:
    """Code the model ran on the provider's side (Gemini's code execution tool), not in the kernel."""

    code: str
    language: str = "PYTHON"


@dataclass(slots=True)
class CodeExecutionResult:
    """What the provider's run of an `ExecutableCode` printed; `outcome` is e.g. "OUTCOME_OK"."""

    outcome: str
    output: str = ""


@dataclass(slots=True)
class Part:
    """One piece of a message. Exactly one of the fields is set.

    A thought (`thought=True`) is the model's reasoning: text when the provider shows it, no
    text when it sent it encrypted (Anthropic's redacted thinking, kept in `thought_signature`).
    """

    text: str | None = None
    inline_data: Blob | None = None
    file_data: FileData | None = None
    function_call: FunctionCall | None = None
    function_response: FunctionResponse | None = None
    executable_code: ExecutableCode | None = None
    code_execution_result: CodeExecutionResult | None = None
    thought: bool = False
    # An opaque provider token sent back unchanged with the part: Gemini's thoughtSignature,
    # Anthropic's thinking signature (or a redacted thought's data).
    thought_signature: str | None = None

    @classmethod
    def from_text(cls, text: str) -> Part:
        return cls(text=text)

    @classmethod
    def from_bytes(cls, mime_type: str, data: bytes) -> Part:
        return cls(inline_data=Blob(mime_type, data))

    @classmethod
    def from_uri(cls, mime_type: str, file_uri: str) -> Part:
        return cls(file_data=FileData(mime_type, file_uri))

    @property
    def mime_type(self) -> str | None:
        if self.inline_data is not None:
            return self.inline_data.mime_type
        if self.file_data is not None:
            return self.file_data.mime_type
        return None

    @property
    def file_uri(self) -> str | None:
        return self.file_data.file_uri if self.file_data is not None else None

    def is_media(self) -> bool:
        """True for inline bytes or a file reference (images, audio, PDFs...)."""
        return self.inline_data is not None or self.file_data is not None

    def to_dict(self) -> dict[str, Any]:
        data = self._kind_dict()
        if self.thought_signature is not None:
            data["thought_signature"] = self.thought_signature
        return data

    def _kind_dict(self) -> dict[str, Any]:
        if self.text is not None:
            return {"text": self.text, "thought": True} if self.thought else {"text": self.text}
        if self.inline_data is not None:
            return {"inline_data": _blob_to_dict(self.inline_data)}
        if self.file_data is not None:
            return {"file_data": {"mime_type": self.file_data.mime_type, "file_uri": self.file_data.file_uri}}
        if self.function_call is not None:
            call = self.function_call
            return {"function_call": {"name": call.name, "args": call.args, "id": call.id}}
        if self.function_response is not None:
            resp = self.function_response
            data: dict[str, Any] = {"name": resp.name, "response": resp.response, "id": resp.id}
            if resp.parts:
                data["parts"] = [p.to_dict() for p in resp.parts]
            return {"function_response": data}
        if self.executable_code is not None:
            return {"executable_code": {"code": self.executable_code.code, "language": self.executable_code.language}}
        if self.code_execution_result is not None:
            result = self.code_execution_result
            return {"code_execution_result": {"outcome": result.outcome, "output": result.output}}
        return {"thought": True} if self.thought else {}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Part:
        part = cls._from_kind_dict(data)
        part.thought_signature = data.get("thought_signature")
        return part

    @classmethod
    def _from_kind_dict(cls, data: dict[str, Any]) -> Part:
        if "text" in data:
            return cls(text=data["text"], thought=bool(data.get("thought", False)))
        if "inline_data" in data:
            blob = data["inline_data"]
            return cls(inline_data=Blob(blob["mime_type"], base64.b64decode(blob["data"])))
        if "file_data" in data:
            ref = data["file_data"]
            return cls(file_data=FileData(ref["mime_type"], ref["file_uri"]))
        if "function_call" in data:
            call = data["function_call"]
            return cls(function_call=FunctionCall(call["name"], call.get("args") or {}, call.get("id")))
        if "function_response" in data:
            resp = data["function_response"]
            parts = [cls.from_dict(p) for p in resp.get("parts", ())]
            return cls(function_response=FunctionResponse(resp["name"], resp["response"], resp.get("id"), parts))
        if "executable_code" in data:
            code = data["executable_code"]
            return cls(executable_code=ExecutableCode(code["code"], code.get("language", "PYTHON")))
        if "code_execution_result" in data:
            result = data["code_execution_result"]
            return cls(code_execution_result=CodeExecutionResult(result["outcome"], result.get("output", "")))
        return cls(thought=bool(data.get("thought", False)))


def _blob_to_dict(blob: Blob) -> dict[str, str]:
    return {"mime_type": blob.mime_type, "data": base64.b64encode(blob.data).decode("ascii")}


@dataclass(slots=True)
class Content:
    """One message of the conversation.

    Build it fluently, as in the seed: `Content.user("What's in this image?")
    .with_inline_data("image/png", png_bytes)`. The `with_*` builders append and return self.
    """

    role: Role
    parts: list[Part] = field(default_factory=list)

    @classmethod
    def user(cls, text: str | None = None) -> Content:
        return cls("user", [Part(text=text)] if text is not None else [])

    @classmethod
    def model(cls, text: str | None = None) -> Content:
        return cls("model", [Part(text=text)] if text is not None else [])

    def with_text(self, text: str) -> Content:
        self.parts.append(Part(text=text))
        return self

    def with_inline_data(self, mime_type: str, data: bytes) -> Content:
        self.parts.append(Part(inline_data=Blob(mime_type, data)))
        return self

    def with_file_uri(self, mime_type: str, file_uri: str) -> Content:
        self.parts.append(Part(file_data=FileData(mime_type, file_uri)))
        return self

    def with_part(self, part: Part) -> Content:
        self.parts.append(part)
        return self

    @property
    def text(self) -> str:
        """All text parts joined (thoughts left out); "" when there is none."""
        return "".join(p.text for p in self.parts if p.text is not None and not p.thought)

    def function_calls(self) -> list[FunctionCall]:
        return [p.function_call for p in self.parts if p.function_call is not None]

    def function_responses(self) -> list[FunctionResponse]:
        return [p.function_response for p in self.parts if p.function_response is not None]

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "parts": [p.to_dict() for p in self.parts]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Content:
        return cls(data["role"], [Part.from_dict(p) for p in data.get("parts", ())])


def make_sendable(content: Content) -> Content:
    """Make `content` safe to send in every later request, in place; returns it.

    Text with surrogate code points is repaired (see `repair_text`: an emoji's halves that a
    stream split across two chunks are paired again). Call arguments or a function response
    strict JSON cannot carry (NaN, Infinity, a datetime) become an error naming the value's
    path: the call is answered with that error instead of running, the response tells the model
    what went wrong. Sessions do this to every event they store; it costs little for clean
    content (one `isascii` per text, one C encode per call or response).
    """
    for part in content.parts:
        if part.text is not None:
            part.text = repaired(part.text)
        call = part.function_call
        if call is not None:
            call.name, call.id = repaired(call.name), repaired(call.id)
            problem = json_problem(call.args, "args")
            if problem is None:
                call.args = repaired(call.args)
            else:
                call.args = malformed_call(call.name, _excerpt(call.args), f"not strict JSON ({problem})", call.id).args
        response = part.function_response
        if response is not None:
            response.name, response.id = repaired(response.name), repaired(response.id)
            problem = json_problem(response.response, "the response")
            if problem is None:
                response.response = repaired(response.response)
            else:
                response.response = {
                    "error": f"The response of tool {response.name!r} cannot be sent to a model: {problem}.",
                    "code": "result_not_serializable",
                }
            if response.parts:
                make_sendable(Content("tool", response.parts))
    return content


def chunk_mender() -> Callable[[Content | None], Content | None]:
    """A function that makes a model's streamed chunks encodable one by one (one per model call).

    A stream may split an emoji's JSON-escaped surrogate halves across two chunks: each chunk on
    its own is then text no widget, terminal or request can encode. A high surrogate that ends a
    chunk's text is held back and joined to the next chunk's text, so the halves meet; any other
    surrogate becomes U+FFFD. It runs per chunk: an ASCII chunk, the usual, costs one `isascii`
    (a closure, not an object's `__call__`, which costs twice as much).
    """
    held: dict[bool, str] = {}  # by Part.thought: thoughts and answer are two streams

    def mend(content: Content | None) -> Content | None:
        if content is not None:
            for part in content.parts:
                text = part.text
                if text is not None and (held or not text.isascii()):
                    text = held.pop(part.thought, "") + text
                    if text and "\ud800" <= text[-1] <= "\udbff":
                        text, held[part.thought] = text[:-1], text[-1]
                    part.text = repair_text(text)
        return content

    return mend


def _excerpt(value: Any) -> str:
    try:
        return json.dumps(value, default=repr)
    except (ValueError, RecursionError):  # it contains itself, or is nested too deeply to print
        return "…"
