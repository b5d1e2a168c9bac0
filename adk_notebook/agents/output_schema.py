"""Structured output: the schema an agent's final answer must match, and its validation.

A pydantic model validates with pydantic and gives the model instance back; a JSON-schema
dict validates with jsonschema (`tools.schema_check`). Either way the answer is first read
with `core.json_text` (a value nested more than MAX_DEPTH deep is refused like invalid JSON:
the model is told and asked again), so no answer can crash a later step that walks it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ValidationError

from ..core.error_codes import ErrorCode
from ..core.errors import AdkError
from ..core.json_text import JsonTooDeep, check_depth, parse_json
from ..tools.schema import model_json_schema
from ..tools.schema_check import JsonSchemaCheck

__all__ = ["OutputSchema"]

_FENCE = re.compile(r"^\s*```(?:json)?\s*\n?(.*?)\n?```\s*$", re.DOTALL)


class OutputSchema:
    """A pydantic model class or a JSON schema dict, ready to check answers against.

    Raises:
        AdkError: `invalid_output_schema` for another kind of value, `invalid_schema` for a
            dict that is not valid JSON Schema.
    """

    def __init__(self, schema: type[BaseModel] | dict[str, Any]) -> None:
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            self.model: type[BaseModel] | None = schema
        elif isinstance(schema, dict):
            self.model = None
        else:
            raise AdkError.config(
                f"output_schema must be a pydantic model class or a JSON schema dict, got {type(schema).__name__}.",
                code=ErrorCode.INVALID_OUTPUT_SCHEMA,
            )
        self.json_schema = model_json_schema(schema)
        self._check = None if self.model is not None else JsonSchemaCheck(self.json_schema, root="(root)")

    def instruction(self) -> str:
        """The line added to the system instruction, for providers that do not enforce schemas."""
        return "Reply with only a JSON object (no prose, no code fences) that matches this JSON schema:\n" + json.dumps(
            self.json_schema, ensure_ascii=False
        )

    def validate(self, text: str) -> Any:
        """Parse and check an answer; raise ValueError with a message the model can act on."""
        match = _FENCE.match(text)
        raw = match.group(1) if match else text
        try:
            value = parse_json(raw)
            check_depth(value)
        except JsonTooDeep as exc:
            raise ValueError(f"the answer is not usable JSON: {exc}; reply with a flatter object") from None
        except json.JSONDecodeError as exc:
            if self.model is None:
                raise ValueError(f"the answer is not valid JSON ({exc.msg} at position {exc.pos})") from None
            # for a pydantic model, pydantic (below) says what is wrong with the text, in its words
        if self.model is not None:  # pydantic reads the text itself, by its JSON-mode rules
            try:
                return self.model.model_validate_json(raw)
            except ValidationError as exc:
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}"
                    for e in exc.errors(include_url=False)
                )
                raise ValueError(problems) from None
        assert self._check is not None  # a dict schema
        found = self._check.problems(value)
        if found:
            raise ValueError("; ".join(found))
        return value

    def dump(self, value: Any) -> Any:
        """A JSON-ready form of a validated value, for session state."""
        return value.model_dump(mode="json") if isinstance(value, BaseModel) else value
