"""run_view.js in a blank Chromium page, with a stand-in for anywidget's model: the front end of
the live view, exercised without JupyterLab (tests/browser/test_view_page.py, and the hostile
runs of tests/reliability).

`ViewPage.load(view)` renders the module with the trait a RunView opened with; `emit(msg)` hands
it a custom message the kernel sent; `compare(html)` returns each item and part of the page
beside the same element of `html` (a saved transcript), both parsed by this browser.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

__all__ = ["JS", "ViewPage", "view_page"]

JS = Path(__file__).resolve().parent.parent / "adk_notebook" / "notebook" / "widgets" / "run_view.js"
CHROMIUM = "/usr/bin/chromium"

_LOAD = """
async ([source, view]) => {
  const module = await import("data:text/javascript;base64," + btoa(unescape(encodeURIComponent(source))));
  const handlers = {};
  const state = { view };
  const sent = [];
  const model = {
    get: (key) => state[key],
    on: (name, fn) => (handlers[name] ||= []).push(fn),
    off: () => {},
    send: (msg) => sent.push(msg),
  };
  document.body.innerHTML = "<div id='out'></div><template id='saved'></template>";
  window.__pwned = undefined;
  window.__adk = {
    sent,
    emit: (name, arg) => (handlers[name] || []).forEach((fn) => fn(arg)),
  };
  module.default.render({ model, el: document.getElementById("out") });
}
"""

_COMPARE = """
(saved) => {
  const t = document.getElementById("saved");
  t.innerHTML = saved;
  const pick = (root) => [...root.querySelectorAll("[data-adk]")]
    .filter((el) => /^(i\\d+|top|stop|graph|end|trace)$/.test(el.getAttribute("data-adk")))
    .map((el) => [el.getAttribute("data-adk"), el.outerHTML]);
  return { live: pick(document.getElementById("out")), saved: pick(t.content) };
}
"""


class ViewPage:
    """One Chromium page that shows run views."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self._source = JS.read_text()

    def load(self, view: dict[str, Any]) -> None:
        self.page.evaluate(_LOAD, [self._source, view])

    def emit(self, msg: dict[str, Any]) -> None:
        self.page.evaluate("(msg) => window.__adk.emit('msg:custom', msg)", msg)

    def sent(self) -> list[dict[str, Any]]:
        return self.page.evaluate("() => window.__adk.sent")

    def compare(self, saved_html: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        """(the page's items and parts, the saved transcript's), as [name, outerHTML] pairs."""
        out = self.page.evaluate(_COMPARE, saved_html)
        return [tuple(p) for p in out["live"]], [tuple(p) for p in out["saved"]]  # type: ignore[misc]

    def pwned(self) -> bool:
        """Whether any probe in the run ran code."""
        return self.page.evaluate("() => window.__pwned") is not None


@contextmanager
def view_page() -> Iterator[ViewPage]:
    """A page in Debian's Chromium; the test is skipped without it unless ADK_BROWSER_REQUIRED is set."""
    if not os.path.exists(CHROMIUM):
        if os.environ.get("ADK_BROWSER_REQUIRED"):
            pytest.fail(f"{CHROMIUM} is missing (apt-get install -y chromium)")
        pytest.skip(f"{CHROMIUM} is missing")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"])
        try:
            yield ViewPage(browser.new_page())
        finally:
            browser.close()
