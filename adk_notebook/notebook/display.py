"""What the magics return: a `Display` (escaped HTML for notebooks, plain text for everything
else), the titled `Table` most of `%adk` is made of, and the short labels they share.

A magic returns one of these rather than printing, so Out[] shows it in whichever form the
front end wants and a test reads `.text` without a shell.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..agents.base import Agent
from ..models.base import Llm
from ..models.registry import describe, model_id
from .render import escape, table_html

__all__ = [
    "Display",
    "Table",
    "agent_model_label",
    "instruction_text",
    "json_text",
    "model_label",
    "one_line",
    "pre_html",
]


class Display:
    """Something the magics return: HTML (escaped) for notebooks, plain text for everything else."""

    def __init__(self, html: str, text: str) -> None:
        self.html = html
        self.text = text

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": self.text, "text/html": self.html}

    def __repr__(self) -> str:
        return self.text


class Table(Display):
    """A titled table: `render.table_html` for HTML, aligned columns for text."""

    def __init__(self, title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]], note: str = "") -> None:
        self.title, self.headers, self.rows = title, list(headers), [[_cell(v) for v in row] for row in rows]
        body = table_html(self.headers, self.rows) if self.rows else ""
        html = (
            f"<div><b>{escape(title)}</b>{body}"
            + (f'<div style="opacity:.7">{escape(note)}</div>' if note else "")
            + "</div>"
        )
        super().__init__(html, _text_table(title, self.headers, self.rows, note))


def _cell(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=repr)


def _text_table(title: str, headers: list[str], rows: list[list[str]], note: str) -> str:
    lines = [title]
    if rows:
        short = [[one_line(v, 60) for v in row] for row in rows]
        widths = [max(len(h), *(len(r[i]) for r in short)) for i, h in enumerate(headers)]
        lines.append("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
        lines.extend("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=False)).rstrip() for r in short)
    if note:
        lines.append(note)
    return "\n".join(lines)


def one_line(text: str, limit: int) -> str:
    """`text` on one line (whitespace runs made one space), cut to `limit` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def pre_html(value: Any) -> str:
    """A string, or a value as indented JSON (long strings shortened), in an escaped <pre>."""
    text = value if isinstance(value, str) else json_text(value)
    return f'<pre style="white-space:pre-wrap;margin:2px 0 8px">{escape(text)}</pre>'


def json_text(value: Any) -> str:
    """`value` as indented JSON, long strings shortened."""
    return json.dumps(_shorten(value), indent=2, ensure_ascii=False, default=repr)


def _shorten(value: Any, limit: int = 2000) -> Any:
    """Long strings (base64 images...) cut for display; the structure stays."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:200]}… ({len(value) - 200} more characters)"
    if isinstance(value, dict):
        return {k: _shorten(v, limit) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_shorten(v, limit) for v in value]
    return value


def model_label(model: Any, resolved: Llm | None = None) -> str:
    """A model as one short label that says who answers: a model string with the model it makes
    ("auto → gemini-2.5-flash"; `resolved` when it is made already), or `ClassName('id')`."""
    if model is None:
        return "(none)"
    if isinstance(model, str):
        concrete = model_id(resolved) if resolved is not None else describe(model)
        return model if concrete in (None, model) else f"{model} → {concrete}"
    name = model_id(model) if isinstance(model, Llm) else getattr(model, "name", "")
    return f"{type(model).__name__}({name!r})"


def agent_model_label(agent: Any) -> str:
    """`model_label` of an agent's model, with the model it resolved to if it did (the one that answers)."""
    return model_label(getattr(agent, "model", None), getattr(agent, "_resolved_model", None))


def instruction_text(agent: Agent) -> str:
    """An agent's instruction when it is a string; a placeholder for an instruction provider."""
    instruction = getattr(agent, "instruction", "")
    return instruction if isinstance(instruction, str) else "(instruction provider)"
