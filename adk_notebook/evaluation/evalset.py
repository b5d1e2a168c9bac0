"""google-adk's eval-set files, read and written unchanged.

Two shapes exist: the `.evalset.json` object (`EvalSet` → `eval_cases` → `conversation` of
invocations, genai `Content` dicts inside) and the older `.test.json` list of turns
(`query`, `expected_tool_use` of `tool_name` / `tool_input`, `reference`), which google-adk
reads as one case. Every model here keeps fields it does not know, and `save` writes back only
what was read or set, so a file google-adk wrote comes back as it was. `test_config.json` beside
a file gives its criteria (`criteria.py`). A damaged file is an AdkError with one line per
problem, naming the file, the case and the field.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

from pydantic import Field, PrivateAttr, TypeAdapter, ValidationError, field_validator

from ..core.errors import AdkError
from ..core.json_text import json_kind
from ._files import FileModel, Loc, field_path, problem_lines, read_json
from .criteria import DEFAULT_CRITERIA, load_criteria

__all__ = [
    "EvalCase",
    "EvalContent",
    "EvalPart",
    "EvalSet",
    "IntermediateData",
    "Invocation",
    "InvocationEvent",
    "SessionInput",
    "ToolUse",
]


class ToolUse(FileModel):
    """A genai `FunctionCall`: one expected or actual tool call."""

    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None


class EvalPart(FileModel):
    """A genai `Part`; only text and function calls matter to the metrics."""

    text: str | None = None
    function_call: ToolUse | None = None


class EvalContent(FileModel):
    """A genai `Content`: a role and its parts."""

    role: str | None = None
    parts: list[EvalPart] = Field(default_factory=list)

    @classmethod
    def from_text(cls, text: str, role: str) -> EvalContent:
        return cls(role=role, parts=[EvalPart(text=text)])

    @property
    def text(self) -> str:
        """The text parts joined with newlines, as google-adk's evaluators read a response."""
        return "\n".join(p.text for p in self.parts if p.text)


class InvocationEvent(FileModel):
    """One event of an invocation, in google-adk's newer `invocation_events` shape."""

    author: str = ""
    content: EvalContent | None = None


class IntermediateData(FileModel):
    """What happened between the user's turn and the answer, in either of google-adk's shapes:
    `tool_uses` (+ `intermediate_responses`), or `invocation_events`."""

    tool_uses: list[ToolUse] = Field(default_factory=list)
    intermediate_responses: list[Any] = Field(default_factory=list)
    invocation_events: list[InvocationEvent] = Field(default_factory=list)

    @property
    def tool_calls(self) -> list[ToolUse]:
        """The calls in order, from whichever shape the file used."""
        if not self.invocation_events:
            return self.tool_uses
        parts = (p for e in self.invocation_events if e.content is not None for p in e.content.parts)
        return [p.function_call for p in parts if p.function_call is not None]


class Invocation(FileModel):
    """One user turn and what the agent did about it."""

    invocation_id: str = ""
    user_content: EvalContent
    final_response: EvalContent | None = None
    intermediate_data: IntermediateData | None = None
    creation_timestamp: float = 0.0

    @field_validator("user_content")
    @classmethod
    def _has_a_message(cls, content: EvalContent) -> EvalContent:
        if not content.parts:  # nothing to replay: the case would send the agent an empty turn
            raise ValueError('has no parts: the user\'s message goes there, e.g. {"parts": [{"text": "Hi"}]}')
        return content

    @classmethod
    def build(
        cls,
        user: str,
        response: str | None = None,
        tool_uses: list[ToolUse] | None = None,
    ) -> Invocation:
        """A new invocation from plain values (a fresh id and timestamp, as google-adk writes them)."""
        return cls(
            invocation_id=str(uuid.uuid4()),
            user_content=EvalContent.from_text(user, "user"),
            final_response=None if response is None else EvalContent.from_text(response, "model"),
            intermediate_data=IntermediateData(tool_uses=tool_uses or []),
            creation_timestamp=time.time(),
        )

    @property
    def user_text(self) -> str:
        return self.user_content.text

    @property
    def response_text(self) -> str:
        return self.final_response.text if self.final_response is not None else ""

    @property
    def tool_uses(self) -> list[ToolUse]:
        return self.intermediate_data.tool_calls if self.intermediate_data is not None else []


class SessionInput(FileModel):
    """How the case's session starts: app, user and state."""

    app_name: str = ""
    user_id: str = "user"
    state: dict[str, Any] = Field(default_factory=dict)


class EvalCase(FileModel):
    """A conversation to replay turn by turn, with what each turn should produce."""

    eval_id: str
    conversation: list[Invocation] = Field(default_factory=list)
    session_input: SessionInput | None = None
    creation_timestamp: float = 0.0


class EvalSet(FileModel):
    """A set of eval cases: `EvalSet.load(path)` / `evalset.save(path)`.

    `criteria` holds what `test_config.json` beside the loaded file says (google-adk's
    defaults when there is none); `evaluate` uses it when given no criteria of its own.
    """

    eval_set_id: str
    name: str | None = None
    description: str | None = None
    eval_cases: list[EvalCase] = Field(default_factory=list)
    creation_timestamp: float = 0.0
    _criteria: dict[str, Any] = PrivateAttr(default_factory=lambda: dict(DEFAULT_CRITERIA))

    @property
    def criteria(self) -> dict[str, Any]:
        return self._criteria

    @classmethod
    def load(cls, path: str | Path) -> EvalSet:
        """Read an `.evalset.json` or an older `.test.json` file, and `test_config.json` beside it."""
        path = Path(path)
        data = read_json(path, "eval set", _error)
        name = repr(str(path))
        try:
            if isinstance(data, list):
                evalset = _from_old_format(data, path)
            elif isinstance(data, dict):
                evalset = cls.model_validate(data)
            else:
                raise _error(
                    f"{name} holds {json_kind(data)} at the top level; an eval set is google-adk's EvalSet "
                    'object ({"eval_set_id": ..., "eval_cases": [...]}) or the older .test.json list of turns.'
                )
        except ValidationError as exc:
            lines = problem_lines(exc, lambda loc: _place(name, data, loc))
            raise _error("\n".join(lines)) from None
        evalset._criteria = load_criteria(path.parent / "test_config.json")
        return evalset

    def save(self, path: str | Path) -> Path:
        """Write the set in google-adk's EvalSet shape (what `adk eval` and AgentEvaluator read)."""
        path = Path(path)
        data = self.model_dump(mode="json", exclude_unset=True)
        path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return path

    def add_case(self, case: EvalCase) -> None:
        """Append a case, replacing one with the same `eval_id`."""
        self.eval_cases = [c for c in self.eval_cases if c.eval_id != case.eval_id] + [case]


class _OldToolUse(FileModel):
    tool_name: str
    tool_input: dict[str, Any] | None = None


class _OldTurn(FileModel):
    """A turn of google-adk's older `.test.json` list."""

    query: str
    expected_tool_use: list[_OldToolUse] = Field(default_factory=list)
    reference: str | None = ""


_OLD_TURNS = TypeAdapter(list[_OldTurn])


def _from_old_format(data: list[Any], path: Path) -> EvalSet:
    """google-adk's conversion of a `.test.json` list: one case, one invocation per turn."""
    conversation = [
        Invocation.build(
            turn.query,
            turn.reference,
            [ToolUse(name=t.tool_name, args=t.tool_input or {}) for t in turn.expected_tool_use],
        )
        for turn in _OLD_TURNS.validate_python(data)
    ]
    case = EvalCase(eval_id=str(path), conversation=conversation, creation_timestamp=time.time())
    return EvalSet(eval_set_id=str(uuid.uuid4()), eval_cases=[case], creation_timestamp=time.time())


def _place(name: str, data: Any, loc: Loc) -> tuple[str, str]:
    """Where a problem is: the file and the case (its eval_id, else its number) or the turn of a
    `.test.json`, and the field's path inside it."""
    if isinstance(data, list) and loc and isinstance(loc[0], int):
        return f"{name}: turn {loc[0] + 1}: ", field_path(loc[1:])
    if len(loc) >= 2 and loc[0] in ("eval_cases", "evalCases") and isinstance(loc[1], int):
        cases = data.get("eval_cases", data.get("evalCases"))
        case = cases[loc[1]] if isinstance(cases, list) else None
        eval_id = case.get("eval_id", case.get("evalId")) if isinstance(case, dict) else None
        label = repr(eval_id) if isinstance(eval_id, str) else f"#{loc[1] + 1}"
        return f"{name}: case {label}: ", field_path(loc[2:])
    return f"{name}: ", field_path(loc)


def _error(message: str) -> AdkError:
    return AdkError("eval", "invalid_input", "invalid_eval_set", message)
