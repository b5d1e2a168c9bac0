"""Turning whatever a tool returned into what a model receives: a JSON object, plus media.

A plain result becomes a JSON object (`to_response_dict`). A result dict with `inline_data`
and/or `file_data` keys becomes a multimodal function response: the JSON without those keys,
plus one media `Part` per item (`FunctionResponseData.from_tool_result`). A tool may also
build and return a `FunctionResponseData` itself:

    @tool
    def make_chart(title: str) -> FunctionResponseData:
        \"\"\"Draw a chart.\"\"\"
        return FunctionResponseData({"title": title}).with_inline_data("image/png", render(title))

Nothing a tool returns crashes the run: a value strict JSON cannot carry (a datetime, NaN or
Infinity: the error names where it is, e.g. `the result['stats'][1] is nan`), media that cannot
be read or too many inline bytes become `{"error": ..., "code": ...}` for the model to read.
NaN is not turned into null: the model would read "missing" where the tool meant "undefined",
and the tool's author would never hear of it.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import io
import os
import sys
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from ..core.content import Blob, FileData, FunctionResponse, Part
from ..core.errors import AdkError
from ..core.json_value import json_problem
from .files import resolve_file_uri

__all__ = ["MAX_INLINE_DATA_BYTES", "FunctionResponseData", "to_function_response", "to_response_dict"]

MAX_INLINE_DATA_BYTES = 20 * 1024 * 1024
"""Most inline bytes one function response may carry (all its items together); Gemini's
request limit is 20 MB. Larger media belong in `file_data` references."""

_MEDIA_KEYS = ("inline_data", "file_data")

# (offset, magic bytes, MIME type): the formats providers accept in function responses.
_MAGIC = (
    (0, b"\x89PNG\r\n\x1a\n", "image/png"),
    (0, b"\xff\xd8\xff", "image/jpeg"),
    (0, b"GIF87a", "image/gif"),
    (0, b"GIF89a", "image/gif"),
    (8, b"WEBP", "image/webp"),  # after "RIFF" and a 4-byte size
    (0, b"%PDF-", "application/pdf"),
)


_Fail = Callable[[str], NoReturn]  # raises the caller's kind of error


class _MediaError(Exception):
    """A tool's media could not be turned into a part; becomes an error response."""

    def __init__(self, message: str, code: str = "invalid_media") -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class _SeedConstructor:
    """A builder method that, called on the class instead, is the seed's constructor of that name.

    `data.with_inline_data("image/png", png)` appends to `data`; adk-rust's
    `FunctionResponseData::with_inline_data(name, json, parts)` makes a new one, and so does
    `FunctionResponseData.with_inline_data(name, json, parts)` here.
    """

    def __init__(self, builder: Callable[..., Any], constructor: Callable[..., Any]) -> None:
        self.builder, self.constructor = builder, constructor
        self.__doc__ = builder.__doc__  # what help() shows

    def __get__(self, obj: object, owner: type) -> Callable[..., Any]:
        return types.MethodType(self.constructor, owner) if obj is None else types.MethodType(self.builder, obj)


def _or_on_the_class(constructor: Callable[..., Any]) -> Callable[[Callable[..., Any]], Any]:
    return lambda builder: _SeedConstructor(builder, constructor)


def _new_multimodal(
    cls: type[FunctionResponseData], name: str, response: Any, inline_parts: Iterable[Any], file_parts: Iterable[Any]
) -> FunctionResponseData:
    """The seed's `with_multimodal(name, json, inline_items, file_items)`: a new response."""
    data = cls(_plain(response), name=name)
    for items, convert in ((inline_parts, _inline_part), (file_parts, _file_part)):
        for item in items:
            if isinstance(item, (Part, Blob, FileData)):
                data.with_multimodal([item])
            else:
                data.parts.append(convert(_raise_tool_error, item))
    return data


def _new_inline_data(
    cls: type[FunctionResponseData], name: str, response: Any, parts: Iterable[Any]
) -> FunctionResponseData:
    """The seed's `with_inline_data(name, json, inline_items)`: a new response."""
    return _new_multimodal(cls, name, response, parts, ())


def _new_file_data(
    cls: type[FunctionResponseData], name: str, response: Any, parts: Iterable[Any]
) -> FunctionResponseData:
    """The seed's `with_file_data(name, json, file_items)`: a new response."""
    return _new_multimodal(cls, name, response, (), parts)


@dataclass(slots=True)
class FunctionResponseData:
    """A tool's answer as the model receives it: a JSON object and media parts.

    Build it from a tool's result with `from_tool_result`, or directly with the builders,
    each of which appends and returns the object:
    `FunctionResponseData({"title": "Q4"}).with_inline_data("image/png", png_bytes)`.

    Called on the class, the same names are the seed's constructors:
    `FunctionResponseData.with_inline_data("chart_tool", {"title": "Q4"}, [{"mime_type":
    "image/png", "data": png_bytes}])`, `.with_file_data(name, json, [{"mime_type": ...,
    "file_uri": ...}])` and `.with_multimodal(name, json, inline_items, file_items)`; an item
    may also be a `Blob`, a `FileData` or a media `Part`.

    Attributes:
        response: The JSON object (what a plain tool result becomes).
        parts: Media parts (inline bytes or file references) sent alongside it.
        name: The tool's name, when given (the seed's constructors take it).
    """

    response: dict[str, Any] = field(default_factory=dict)
    parts: list[Part] = field(default_factory=list)
    error: str | None = None  # set when the result could not be sent as it was
    name: str = ""

    @_or_on_the_class(_new_inline_data)
    def with_inline_data(self, mime_type: str, data: bytes | str) -> FunctionResponseData:
        """Add bytes (or base64 text) of the given MIME type, e.g. a PNG chart.

        On the class: `FunctionResponseData.with_inline_data(name, json, inline_items)`.
        """
        self.parts.append(_inline_part(_raise_tool_error, {"mime_type": mime_type, "data": data}))
        return self

    @_or_on_the_class(_new_file_data)
    def with_file_data(self, mime_type: str, file_uri: str) -> FunctionResponseData:
        """Add a reference to a file by URI (gs://, https://, a local path) of the given MIME type.

        On the class: `FunctionResponseData.with_file_data(name, json, file_items)`.
        """
        self.parts.append(_file_part(_raise_tool_error, {"mime_type": mime_type, "file_uri": file_uri}))
        return self

    @_or_on_the_class(_new_multimodal)
    def with_multimodal(self, parts: Iterable[Part | Blob | FileData]) -> FunctionResponseData:
        """Add ready-made media: `Part`s holding inline or file data, `Blob`s or `FileData`s.

        On the class: `FunctionResponseData.with_multimodal(name, json, inline_items, file_items)`.
        """
        for part in parts:
            if isinstance(part, Blob):
                part = Part(inline_data=part)
            elif isinstance(part, FileData):
                part = Part(file_data=part)
            if not isinstance(part, Part) or not part.is_media():
                raise AdkError.tool(
                    f"with_multimodal takes parts with inline or file data (Part, Blob or FileData), got {part!r}.",
                    code="invalid_media",
                    category="invalid_input",
                )
            self.parts.append(part)
        return self

    @property
    def inline_bytes(self) -> int:
        """Total size of the inline data parts."""
        return sum(len(p.inline_data.data) for p in self.parts if p.inline_data is not None)

    @classmethod
    def from_tool_result(cls, tool_name: str, result: Any) -> FunctionResponseData:
        """What the model receives for `result`, the value tool `tool_name` returned.

        A dict stays as is, a pydantic model or dataclass is dumped, anything else becomes
        `{"result": v}`. A dict with `inline_data` and/or `file_data` (a list, or one item)
        becomes that dict without those keys plus one media part per item; when what is left
        is only `{"response": {...}}`, as in the seed's examples, the inner object is the JSON.

        Inline items: `{"mime_type": ..., "data": bytes | base64 str}` (mime_type may be left
        out for PNG, JPEG, GIF, WEBP and PDF bytes), raw bytes of those formats, a PIL image
        (sent as PNG) or an IPython `Image`. File items: `{"mime_type": ..., "file_uri": ...}`
        or a URI string whose extension names the type.

        Never raises for a bad result: unreadable media, more than `MAX_INLINE_DATA_BYTES`
        inline or a value JSON cannot carry give an error response (`{"error", "code"}`).
        """
        try:
            data = _convert(result)
        except _MediaError as exc:
            return _failure(f"Tool {tool_name!r} returned media the model cannot receive: {exc.message}", exc.code)
        return _checked(tool_name, data)


def to_response_dict(tool_name: str, result: Any) -> dict[str, Any]:
    """The JSON object the model receives for `result` (media parts, if any, left out)."""
    return FunctionResponseData.from_tool_result(tool_name, result).response


def to_function_response(name: str, call_id: str | None, result: Any) -> FunctionResponse:
    """The function response for call `call_id` of tool `name`: its JSON and its media parts."""
    data = FunctionResponseData.from_tool_result(name, result)
    return FunctionResponse(name, data.response, call_id, data.parts)


# -- conversion -------------------------------------------------------------------------------
def _convert(result: Any) -> FunctionResponseData:
    if isinstance(result, FunctionResponseData):
        return FunctionResponseData(_plain(result.response), list(result.parts))
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        result = dataclasses.asdict(result)
    if isinstance(result, dict) and any(key in result for key in _MEDIA_KEYS):
        return _multimodal(result)
    return FunctionResponseData(_plain(result))


def _plain(result: Any) -> dict[str, Any]:
    """A dict as is, a pydantic model or dataclass dumped, anything else as {"result": v}."""
    pydantic = sys.modules.get("pydantic")  # no model can exist before pydantic is imported
    if pydantic is not None and isinstance(result, pydantic.BaseModel):
        return result.model_dump(mode="json")
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        return dataclasses.asdict(result)
    return result if isinstance(result, dict) else {"result": result}


def _multimodal(result: dict[str, Any]) -> FunctionResponseData:
    response = {k: v for k, v in result.items() if k not in _MEDIA_KEYS}
    if len(response) == 1 and isinstance(response.get("response"), dict):
        response = response["response"]
    parts = [_inline_part(_raise_media_error, item) for item in _items(result.get("inline_data"))]
    parts += [_file_part(_raise_media_error, item) for item in _items(result.get("file_data"))]
    return FunctionResponseData(response, parts)


def _checked(tool_name: str, data: FunctionResponseData) -> FunctionResponseData:
    """Enforce the inline size limit and JSON-compatibility on the final response."""
    total = data.inline_bytes
    if total > MAX_INLINE_DATA_BYTES:
        return _failure(
            f"Tool {tool_name!r} returned {total:,} bytes of inline data; one response may carry at most "
            f"{MAX_INLINE_DATA_BYTES:,}. Send large media as file_data (a URI) instead, or make it smaller.",
            "inline_data_too_large",
        )
    problem = json_problem(data.response, "the result")
    if problem is not None:
        return _failure(
            f"Tool {tool_name!r} returned a value that cannot be sent to the model: {problem}. "
            "Return str, int, float (finite), bool, None, lists, dicts or pydantic models; put bytes and "
            "images under 'inline_data'.",
            "result_not_serializable",
        )
    return data


def _failure(message: str, code: str) -> FunctionResponseData:
    return FunctionResponseData({"error": message, "code": code}, error=message)


def _items(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _raise_media_error(message: str) -> NoReturn:
    raise _MediaError(message)


def _raise_tool_error(message: str) -> NoReturn:
    raise AdkError.tool(message, code="invalid_media", category="invalid_input")


def _inline_part(fail: _Fail, item: Any) -> Part:
    """One inline item as a Part."""
    mime_type: str | None = None
    data: Any = item
    if isinstance(item, dict):
        if "data" not in item:
            fail(f"an inline_data item needs 'data' (and 'mime_type'), got keys {list(item)}.")
        mime_type, data = item.get("mime_type"), item["data"]
        if mime_type is not None and (not isinstance(mime_type, str) or "/" not in mime_type):
            fail(f"mime_type must be a MIME type such as 'image/png', got {mime_type!r}.")
    if isinstance(data, str):
        try:
            data = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            fail("inline data given as text must be base64 (or pass bytes).")
    elif isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    elif not isinstance(data, bytes):
        image_mime, data = _image_bytes(fail, data)
        mime_type = mime_type or image_mime
    mime_type = mime_type or _sniff(data)
    if mime_type is None:
        fail(
            f"cannot tell the type of {len(data):,} bytes of inline data (not PNG, JPEG, GIF, WEBP or PDF); "
            "give it as {'mime_type': ..., 'data': ...}."
        )
    return Part(inline_data=Blob(mime_type, data))


def _image_bytes(fail: _Fail, image: Any) -> tuple[str, bytes]:
    """An IPython Image or a PIL image as (mime type, bytes); neither library is required."""
    display = sys.modules.get("IPython.core.display")
    if display is not None and isinstance(image, display.Image):
        if not isinstance(image.data, bytes):
            fail(
                "this IPython Image holds no bytes (made from a URL without embed=True); "
                "send its URL as file_data instead."
            )
        return _sniff(image.data) or f"image/{image.format}", image.data
    if hasattr(image, "save") and hasattr(image, "mode"):  # a PIL image
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        return "image/png", buffer.getvalue()
    return fail(f"inline data must be bytes, base64 text, a PIL image or an IPython Image, got {type(image).__name__}.")


def _sniff(data: bytes) -> str | None:
    for offset, magic, mime_type in _MAGIC:
        if data[offset : offset + len(magic)] == magic:
            return mime_type
    return None


def _file_part(fail: _Fail, item: Any) -> Part:
    mime_type: str | None = None
    if isinstance(item, dict):
        if "file_uri" not in item:
            fail(f"a file_data item needs 'file_uri' (and 'mime_type'), got keys {list(item)}.")
        mime_type, uri = item.get("mime_type"), item["file_uri"]
    else:
        uri = item
    if isinstance(uri, os.PathLike):
        uri = os.fspath(uri)
    if not isinstance(uri, str) or not uri:
        fail(f"file_uri must be a non-empty string, got {uri!r}.")
    try:
        resolve_file_uri(uri)  # a local file must lie inside the working folder; odd schemes are refused
    except AdkError as exc:
        fail(exc.message)
    if mime_type is None:
        import mimetypes  # only needed here; its tables load on first use anyway

        mime_type = mimetypes.guess_type(uri, strict=False)[0]
        if mime_type is None:
            fail(
                f"cannot tell the MIME type of {uri!r} from its name; give it as {{'mime_type': ..., 'file_uri': ...}}."
            )
    elif not isinstance(mime_type, str) or "/" not in mime_type:
        fail(f"mime_type must be a MIME type such as 'application/pdf', got {mime_type!r}.")
    return Part(file_data=FileData(mime_type, uri))
