"""A model's turn as markdown, rendered here with markdown-it-py and never in the browser.

The saved transcript and the live view show the same HTML because only this module makes it.
While an answer streams, `MarkdownStream` cuts it into the blocks the parser has closed (a
paragraph followed by another block, a fenced code block that ended, a heading) and the one
still open, the tail: a closed block goes to the page once, as HTML, and only the tail is
drawn again at each flush. A long answer never flashes from raw text to HTML, and the bytes
sent grow with the answer, not with its square.

Settings: CommonMark with tables and strikethrough; no raw HTML (it is escaped), no images (a
remote image would load while the notebook is read), links only to http(s) and mailto, opened
in a new tab; single newlines are line breaks, as chat answers mean them.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from .safe_text import clean_text

__all__ = ["MarkdownStream", "StreamChange", "markdown_to_html"]

_LINK_SCHEMES = ("http:", "https:", "mailto:")
_LINK_ATTRS = {"target": "_blank", "rel": "noopener noreferrer"}


class _Markdown(MarkdownIt):
    """markdown-it with our link schemes (its own rule refuses only javascript:, vbscript:,
    file: and most data: URLs)."""

    def validateLink(self, url: str) -> bool:
        return url.lower().startswith(_LINK_SCHEMES)  # normalised by then: percent-encoded ASCII


def _link_open(renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    for name, value in _LINK_ATTRS.items():
        tokens[idx].attrSet(name, value)
    return renderer.renderToken(tokens, idx, options, env)


def _markdown() -> MarkdownIt:
    md = _Markdown("js-default", {"html": False, "linkify": False, "typographer": False, "breaks": True})
    md.disable("image")
    md.add_render_rule("link_open", _link_open)
    return md


_MD = _markdown()


def markdown_to_html(text: str) -> str:
    """A model's finished turn as HTML: markdown with everything else shown as the text it is
    (raw HTML is escaped, a `javascript:` link stays text)."""
    return _MD.render(clean_text(text))


class MarkdownStream:
    """One streaming answer, drawn block by block.

    `update(text)` at each flush, with the answer's whole text so far, says what the view must
    do (`StreamChange`): keep its first `kept` blocks and draw again what follows them, which is
    the last tail's first `cut` characters (UTF-16 units, as the browser counts them) and then
    `suffix`: the blocks closed since the last call, then, from character `split` on, the new
    open tail. So what was drawn is never sent again: only what the answer grew by. Blocks before the last one cannot change as more
    text comes (CommonMark ends a block from what precedes it), with one exception: a link
    reference defined further down; so the finished turn is rendered whole once more
    (`markdown_to_html`), and `matches` says whether what was sent equals it.

    Parsing the tail again costs time with its length (a list of hundreds of items takes
    markdown-it-py tens of milliseconds): `due()` is false until four times the last update's
    cost has passed, so drawing an answer never takes more than a fifth of the kernel's time.
    """

    __slots__ = ("_blocks", "_clock", "_done", "_ready", "_start", "_tail")

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self._clock = clock  # what an update's cost, and so when the next is due, is measured on
        self._start = 0  # where the open tail begins in the text
        self._blocks = 0  # closed blocks sent: one element each
        self._done: list[str] = []  # their HTML
        self._tail = ""
        self._ready = float("-inf")  # when the next update is due, on `clock`

    @property
    def html(self) -> str:
        """What was sent: the closed blocks and the open tail."""
        return "".join(self._done) + self._tail

    @property
    def tail(self) -> str:
        return self._tail

    def due(self) -> bool:
        return self._clock() >= self._ready

    def update(self, text: str) -> StreamChange | None:
        """What the view must change to show `text`; None when it shows it already."""
        began = self._clock()
        source = clean_text(text[self._start :])  # one character for one: offsets stay
        env: EnvType = {}
        tokens = _MD.parse(source, env)
        starts = [i for i, token in enumerate(tokens) if token.level == 0 and token.nesting >= 0]
        kept, closed = self._blocks, ""
        if len(starts) > 1:
            cut = starts[-1]
            closed = _MD.renderer.render(tokens[:cut], _MD.options, env)
            self._start += _line_offset(source, (tokens[cut].map or [0])[0])
            self._blocks += len(starts) - 1
            self._done.append(closed)
            tokens = tokens[cut:]
        tail, old = _MD.renderer.render(tokens, _MD.options, env), self._tail
        self._tail = tail
        now = self._clock()
        self._ready = now + 4 * (now - began)
        if not closed and tail == old:
            return None
        drawn = closed + tail
        same = _common_prefix(old, drawn)
        return StreamChange(kept, _utf16(old[:same]), drawn[same:], _utf16(closed))

    def matches(self, html: str) -> bool:
        """Whether the blocks and the tail sent so far make `html`."""
        return self.html == html


@dataclass(frozen=True, slots=True)
class StreamChange:
    kept: int
    cut: int
    suffix: str
    split: int


def _utf16(text: str) -> int:
    """The length of `text` as JavaScript counts it."""
    return len(text.encode("utf-16-le")) // 2


def _common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix of `a` and `b`: slices compared in C, halving."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


_LINE_END = re.compile(r"\r\n?|\n")  # what markdown-it counts as the end of a line


def _line_offset(text: str, line: int) -> int:
    """Where line `line` (from 0) of `text` begins."""
    if line == 0:
        return 0
    for number, match in enumerate(_LINE_END.finditer(text), 1):
        if number == line:
            return match.end()
    return len(text)
