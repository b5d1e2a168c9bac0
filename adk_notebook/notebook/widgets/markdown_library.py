"""markdown-it for the run views, sent to the page once per kernel rather than with every run.

anywidget gives each widget model one ES module (`_esm`), sent in the model's comm_open and
saved with its widget state. The vendored markdown-it (124 KB) inside run_view.js's module made
every `%%chat` run send and save it again. So the library lives in one hidden model per kernel,
`MarkdownLibrary`: a plain ipywidgets `Widget` (no view), whose class every widget manager has
(JupyterLab, Notebook 7, VS Code, Colab, nbconvert's HTML manager). It holds markdown-it as an
ES module and render.py's `MARKDOWN` settings, with the punctuation markdown-it-py knows
(`punctuation_ranges`); each `RunWidget` names it in its `markdown` trait, and run_view.js
imports the module once per page, however many views and kernels ask.

A notebook saved with widget state keeps the library once. The module is code the page runs,
like any anywidget `_esm`: saved widget state was already code, so this adds no new way in.
"""

from __future__ import annotations

import copy
import hashlib
from functools import cache
from pathlib import Path

import ipywidgets
import traitlets

from ..render import MARKDOWN, punctuation_ranges

__all__ = ["MarkdownLibrary", "markdown_library"]

_VENDORED = Path(__file__).parent / "vendor" / "markdown-it.min.js"


@cache
def library_module() -> str:
    """The vendored markdown-it as an ES module whose default export is markdown-it's factory.

    Its UMD build sees `module` and `exports` and puts itself there rather than on a global (or
    on an AMD loader the page may have).
    """
    umd = _VENDORED.read_text(encoding="utf-8")
    head = "const module = { exports: {} };\nconst exports = module.exports;\n"
    return f"{head}{umd}\nexport default module.exports;\n"


class MarkdownLibrary(ipywidgets.Widget):
    """The kernel's one copy of the front end's markdown: the library and how render.py sets it up."""

    source = traitlets.Unicode(help="markdown-it as an ES module").tag(sync=True)
    digest = traitlets.Unicode(help="sha256 of source, the cache key").tag(sync=True)
    settings = traitlets.Dict(help="render.py's MARKDOWN, and its punctuation_ranges").tag(sync=True)

    def __init__(self) -> None:
        source = library_module()
        super().__init__(
            source=source,
            digest=hashlib.sha256(source.encode()).hexdigest(),
            settings={**copy.deepcopy(MARKDOWN), "punctuation": punctuation_ranges()},
        )


_shared: MarkdownLibrary | None = None


def markdown_library() -> MarkdownLibrary:
    """The kernel's library model, made (its comm opened) when the first run view needs it."""
    global _shared
    # none yet, or closed (`Widget.close_all()`)
    if _shared is None or _shared.comm is None:
        _shared = MarkdownLibrary()
    return _shared
