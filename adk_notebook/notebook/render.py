"""How a run looks: the one renderer, for the live view and the saved transcript alike.

`state_html` / `state_text` draw the JSON-ready state that `transcript.Transcript` folds from a
run's events. The live widget (`widgets.run_view`) shows the same HTML: it is sent the parts
and items drawn here (`top_html`, `item_html`, ...) as they change, each in the element whose
`data-adk` attribute names it, and the browser only puts them in place. So the live view and
the transcript saved for nbconvert, GitHub and VS Code cannot drift. A model's turn is
markdown, rendered by `markdown.py`; `table_html` draws the `%adk` tables.

Safety (`safe_text.py`): every string that came from a user, a model or a tool is escaped before
it is part of HTML. Images are inlined only as `<img src="data:...">` with a mime type from
`IMAGE_TYPES` (so an SVG never becomes markup), and a link is made only from a URL `safe_url`
lets through.

No IPython or ipywidgets here: the magics use these functions for `%adk` tables as well.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from .markdown import markdown_to_html
from .safe_text import IMAGE_TYPES, cap, clean_text, error_line, escape, safe_url

__all__ = [
    "IMAGE_TYPES",
    "active_agent",
    "cap",
    "clean_text",
    "cut_note",
    "duration_text",
    "end_html",
    "error_line",
    "escape",
    "fixed",
    "graph_html",
    "graph_svg",
    "item_html",
    "lane_label",
    "markdown_to_html",
    "part",
    "safe_url",
    "size_text",
    "state_html",
    "state_text",
    "stop_html",
    "table_html",
    "top_html",
]


def fixed(x: float, digits: int = 0) -> str:
    """`x` (not negative) to `digits` decimals, a tie rounded up as people round it (Python's
    own formatting rounds a tie to even: 0.5 s would show as "0 s")."""
    return str(Decimal(x).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def size_text(n: int | None) -> str:
    """A byte count as people read it: "512 B", "1.3 KB", "12 KB", "4.2 MB"."""
    if n is None:
        return ""
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{fixed(n / 1024)} KB" if n >= 10 * 1024 else f"{fixed(n / 1024, 1)} KB"
    return f"{fixed(n / (1024 * 1024), 1)} MB"


def duration_text(seconds: float | None) -> str:
    """A duration as people read it: "120 ms", "1.5 s", "2 min 5 s"."""
    if seconds is None:
        return ""
    if seconds < 1:
        return f"{fixed(seconds * 1000)} ms"
    if seconds < 60:
        return f"{fixed(seconds, 1)} s"
    return f"{int(seconds // 60)} min {fixed(seconds % 60)} s"


# -- HTML --------------------------------------------------------------------------------------
_FONT = "font-family:var(--jp-ui-font-family,system-ui,-apple-system,'Segoe UI',sans-serif)"
_MONO = "font-family:var(--jp-code-font-family,ui-monospace,SFMono-Regular,Menlo,Consolas,monospace)"
_BORDER = "1px solid var(--jp-border-color2,rgba(128,128,128,.35))"
_MUTED = "opacity:.7"
_PRE = (
    f"{_MONO};font-size:12px;white-space:pre-wrap;word-break:break-word;margin:4px 0;padding:4px 6px;"
    "background:var(--jp-layout-color2,rgba(128,128,128,.12));border-radius:4px;max-height:24em;overflow:auto"
)
_STATUS_COLOR = {
    "running": "var(--jp-brand-color1,#1976d2)",
    "ok": "var(--jp-success-color1,#388e3c)",
    "done": "var(--jp-success-color1,#388e3c)",
    "error": "var(--jp-error-color1,#d32f2f)",
    "cancelled": "var(--jp-warn-color1,#f57c00)",
    "unanswered": "var(--jp-warn-color1,#f57c00)",
}


def _badge(status: str) -> str:
    color = _STATUS_COLOR.get(status, "inherit")
    return (
        f'<span style="color:{color};border:1px solid currentColor;border-radius:8px;padding:0 6px;'
        f'font-size:11px">{escape(status)}</span>'
    )


def _media_html(media: dict[str, Any]) -> str:
    kind = media.get("k")
    if kind == "image" and media.get("mime") in IMAGE_TYPES:
        src = f"data:{media['mime']};base64,{media['data']}"
        return (
            f'<div><img src="{escape(src)}" alt="{escape(media["mime"])} image" '
            'style="max-width:100%;max-height:480px;border-radius:4px;margin:4px 0"></div>'
        )
    size = size_text(media.get("size"))
    if kind == "pdf":
        href = media.get("href")
        if href is None and media.get("data"):
            href = f"data:application/pdf;base64,{media['data']}"
        label = "PDF" + (f", {size}" if size else "")
        name = escape(media.get("name") or "document.pdf")
        if href and safe_url(href):
            download = f' download="{name}"' if href.startswith("data:") else ""
            return (
                f'<div>📄 <a href="{escape(href)}" target="_blank" rel="noopener noreferrer"{download}>{name}</a> '
                f'<span style="{_MUTED}">({label})</span></div>'
            )
        uri = media.get("uri")
        where = f" {escape(uri)}" if uri and uri != media.get("name") else ""
        note = ", not a link" if uri else ", not embedded"
        return f'<div>📄 {name} <span style="{_MUTED}">({label}{note}){where}</span></div>'
    href = safe_url(media.get("href"))
    desc = escape(media.get("mime") or "file") + (f", {size}" if size else "")
    if href:
        return (
            f'<div>📎 <a href="{escape(href)}" target="_blank" rel="noopener noreferrer">'
            f'{escape(media.get("name") or href)}</a> <span style="{_MUTED}">({desc})</span></div>'
        )
    where = escape(media.get("uri") or media.get("name") or "")
    return f'<div>📎 {where} <span style="{_MUTED}">({desc}, not shown)</span></div>'


def _tool_html(card: dict[str, Any], target: str) -> str:
    meta = []
    if card.get("duration") is not None:
        meta.append(duration_text(card["duration"]))
    if card.get("attempts"):
        meta.append(f"attempt {card['attempts']}" if card["attempts"] == 1 else f"{card['attempts']} attempts")
    if card.get("long_running"):
        meta.append("long-running")
    parts = [
        f'<div style="border:{_BORDER};border-radius:6px;margin:6px 0;padding:4px 8px">',
        f'<div><span style="{_MONO};font-weight:600">🔧 {escape(card.get("name", ""))}</span> {_badge(card.get("status", ""))}'
        + (f' <span style="{_MUTED};font-size:12px">{escape(" · ".join(meta))}</span>' if meta else "")
        + "</div>",
    ]
    if card.get("args") not in (None, "", "{}"):
        parts.append(f'<pre style="{_PRE}">{escape(card["args"])}</pre>')
    if card.get("error"):
        parts.append(f'<div style="color:{_STATUS_COLOR["error"]}">⚠ {escape(card["error"])}</div>')
    if card.get("log"):
        dropped = card.get("log_dropped") or 0
        note = (
            f'<div style="{_MUTED};font-size:11px">… {dropped:,} earlier characters not shown</div>' if dropped else ""
        )
        parts.append(f'{note}<pre data-adk="{target}.log" style="{_PRE}">{escape(card["log"])}</pre>')
    if card.get("result") is not None:
        parts.append(
            f'<details><summary style="cursor:pointer;{_MUTED};font-size:12px">result</summary>'
            f'<pre style="{_PRE}">{escape(card["result"])}</pre></details>'
        )
    if card.get("traceback"):
        parts.append(
            f'<details><summary style="cursor:pointer;{_MUTED};font-size:12px">traceback</summary>'
            f'<pre style="{_PRE}">{escape(card["traceback"])}</pre></details>'
        )
    parts.extend(_media_html(m) for m in card.get("media") or ())
    if card.get("inner"):
        parts.append(_inner_html(card["inner"]))
    parts.append("</div>")
    return "".join(parts)


def _native_html(item: dict[str, Any], target: str) -> str:
    """Thoughts (collapsed), code the provider ran with its output, and what a search grounded the answer on."""
    summary = f'<summary style="cursor:pointer;{_MUTED};font-size:12px">'
    kind = item.get("k")
    if kind == "thoughts":
        return (
            f'<details class="adk-thoughts" style="margin:4px 0">{summary}💭 {"thoughts" if item.get("done", True) else "thinking…"}</summary>'
            f'<div data-adk="{target}.text" style="white-space:pre-wrap;{_MUTED};font-size:12px">'
            f"{escape(item.get('text') or '')}</div></details>"
        )
    if kind == "code":
        language = f" ({escape(item['language'])})" if item.get("language") else ""
        parts = [
            f'<div class="adk-code" style="border:{_BORDER};border-radius:6px;margin:6px 0;padding:4px 8px">',
            f'<div style="{_MUTED};font-size:12px">▶ code the model ran{language}</div>',
        ]
        if item.get("code"):
            parts.append(f'<pre style="{_PRE}">{escape(item["code"])}</pre>')
        if item.get("outcome"):
            parts.append(
                f'<div style="{_MUTED};font-size:12px">{escape(item["outcome"])}</div>'
                f'<pre style="{_PRE}">{escape(item.get("output") or "")}</pre>'
            )
        return "".join(parts) + "</div>"
    sources = item.get("sources") or []
    links = []
    for source in sources:
        label = escape(source.get("title") or source.get("uri") or "")
        href = source.get("href")
        links.append(
            f'<li><a href="{escape(href)}" target="_blank" rel="noopener noreferrer">{label}</a></li>'
            if href
            else f"<li>{label}</li>"
        )
    parts = ['<div class="adk-grounding" style="font-size:12px;margin:4px 0">']
    if item.get("queries"):
        parts.append(f'<div style="{_MUTED}">🔎 searched: {escape(" · ".join(item["queries"]))}</div>')
    if links:
        parts.append(f'<ol style="margin:2px 0;padding-left:20px">{"".join(links)}</ol>')
    if item.get("citations"):
        rows = "".join(
            f"<li>“{escape(c['text'])}” {escape(''.join(f'[{n + 1}]' for n in c['sources']))}</li>"
            for c in item["citations"]
        )
        parts.append(
            f'<details>{summary}citations</summary><ul style="margin:2px 0;padding-left:20px">{rows}</ul></details>'
        )
    return "".join(parts) + "</div>"


def lane_label(item: dict[str, Any]) -> str:
    """The header of an agent's lane: its name, and the parallel branch it runs in."""
    return f"▸ {item.get('author') or 'agent'}" + (f" · {item['branch']}" if item.get("branch") else "")


def _inner_html(inner: Sequence[Sequence[str]]) -> str:
    """What the agent behind an AgentTool said and called, inside that tool's card."""
    rows = "".join(
        f'<div class="adk-inner"><span style="{_MUTED};font-weight:600">{escape(author)}:</span> '
        f'<span style="white-space:pre-wrap">{escape(text)}</span></div>'
        for author, text in inner
    )
    return f'<div style="border-left:2px solid {_STATUS_COLOR["running"]};padding-left:6px;margin:4px 0">{rows}</div>'


def item_html(item: dict[str, Any], index: int, markdown: str | None = None) -> str:
    """Item `index` of a run's body, in the element the live view knows it by (`data-adk="i3"`;
    a turn's markdown in "i3.md", streamed thoughts in "i3.text", a tool's log in "i3.log").
    `markdown`: a streaming turn's HTML as sent so far (view_ops.py), instead of its text's."""
    kind = str(item.get("k"))
    target = f"i{index}"
    return f'<div class="adk-item adk-{escape(kind)}" data-adk="{target}">{_item_body(item, target, markdown)}</div>'


def _item_body(item: dict[str, Any], target: str, markdown: str | None) -> str:
    kind = item.get("k")
    if kind in ("thoughts", "code", "grounding"):
        return _native_html(item, target)
    if kind == "text":
        html = markdown_to_html(item["text"]) if markdown is None else markdown
        return f'<div class="adk-text" data-adk="{target}.md" style="margin:4px 0">{html}</div>'
    if kind == "tool":
        return _tool_html(item, target)
    if kind == "user":
        return f'<div style="margin:4px 0"><span style="{_MUTED}">you:</span> {escape(item["text"])}</div>'
    if kind == "media":
        return "".join(_media_html(m) for m in item.get("media") or ())
    if kind == "state":
        rows = [
            f'<code style="{_MONO}">{escape(k)}</code> = <code style="{_MONO}">{escape(v)}</code>'
            for k, v in item.get("delta") or ()
        ]
        rows += [
            f'artifact <code style="{_MONO}">{escape(k)}</code> v{escape(v)}' for k, v in item.get("artifacts") or ()
        ]
        if item.get("transfer"):
            rows.append(f"→ transfer to {escape(item['transfer'])}")
        return f'<div style="font-size:12px;margin:2px 0"><span style="{_MUTED}">state:</span> {" · ".join(rows)}</div>'
    if kind == "error":
        return f'<div style="color:{_STATUS_COLOR["error"]};margin:4px 0">⚠ {escape(item["message"])}</div>'
    if kind == "lane":
        return (
            f'<div class="adk-lane" style="font-weight:600;margin:8px 0 2px;padding-top:4px;'
            f'border-top:{_BORDER}">{escape(lane_label(item))}</div>'
        )
    if kind == "cut":
        return (
            f'<div class="adk-cut" style="color:{_STATUS_COLOR["cancelled"]};font-size:12px;margin:2px 0">'
            f"{escape(cut_note(item.get('tokens')))}</div>"
        )
    return ""


# -- the agent graph (graph.py lays it out) ---------------------------------------------------
EDGE_DASHES = {"transfer": "5,4", "agent_tool": "1,3"}  # solid: a sub-agent or a tool


def graph_svg(lay: dict[str, Any], *, active: str | None = None) -> str:
    """An agent graph's layout (`graph.layout`) as one inline `<svg>`; agent `active`'s box is marked."""
    w, h = lay["node_w"], lay["node_h"]
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="adk-graph" width="{lay["width"]}" height="{lay["height"]}" '
        f'viewBox="0 0 {lay["width"]} {lay["height"]}" role="img" aria-label="agent graph" '
        'style="font-family:var(--jp-ui-font-family,system-ui,sans-serif);font-size:12px">'
        '<defs><marker id="adk-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#888"/></marker></defs>'
    )
    out = [head]
    for e in lay["edges"]:
        dash = f' stroke-dasharray="{EDGE_DASHES[e["kind"]]}"' if e["kind"] in EDGE_DASHES else ""
        out.append(
            f'<path class="adk-edge adk-edge-{escape(e["kind"])}" d="{escape(e["d"])}" fill="none" stroke="#888"'
            f'{dash} marker-end="url(#adk-arrow)"/>'
        )
    for n in lay["nodes"]:
        running = active is not None and n["agent"] == active
        fill = lay["colors"].get(n["kind"], "#eee")
        stroke = ' stroke="#1976d2" stroke-width="3"' if running else ' stroke="#999" stroke-width="1"'
        agent = f' data-agent="{escape(n["agent"])}"' if n["agent"] else ""
        out.append(
            f'<g class="adk-node{" adk-active" if running else ""}"{agent}><title>{escape(n["label"])} '
            f"({escape(n['kind'])})</title>"
            f'<rect x="{n["x"]}" y="{n["y"]}" width="{w}" height="{h}" rx="{6 if n["agent"] else 2}" '
            f'fill="{escape(fill)}"{stroke}/>'
            f'<text x="{n["x"] + w / 2:g}" y="{n["y"] + 16}" text-anchor="middle" fill="#222" '
            f'font-weight="600">{escape(n["short"])}</text>'
            f'<text x="{n["x"] + w / 2:g}" y="{n["y"] + 30}" text-anchor="middle" fill="#666" '
            f'font-size="10">{escape(n["kind"])}</text></g>'
        )
    out.append("</svg>")
    return "".join(out)


def active_agent(state: dict[str, Any]) -> str | None:
    """The agent running now: the latest lane's, or the agent behind a running AgentTool card,
    else the run's; None once the run is over."""
    if state.get("status") != "running":
        return None
    for item in reversed(state.get("items") or ()):
        if item.get("k") == "lane":
            return item.get("author")
        if item.get("k") == "tool" and item.get("status") == "running" and item.get("inner"):
            return item["inner"][-1][0]
    return state.get("agent")


def cut_note(tokens: int | None) -> str:
    """The marker of an answer that the token limit cut."""
    at = f"at {tokens:,} tokens" if tokens else "at the token limit"
    return f"✂ cut {at}: the answer reached max_output_tokens"


def _footer(state: dict[str, Any]) -> str:
    bits = []
    if state.get("elapsed") is not None:
        bits.append(duration_text(state["elapsed"]))
    usage = state.get("usage")
    if usage:
        thinking = f" ({usage['thoughts']:,} thinking)" if usage.get("thoughts") else ""
        bits.append(f"tokens: {usage['input']:,} in · {usage['output']:,} out{thinking} · {usage['total']:,} total")
    return " · ".join(bits)


def top_html(state: dict[str, Any]) -> str:
    """The run's head (agent, model, status, time and tokens), its notice and its prompt: the
    part "top". A running run's head shows the seconds since it started (`data-adk-since`: the
    one thing the live view updates by itself, each second)."""
    model = state.get("model")
    who = f'<code class="adk-model" style="{_MONO};font-size:12px;{_MUTED}">{escape(model)}</code>' if model else ""
    since = (
        f'<span data-adk-since="{state["started_at"]:.3f}" style="{_MUTED};font-size:12px"></span>'
        if state.get("status") == "running" and state.get("started_at")
        else ""
    )
    parts = [
        f'<div style="display:flex;gap:8px;align-items:center;margin-bottom:4px">'
        f"<strong>{escape(state.get('agent') or 'agent')}</strong>{who}{_badge(state.get('status') or '')}"
        f'{since}<span style="{_MUTED};font-size:12px">{escape(_footer(state))}</span></div>'
    ]
    if state.get("notice"):
        parts.append(
            f'<div class="adk-notice" style="{_MUTED};font-size:12px;margin:2px 0">ℹ {escape(state["notice"])}</div>'
        )
    if state.get("prompt"):
        parts.append(
            f'<div style="margin:4px 0;padding:4px 8px;border-left:3px solid {_STATUS_COLOR["running"]};'
            f'white-space:pre-wrap">{escape(state["prompt"])}</div>'
        )
    return "".join(parts)


def stop_html(state: dict[str, Any]) -> str:
    """The Stop button, while the run goes on: the part "stop"."""
    if state.get("status") != "running":
        return ""
    return (
        '<button type="button" data-adk-action="stop" title="Cancel this run" style="font:inherit;font-size:12px;'
        f"padding:1px 10px;cursor:pointer;color:{_STATUS_COLOR['error']};background:transparent;"
        'border:1px solid currentColor;border-radius:4px">■ Stop</button>'
    )


def graph_html(state: dict[str, Any]) -> str:
    """A multi-agent run's agent graph, the running agent marked: the part "graph"."""
    if not state.get("graph"):
        return ""
    return (
        f'<div class="adk-graph-box" style="overflow-x:auto;margin:4px 0">'
        f"{graph_svg(state['graph'], active=active_agent(state))}</div>"
    )


def end_html(state: dict[str, Any]) -> str:
    """What ended the run badly, if anything: the part "end"."""
    if not state.get("error"):
        return ""
    return f'<div style="color:{_STATUS_COLOR["error"]};margin-top:4px">⚠ {escape(state["error"])}</div>'


_PART_STYLES = {"stop": ' style="position:absolute;top:6px;right:10px"'}  # the Stop button, top right


def part(name: str, html: str) -> str:
    """`html` in the element the live view knows part `name` by."""
    return f'<div data-adk="{name}"{_PART_STYLES.get(name, "")}>{html}</div>'


def state_html(state: dict[str, Any], *, trace: str = "", streaming: Mapping[int, str] | None = None) -> str:
    """A run's state (`Transcript.state()`) as self-contained, escaped HTML, in parts the live
    view replaces as they change (top, stop, graph, body, end, trace); `trace` is the run's
    waterfall (waterfall.py), folded below it; `streaming`: the HTML sent so far of the turns
    still streaming, by item (a live view's snapshot)."""
    streaming = streaming or {}
    body = "".join(item_html(item, index, streaming.get(index)) for index, item in enumerate(state.get("items") or ()))
    return "".join(
        (
            f'<div class="adk-run" style="{_FONT};font-size:13px;line-height:1.45;border:{_BORDER};'
            f'border-radius:8px;padding:6px 10px;margin:2px 0;position:relative">',
            part("top", top_html(state)),
            part("stop", stop_html(state)),
            part("graph", graph_html(state)),
            part("body", body),
            part("end", end_html(state)),
            part("trace", trace),
            "</div>",
        )
    )


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + ln for ln in text.splitlines())


def _media_text(media: dict[str, Any]) -> str:
    size = size_text(media.get("size"))
    if media.get("k") == "image":
        return f"[image {media['mime']}{', ' + size if size else ''}]"
    where = media.get("href") or media.get("uri") or media.get("name") or ""
    label = "PDF" if media.get("k") == "pdf" else (media.get("mime") or "file")
    return f"[{label}{', ' + size if size else ''}] {where}".rstrip()


def state_text(state: dict[str, Any]) -> str:
    """A run's state as plain text (text/plain, logs, terminals)."""
    footer = " · ".join(b for b in (f"model {state['model']}" if state.get("model") else "", _footer(state)) if b)
    lines = [f"[{state.get('agent') or 'agent'}] {state.get('status')}" + (f" · {footer}" if footer else "")]
    if state.get("notice"):
        lines.append(f"ℹ {state['notice']}")
    if state.get("prompt"):
        lines.append(_indent(state["prompt"], "> "))
    for item in state.get("items") or ():
        kind = item.get("k")
        if kind == "text":
            lines.append(item["text"])
        elif kind == "user":
            lines.append(_indent(item["text"], "> "))
        elif kind == "tool":
            meta = [item["status"]] + ([duration_text(item["duration"])] if item.get("duration") is not None else [])
            if item.get("attempts") and item["attempts"] > 1:
                meta.append(f"{item['attempts']} attempts")
            lines.append(f"tool {item['name']}({item['args']}) → {' · '.join(meta)}")
            if item.get("error"):
                lines.append(f"    error: {item['error']}")
            if item.get("traceback"):
                lines.append(_indent(item["traceback"], "    ! "))
            if item.get("log"):
                lines.append(_indent(item["log"].rstrip("\n")[-2000:], "    | "))
            if item.get("result") is not None:
                lines.append("    result: " + " ".join(cap(item["result"], 300).split()))
            lines.extend("    " + _media_text(m) for m in item.get("media") or ())
            lines.extend(_indent(f"{author}: {text}", "    » ") for author, text in item.get("inner") or ())
        elif kind == "lane":
            lines.append(lane_label(item))
        elif kind == "media":
            lines.extend(_media_text(m) for m in item.get("media") or ())
        elif kind == "state":
            pairs = [f"{k} = {v}" for k, v in item.get("delta") or ()]
            pairs += [f"artifact {k} v{v}" for k, v in item.get("artifacts") or ()]
            if item.get("transfer"):
                pairs.append(f"transfer to {item['transfer']}")
            lines.append("state: " + "; ".join(pairs))
        elif kind == "error":
            lines.append(f"error: {item['message']}")
        elif kind == "cut":
            lines.append(cut_note(item.get("tokens")))
        elif kind in ("thoughts", "code", "grounding"):
            lines.extend(_native_text(item))
    if state.get("error"):
        lines.append(f"error: {state['error']}")
    return clean_text("\n".join(lines))


def _native_text(item: dict[str, Any]) -> list[str]:
    kind = item.get("k")
    if kind == "thoughts":
        return ["thoughts:", _indent(item.get("text") or "", "    ~ ")]
    if kind == "code":
        lines = [f"code the model ran ({item.get('language') or 'code'}):", _indent(item.get("code") or "", "    | ")]
        if item.get("outcome"):
            lines += [f"    → {item['outcome']}", _indent(item.get("output") or "", "    | ")]
        return lines
    lines = [f"searched: {'; '.join(item['queries'])}"] if item.get("queries") else []
    lines += [
        f"  [{n}] {s.get('title') or ''} {s.get('uri') or ''}".rstrip()
        for n, s in enumerate(item.get("sources") or [], 1)
    ]
    lines += [f"  “{c['text']}” " + "".join(f"[{n + 1}]" for n in c["sources"]) for c in item.get("citations") or []]
    return lines


def table_html(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A small escaped HTML table (for `%adk tools`, `%adk sessions`...)."""
    cell = f"padding:2px 8px;text-align:left;vertical-align:top;border-bottom:{_BORDER}"
    head = "".join(f'<th style="{cell}">{escape(h)}</th>' for h in headers)
    body = "".join("<tr>" + "".join(f'<td style="{cell}">{escape(v)}</td>' for v in row) + "</tr>" for row in rows)
    return f'<table style="{_FONT};font-size:13px;border-collapse:collapse"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
