"""Every `AdkError.code`, with when it happens and what to do.

The full list with docs follows in the next change.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["ErrorCode"]


class ErrorCode(StrEnum):
    """A stable, machine-readable case of an `AdkError` (and of a tool error the model reads)."""

    doc: str

    def __new__(cls, value: str, doc: str) -> ErrorCode:
        member = str.__new__(cls, value)
        member._value_ = value
        member.doc = doc
        return member

    INVALID_ARGUMENTS = (
        "invalid_arguments",
        "A tool call's arguments do not fit the tool's schema. The model reads which ones and can call again.",
    )
    INVALID_OUTPUT_SCHEMA = (
        "invalid_output_schema",
        "`output_schema` is neither a pydantic model class nor a JSON-schema dict. Pass one of those.",
    )
    INVALID_SCHEMA = (
        "invalid_schema",
        "A JSON-schema dict (tool parameters, output schema) is not valid JSON Schema; the message "
        "names where. Fix the schema.",
    )
