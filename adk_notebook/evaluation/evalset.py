"""google-adk's eval-set files, read and written unchanged.

Two shapes exist: the `.evalset.json` object (`EvalSet` → `eval_cases` → `conversation` of
invocations, genai `Content` dicts inside) and the older `.test.json` list of turns
(`query`, `expected_tool_use` of `tool_name` / `tool_input`, `reference`), which google-adk
reads as one case. Every model here keeps fields it does not know, and `save` writes back only
what was read or set, so a file google-adk wrote comes back as it was. `test_config.json` beside
a file gives its criteria.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError
from pydantic.alias_generators import to_camel, to_snake

from ..core.errors import AdkError

__all__ = [
    "DEFAULT_CRITERIA",
    "EvalCase",
    "EvalContent",
    "EvalPart",
    "EvalSet",
    "IntermediateData",
    "Invocation",
    "InvocationEvent",
    "SessionInput",
    "ToolUse",
    "load_criteria",
]

# google-adk's AgentEvaluator.DEFAULT_CRITERIA, used when no test_config.json says otherwise.
DEFAULT_CRITERIA: dict[str, Any] = {
    "tool_trajectory_avg_score": 1.0,
    "response_match_score": 0.8,
}


class _Model(BaseModel):
    """google-adk's EvalBaseModel (camelCase accepted too), plus: unknown fields are kept."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")


class ToolUse(_Model):
    """A genai `FunctionCall`: one expected or actual tool call."""

    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None


class EvalPart(_Model):
    """A genai `Part`; only text and function calls matter to the metrics."""

    text: str | None = None
    function_call: ToolUse | None = None


class EvalContent(_Model):
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


class InvocationEvent(_Model):
    """One event of an invocation, in google-adk's newer `invocation_events` shape."""

    author: str = ""
    content: EvalContent | None = None


class IntermediateData(_Model):
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


class Invocation(_Model):
    """One user turn and what the agent did about it."""

    invocation_id: str = ""
    user_content: EvalContent
    final_response: EvalContent | None = None
    intermediate_data: IntermediateData | None = None
    creation_timestamp: float = 0.0

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


class SessionInput(_Model):
    """How the case's session starts: app, user and state."""

    app_name: str = ""
    user_id: str = "user"
    state: dict[str, Any] = Field(default_factory=dict)


class EvalCase(_Model):
    """A conversation to replay turn by turn, with what each turn should produce."""

    eval_id: str
    conversation: list[Invocation] = Field(default_factory=list)
    session_input: SessionInput | None = None
    creation_timestamp: float = 0.0


class EvalSet(_Model):
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
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise _error(f"cannot read the eval set {str(path)!r}: {exc.strerror or exc}.") from exc
        except json.JSONDecodeError as exc:
            raise _error(f"{str(path)!r} is not JSON: {exc}.") from exc
        try:
            evalset = _from_old_format(data, path) if isinstance(data, list) else cls.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(to_snake(p) if isinstance(p, str) else str(p) for p in e['loc'])}: {e['msg']}"
                for e in exc.errors(include_url=False)[:5]
            )
            raise _error(f"{str(path)!r} is not a valid google-adk eval set: {problems}.") from exc
        except (KeyError, TypeError, AttributeError) as exc:
            raise _error(
                f"{str(path)!r} is neither google-adk's EvalSet shape nor its older .test.json list: {exc}"
            ) from exc
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


def load_criteria(config: Path) -> dict[str, Any]:
    """The `criteria` of a `test_config.json`, or google-adk's defaults when the file is absent."""
    if not config.exists():
        return dict(DEFAULT_CRITERIA)
    try:
        criteria = json.loads(config.read_text(encoding="utf-8")).get("criteria")
    except (json.JSONDecodeError, AttributeError) as exc:
        raise _error(f"{str(config)!r} is not a JSON object: {exc}.") from exc
    if not isinstance(criteria, dict):
        raise _error(f'{str(config)!r} needs a "criteria" object, e.g. {{"criteria": {DEFAULT_CRITERIA}}}.')
    return criteria


def _from_old_format(turns: list[dict[str, Any]], path: Path) -> EvalSet:
    """google-adk's conversion of a `.test.json` list: one case, one invocation per turn."""
    conversation = [
        Invocation.build(
            turn["query"],
            turn.get("reference", ""),
            [ToolUse(name=t["tool_name"], args=t.get("tool_input") or {}) for t in turn.get("expected_tool_use", [])],
        )
        for turn in turns
    ]
    case = EvalCase(eval_id=str(path), conversation=conversation, creation_timestamp=time.time())
    return EvalSet(eval_set_id=str(uuid.uuid4()), eval_cases=[case], creation_timestamp=time.time())


def _error(message: str) -> AdkError:
    return AdkError("eval", "invalid_input", "invalid_eval_set", message)
