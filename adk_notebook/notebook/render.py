"""How a run looks without a live widget: its state drawn as static HTML and as plain text.

`state_html` / `state_text` draw the JSON-ready state that `transcript.Transcript` folds from a
run's events; the live widget (`widgets.run_view`) keeps the same state and its front end draws
it, and these draw it for nbconvert, GitHub, VS Code and logs. A finished model turn is shown as
markdown (`markdown_to_html`, the same markdown-it as the live view); `table_html` draws the
`%adk` tables.

Safety: every string that came from a user, a model or a tool goes through `html.escape`
before it is part of HTML. Images are inlined only as `<img src="data:...">` with a mime type
from `IMAGE_TYPES` (so an SVG never becomes markup), and a link is made only from an
http(s) URL or a data: URL of an allowed type; a `javascript:` URI stays text. NUL and other
control characters, and lone surrogates, never reach an output, nor does U+FEFF (`clean_text`).

No IPython or ipywidgets here: the magics use these functions for `%adk` tables as well.
"""

from __future__ import annotations

import html
import re
import sys
import unicodedata
from collections.abc import Iterable, Sequence
from decimal import ROUND_HALF_UP, Decimal
from functools import cache
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from ..core.errors import AdkError

__all__ = [
    "IMAGE_TYPES",
    "MARKDOWN",
    "clean_text",
    "cut_note",
    "error_line",
    "active_agent",
    "escape",
    "graph_svg",
    "lane_label",
    "markdown_to_html",
    "punctuation_ranges",
    "safe_url",
    "state_html",
    "state_text",
    "table_html",
]

# Shown inline as <img src="data:...">. SVG is drawn by <img>, where its scripts never run.
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml"})


# C0 and C1 controls but tab, newline and carriage return; DEL; surrogates (only lone ones can
# be in a str). HTML forbids them, a terminal obeys them (an ANSI escape restyles or hides
# text), and no encoder writes a lone surrogate.
_UNSAFE_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


def clean_text(text: str) -> str:
    """`text` with each character no output should carry replaced by U+FFFD (see `_UNSAFE_CHARS`),
    and U+FEFF (a byte-order mark, once the zero width no-break space) as U+2060 WORD JOINER,
    which Unicode gave that meaning: it looks the same, but JavaScript's trim() and \\s take
    U+FEFF for a space and Python's strip() and markdown-it-py do not, so markdown-it in the live
    view and markdown-it-py here would cut a paragraph, a heading or a link differently."""
    return _UNSAFE_CHARS.sub("\ufffd", text).replace("\ufeff", "\u2060")


def escape(value: object) -> str:
    """`value` as text that is safe inside HTML elements and quoted attributes."""
    return html.escape(clean_text(value if isinstance(value, str) else str(value)), quote=True)


def error_line(error: BaseException | str) -> str:
    """One clear line for an error: its message, never a traceback."""
    if isinstance(error, AdkError):
        text = str(error)
    elif isinstance(error, BaseException):
        text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    else:
        text = str(error)
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return cap(line, 500)


_SPACE = " \t\n\r\f\v"  # what safeUrl in run_view.js trims too: ASCII spaces only


def safe_url(url: str | None) -> str | None:
    """`url` when it may become a link (http, https, or data: of an allowed type), else None."""
    if not url:
        return None
    url = url.strip(_SPACE)
    lower = url[:40].lower()
    if lower.startswith(("http://", "https://")):
        return url
    if lower.startswith("data:"):
        mime = lower[5:].split(";", 1)[0].split(",", 1)[0]
        if mime == "application/pdf" or mime in IMAGE_TYPES:
            return url
    return None


def cap(text: str, limit: int) -> str:
    """`text`, cut at `limit` characters with a note of how many more there were."""
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit:,} more characters)"


def _fixed(x: float, digits: int = 0) -> str:
    """`x` (not negative) to `digits` decimals, a tie rounded up, as JavaScript's toFixed and
    Math.round do: Python's own formatting rounds a tie to even, and the live view
    (run_view.js fmtSize, fmtDuration) must show the same digits as the saved transcript."""
    return str(Decimal(x).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def _size(n: int | None) -> str:
    if n is None:
        return ""
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{_fixed(n / 1024)} KB" if n >= 10 * 1024 else f"{_fixed(n / 1024, 1)} KB"
    return f"{_fixed(n / (1024 * 1024), 1)} MB"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds < 1:
        return f"{_fixed(seconds * 1000)} ms"
    if seconds < 60:
        return f"{_fixed(seconds, 1)} s"
    return f"{int(seconds // 60)} min {_fixed(seconds % 60)} s"


# -- markdown ----------------------------------------------------------------------------------
# One markdown for both sides: markdown-it-py here and markdown-it (its original, vendored in
# widgets/vendor at the version markdown-it-py ports) in the live view, which
# `widgets.markdown_library` hands this same description, so a turn looks the same live and
# saved (tests/test_run_view.py).
# No raw HTML, no images (a remote image would load while the notebook is read), links only to
# these schemes, opened in a new tab.
MARKDOWN: dict[str, Any] = {
    "preset": "default",
    "options": {"html": False, "linkify": False, "typographer": False, "breaks": True},
    "disable": ["image"],
    "link_schemes": ["http:", "https:", "mailto:"],
    "link_attrs": {"target": "_blank", "rel": "noopener noreferrer"},
}


class _Markdown(MarkdownIt):
    """markdown-it with MARKDOWN's links (its own rule refuses only javascript:, vbscript:,
    file: and most data: URLs)."""

    def validateLink(self, url: str) -> bool:
        # the URL is normalised by then: percent-encoded ASCII, so lower() is the same as in JS
        return url.lower().startswith(tuple(MARKDOWN["link_schemes"]))


def _link_open(renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    for name, value in MARKDOWN["link_attrs"].items():
        tokens[idx].attrSet(name, value)
    return renderer.renderToken(tokens, idx, options, env)


def _markdown() -> MarkdownIt:
    md = _Markdown("js-" + MARKDOWN["preset"], MARKDOWN["options"]).disable(MARKDOWN["disable"])
    md.add_render_rule("link_open", _link_open)
    return md


_MD = _markdown()


@cache
def punctuation_ranges() -> list[list[int]]:
    """What markdown-it-py takes for punctuation beside `*`, `_` and `~` (Unicode's P and S, as
    this Python's unicodedata has them), as [first, last] code point ranges. The live view's
    markdown-it is handed them (`widgets.markdown_library`): its own table is of another Unicode
    version (15.1 in markdown-it 14.1, 14.0 in Python 3.11), and a character new in between
    would open or close emphasis on one side only."""
    ranges: list[list[int]] = []
    for code in range(sys.maxunicode + 1):
        if unicodedata.category(chr(code))[0] in "PS":
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1][1] = code
            else:
                ranges.append([code, code])
    return ranges


def markdown_to_html(text: str) -> str:
    """A model's finished turn as HTML: markdown (CommonMark, tables, strikethrough) with
    everything else shown as the text it is: raw HTML is escaped, `javascript:` links stay text.
    """
    return _MD.render(clean_text(text))


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
    size = _size(media.get("size"))
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


def _tool_html(card: dict[str, Any]) -> str:
    meta = []
    if card.get("duration") is not None:
        meta.append(_duration(card["duration"]))
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
        parts.append(f'{note}<pre style="{_PRE}">{escape(card["log"])}</pre>')
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


def _native_html(item: dict[str, Any]) -> str:
    """Thoughts (collapsed), code the provider ran with its output, and what a search grounded the answer on."""
    summary = f'<summary style="cursor:pointer;{_MUTED};font-size:12px">'
    kind = item.get("k")
    if kind == "thoughts":
        return (
            f'<details class="adk-thoughts" style="margin:4px 0">{summary}💭 thoughts</summary>'
            f'<div style="white-space:pre-wrap;{_MUTED};font-size:12px">{escape(item.get("text") or "")}</div></details>'
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


def _item_html(item: dict[str, Any]) -> str:
    kind = item.get("k")
    if kind in ("thoughts", "code", "grounding"):
        return _native_html(item)
    if kind == "text":
        body = (
            markdown_to_html(item["text"])
            if item.get("done")
            else (f'<div style="white-space:pre-wrap">{escape(item["text"])}</div>')
        )
        return f'<div class="adk-text" style="margin:4px 0">{body}</div>'
    if kind == "tool":
        return _tool_html(item)
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


# -- the agent graph (graph.py lays it out; run_view.js drawGraph draws the same) --------------
EDGE_DASHES = {"transfer": "5,4", "agent_tool": "1,3"}  # solid: a sub-agent or a tool (as run_view.js)


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
        bits.append(_duration(state["elapsed"]))
    usage = state.get("usage")
    if usage:
        thinking = f" ({usage['thoughts']:,} thinking)" if usage.get("thoughts") else ""
        bits.append(f"tokens: {usage['input']:,} in · {usage['output']:,} out{thinking} · {usage['total']:,} total")
    return " · ".join(bits)


def state_html(state: dict[str, Any], *, after: str = "") -> str:
    """A run's state (`Transcript.state()`) as self-contained, escaped HTML; `after` (HTML made
    here, such as the waterfall.py timeline) closes the run's box."""
    model = state.get("model")
    who = f'<code class="adk-model" style="{_MONO};font-size:12px;{_MUTED}">{escape(model)}</code>' if model else ""
    head = (
        f'<div style="display:flex;gap:8px;align-items:center;margin-bottom:4px">'
        f"<strong>{escape(state.get('agent') or 'agent')}</strong>{who}{_badge(state.get('status') or '')}"
        f'<span style="{_MUTED};font-size:12px">{escape(_footer(state))}</span></div>'
    )
    parts = [
        f'<div class="adk-run" style="{_FONT};font-size:13px;line-height:1.45;border:{_BORDER};'
        f'border-radius:8px;padding:6px 10px;margin:2px 0">',
        head,
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
    if state.get("graph"):
        parts.append(
            f'<div class="adk-graph-box" style="overflow-x:auto;margin:4px 0">'
            f"{graph_svg(state['graph'], active=active_agent(state))}</div>"
        )
    parts.extend(_item_html(item) for item in state.get("items") or ())
    if state.get("error"):
        parts.append(f'<div style="color:{_STATUS_COLOR["error"]};margin-top:4px">⚠ {escape(state["error"])}</div>')
    parts.append(after)
    parts.append("</div>")
    return "".join(parts)


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + ln for ln in text.splitlines())


def _media_text(media: dict[str, Any]) -> str:
    size = _size(media.get("size"))
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
            meta = [item["status"]] + ([_duration(item["duration"])] if item.get("duration") is not None else [])
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
