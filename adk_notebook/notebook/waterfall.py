"""A run's trace drawn as a waterfall: one row per span, a bar placed and sized by its time.

A trace is the span tree of `RunResult.trace` as plain data (`Span.to_dict()`, core/trace.py):
each span has `kind` (run, agent, model, tool), `start` and `duration` (seconds; None while it
runs), what it was (`agent`, `model`, `tool`), `input_tokens` / `output_tokens` / `cost` and
`error_type` / `error_message` when known, and `children`. `waterfall_rows` turns it into rows
in the order and nesting of the spans, each bar's offset and width a percentage of the run's
span of time; `waterfall_html` / `waterfall_text` draw them for `%adk trace`, the live view
(redrawn as spans come) and the saved transcript.

Bars are HTML/CSS (no script, no network); every label is escaped: agent and tool names and
error messages are user or model text.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .render import duration_text, escape, fixed, state_html

__all__ = [
    "WaterfallRow",
    "run_html",
    "waterfall_html",
    "waterfall_rows",
    "waterfall_text",
]

_ICONS = {"run": "▶", "agent": "🤖", "model": "💬", "tool": "🔧"}
_COLORS = {
    "run": "var(--jp-brand-color3,#90caf9)",
    "agent": "var(--jp-brand-color2,#64b5f6)",
    "model": "var(--jp-brand-color1,#1976d2)",
    "tool": "var(--jp-success-color1,#388e3c)",
}
_ERROR_COLOR = "var(--jp-error-color1,#d32f2f)"


@dataclass(frozen=True, slots=True)
class WaterfallRow:
    """One span as drawn: `left` and `width` are percentages of the run's time, as text."""

    depth: int
    kind: str
    name: str
    left: str
    width: str
    meta: str
    error: str | None


def _walk(span: dict[str, Any], depth: int = 0) -> Iterator[tuple[int, dict[str, Any]]]:
    yield depth, span
    for child in span.get("children") or ():
        yield from _walk(child, depth + 1)


def _label(span: dict[str, Any]) -> str:
    """What a span was: the agent, the model or the tool, else its OpenTelemetry name (spanLabel)."""
    key = {"run": "agent", "agent": "agent", "model": "model", "tool": "tool"}.get(span.get("kind") or "")
    return str((span.get(key) if key else None) or span.get("name") or "")


def _meta(span: dict[str, Any]) -> str:
    """Latency, tokens and cost of a span, as the live view writes them (fmtSpanMeta)."""
    duration = span.get("duration")
    bits = ["running…" if duration is None else duration_text(duration)]
    tokens_in, tokens_out = span.get("input_tokens"), span.get("output_tokens")
    if tokens_in is not None or tokens_out is not None:
        bits.append(f"{tokens_in or 0:,} in · {tokens_out or 0:,} out")
    if span.get("cost") is not None:
        bits.append(f"${fixed(span['cost'], 4)}")
    return " · ".join(bits)


def waterfall_rows(trace: dict[str, Any]) -> list[WaterfallRow]:
    """The rows of a trace, parents before children; a running span reaches the latest time known."""
    spans = list(_walk(trace))
    t0 = trace["start"]
    ends = [s["start"] + (s.get("duration") or 0.0) for _, s in spans]
    end = max(ends)
    total = end - t0 if end > t0 else 1.0
    rows = []
    for depth, span in spans:
        duration = span.get("duration")
        length = (end - span["start"]) if duration is None else duration
        error = span.get("error_message") or span.get("error_type")
        rows.append(
            WaterfallRow(
                depth=depth,
                kind=str(span.get("kind") or ""),
                name=_label(span),
                left=fixed(max(0.0, (span["start"] - t0) / total * 100), 2),
                width=fixed(max(0.0, length / total * 100), 2),
                meta=_meta(span),
                error=str(error) if error else None,
            )
        )
    return rows


def _row_html(row: WaterfallRow) -> str:
    color = _ERROR_COLOR if row.error else _COLORS.get(row.kind, _COLORS["run"])
    label = (
        f'<div style="padding-left:{row.depth * 14}px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis">'
        f"{_ICONS.get(row.kind, '•')} {escape(row.name)}</div>"
    )
    bar = (
        f'<div style="position:relative;height:14px">'
        f'<div class="adk-wf-bar" data-kind="{escape(row.kind)}" style="position:absolute;top:2px;bottom:2px;'
        f'left:{row.left}%;width:{row.width}%;min-width:2px;background:{color};border-radius:2px"></div></div>'
    )
    meta = f'<div style="opacity:.7;font-size:11px;white-space:nowrap">{escape(row.meta)}</div>'
    error = (
        (
            f'<div style="grid-column:1/-1;padding-left:{row.depth * 14 + 18}px;color:{_ERROR_COLOR};font-size:11px">'
            f"⚠ {escape(row.error)}</div>"
        )
        if row.error
        else ""
    )
    return label + bar + meta + error


def waterfall_html(trace: dict[str, Any], *, collapsed: bool = False) -> str:
    """The waterfall as self-contained, escaped HTML; `collapsed` folds it in a <details> (the saved transcript)."""
    rows = waterfall_rows(trace)
    grid = (
        '<div class="adk-waterfall" data-adk="waterfall" style="display:grid;grid-template-columns:minmax(120px,32%) 1fr auto;'
        'gap:2px 8px;align-items:center;font-size:12px;margin:4px 0">'
        + "".join(_row_html(row) for row in rows)
        + "</div>"
    )
    if not collapsed:
        return grid
    return (
        f'<details class="adk-trace" style="margin-top:4px"><summary style="cursor:pointer;opacity:.7;font-size:12px">'
        f"⏱ Timeline</summary>{grid}</details>"
    )


def waterfall_text(trace: dict[str, Any]) -> str:
    """The waterfall as text: one line per span, indented as the tree, with a bar of 30 columns."""
    lines = []
    for row in waterfall_rows(trace):
        left = min(29, round(float(row.left) * 0.3))
        width = max(1, round(float(row.width) * 0.3))
        bar = (" " * left + "█" * width).ljust(30)[:30]
        label = f"{'  ' * row.depth}{row.name}"
        lines.append(f"{label[:28]:<28} |{bar}| {row.meta}")
        if row.error:
            lines.append(f"{'  ' * row.depth}  ⚠ {row.error}")
    return "\n".join(lines)


def run_html(state: dict[str, Any], streaming: Mapping[int, str] | None = None) -> str:
    """A run as the live view and the saved transcript show it: its parts, and its waterfall
    folded below (the grid is the part "waterfall" the live view replaces as spans come)."""
    trace = state.get("trace")
    return state_html(state, trace=waterfall_html(trace, collapsed=True) if trace else "", streaming=streaming)
