"""What any output may carry: text cleaned of characters no output should hold, escaped for
HTML, URLs that may become links, and errors as one line.

Every string that came from a user, a model or a tool goes through `escape` before it is part
of HTML. A link is made only from an http(s) URL or a data: URL of an allowed type; a
`javascript:` URI stays text. NUL and other control characters, and lone surrogates, never
reach an output, nor does U+FEFF (`clean_text`).
"""

from __future__ import annotations

import html
import re

from ..core.errors import AdkError

__all__ = ["IMAGE_TYPES", "cap", "clean_text", "error_line", "escape", "safe_url"]

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
