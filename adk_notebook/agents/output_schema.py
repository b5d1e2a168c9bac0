"""Structured output: the schema an agent's final answer must match, and its validation.

A pydantic model validates with pydantic and gives the model instance back; a JSON-schema
dict validates with `core.json_schema.schema_problems`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ValidationError

from ..core.errors import AdkError
from ..core.json_schema import schema_problems
from ..tools.schema import model_json_schema

__all__ = ["OutputSchema"]

_FENCE = re.compile(r"^\s*```(?:json)?\s*\n?(.*?)\n?```\s*$", re.DOTALL)


class OutputSchema:
    """A pydantic model class or a JSON schema dict, ready to check answers against."""

    def __init__(self, schema: type[BaseModel] | dict[str, Any]) -> None:
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            self.model: type[BaseModel] | None = schema
        elif isinstance(schema, dict):
            self.model = None
        else:
            raise AdkError.config(
                f"output_schema must be a pydantic model class or a JSON schema dict, got {type(schema).__name__}.",
                code="invalid_output_schema",
            )
        self.json_schema = model_json_schema(schema)

    def instruction(self) -> str:
        """The line added to the system instruction, for providers that do not enforce schemas."""
        return (
            "Reply with only a JSON object (no prose, no code fences) that matches this JSON schema:\n"
            + json.dumps(self.json_schema, ensure_ascii=False)
        )

    def validate(self, text: str) -> Any:
        """Parse and check an answer; raise ValueError with a message the model can act on."""
        match = _FENCE.match(text)
        raw = match.group(1) if match else text
        if self.model is not None:
            try:
                return self.model.model_validate_json(raw)
            except ValidationError as exc:
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors(include_url=False)
                )
                raise ValueError(problems) from None
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(f"the answer is not valid JSON ({exc.msg} at position {exc.pos})") from None
        problems = schema_problems(value, self.json_schema)
        if problems:
            raise ValueError("; ".join(problems))
        return value

    def dump(self, value: Any) -> Any:
        """A JSON-ready form of a validated value, for session state."""
        return value.model_dump(mode="json") if isinstance(value, BaseModel) else value
