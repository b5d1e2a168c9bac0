"""Shift+Enter to the first streamed token on screen: our overhead in a real JupyterLab.

A real JupyterLab (tests/browser/conftest.py starts it the same way the browser tests do) in
Debian's headless Chromium driven by Playwright. The model is an OpenAI-compatible server on
127.0.0.1 that sends its whole answer at once, so what is measured is ours: the keypress,
JupyterLab's execute request, the kernel, the %%chat magic, the agent loop and provider, the
runner, the widget's deltas over the comm, and the view drawing the text.

Timed in the page: from the Shift+Enter keydown (a capture listener) to the first animation
frame after the text shows up in the cell's output (a MutationObserver, then
requestAnimationFrame), for

    run view in the page                when the cell's live view exists (for the breakdown)
    first token, 2-token answer        the headline figure (aim: under 150 ms)
    first token, 2,000-token answer
    last token, 2,000-token answer     the whole answer on screen

each the median (and min/max) of --runs runs (10), after --warmup runs. Each run is a new
session, so the request does not grow. Usage:

    python bench/first_token.py [--runs 10] [--warmup 2] [--tokens 2000]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "browser"), str(ROOT / "tests")]  # conftest imports provider_env from tests/

import conftest as lab_support  # tests/browser/conftest.py: running_lab, LabPage, Chromium flags

ASK = re.compile(r"(\d+) tokens, run (\w+)")

WATCH_JS = """(index) => {
  // Times the cell at `index` (among code cells): keydown of Shift+Enter -> the run's view in the
  // DOM, and the first frame that shows its first token ("[R]") / its last one ("[R-end]").
  const b = window.__bench = {t0: null, first: null, last: null, run: null, view: null};
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && e.shiftKey) { b.t0 = performance.now(); b.first = b.last = b.view = null; }
  }, true);
  const shown = () => {
    const cell = document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-CodeCell')[index];
    if (!cell || b.t0 == null || b.run == null) return;
    if (b.view == null && cell.querySelector('.jp-OutputArea .adk-live')) b.view = performance.now() - b.t0;
    const text = [...cell.querySelectorAll('.jp-OutputArea .adk-text')]
      .map((n) => n.textContent).join('');
    if (b.first == null && text.includes(`[${b.run}]`)) {
      b.first = -1;
      requestAnimationFrame(() => { b.first = performance.now() - b.t0; });
    }
    if (b.last == null && text.includes(`[${b.run}-end]`)) {
      b.last = -1;
      requestAnimationFrame(() => { b.last = performance.now() - b.t0; });
    }
  };
  new MutationObserver(shown).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""

SELECT_JS = """([index, source, run]) => {
  // The cell at `index` gets `source` and becomes the selected cell, in command mode.
  const nb = window.jupyterapp.shell.currentWidget.content;
  const cells = nb.widgets.filter((w) => w.model.type === 'code');
  const cell = cells[index];
  cell.model.sharedModel.setSource(source);
  nb.activeCellIndex = nb.widgets.indexOf(cell);
  nb.deselectAll();
  nb.mode = 'command';
  nb.node.focus();
  window.__bench.run = run;
  window.__bench.t0 = window.__bench.first = window.__bench.last = window.__bench.view = null;
}"""


class InstantModel:
    """Chat Completions on 127.0.0.1 that streams "[R] tok tok ... [R-end]" (N chunks) at once."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                asked = [m for m in body.get("messages", []) if m.get("role") == "user"][-1]["content"]
                found = ASK.search(asked if isinstance(asked, str) else json.dumps(asked))
                tokens, run = (int(found[1]), found[2]) if found else (2, "?")
                words = [f"[{run}] "] + ["tok "] * max(tokens - 2, 0) + [f"[{run}-end]"]
                data = "".join(
                    "data: "
                    + json.dumps({"choices": [{"index": 0, "delta": {"content": w}, "finish_reason": None}]})
                    + "\n\n"
                    for w in words
                )
                data += (
                    "data: " + json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}) + "\n\n"
                )
                data += "data: [DONE]\n\n"
                raw = data.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> Self:
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def write_notebook(root: Path, url: str) -> str:
    import nbformat

    cells = [
        (
            "%load_ext adk_notebook\nfrom adk_notebook.models.openai import OpenAIModel\n"
            f"instant = OpenAIModel('instant', api_key='bench', base_url={url!r})"
        ),
        "%%agent bot --model instant\nAnswer.",
        "%%chat bot --new-session\n2 tokens, run w0",
        "",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    (root / "first_token.ipynb").write_text(nbformat.writes(nb))
    return "first_token.ipynb"


def one_run(page: Any, lab_page: Any, tokens: int, run: str) -> tuple[float, float, float]:
    """(view, first, last) in ms for one Shift+Enter on the %%chat cell."""
    page.evaluate(SELECT_JS, [2, f"%%chat bot --new-session\n{tokens} tokens, run {run}", run])
    page.keyboard.press("Shift+Enter")
    deadline = time.monotonic() + 120
    while True:
        got = page.evaluate("() => window.__bench")
        if got["first"] not in (None, -1) and got["last"] not in (None, -1):
            break
        if time.monotonic() > deadline:
            lab_page.screenshot("stuck")
            raise RuntimeError(
                f"run {run}: no answer on screen after 120 s ({got}); shown: "
                f"{lab_page.output_text(2)[-500:]!r}; prompts {lab_page.prompts()}"
            )
        time.sleep(0.01)
    lab_page.wait_run_done(120)
    return got["view"] if got["view"] is not None else float("nan"), got["first"], got["last"]


def summary(label: str, values: list[float]) -> str:
    return (
        f"  {label:<34} median {statistics.median(values):7.1f} ms   "
        f"min {min(values):7.1f}   max {max(values):7.1f}   (n={len(values)})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=2000)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="adk-first-token-") as tmp, InstantModel() as model:
        base = Path(tmp)
        (base / "root").mkdir()
        path = write_notebook(base / "root", model.url)
        with lab_support.running_lab(base, {}) as lab, sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=lab_support.CHROMIUM,
                headless=True,
                args=lab_support.CHROMIUM_ARGS,
                chromium_sandbox=False,
                timeout=60_000,
            )
            try:
                context = browser.new_context(viewport={"width": 1280, "height": 900})
                page = context.new_page()
                lab_page = lab_support.LabPage(page, lab, "first_token")
                lab_page.open(path, timeout=120)
                lab_page.run_all_and_wait(120)  # imports, the agent, a first chat: warm
                page.evaluate(WATCH_JS, 2)
                results: dict[str, list[float]] = {"view": [], "short": [], "long_first": [], "long_last": []}
                for n in range(args.warmup + args.runs):
                    view, first, _ = one_run(page, lab_page, 2, f"s{n}")
                    _, long_first, long_last = one_run(page, lab_page, args.tokens, f"l{n}")
                    if n >= args.warmup:
                        results["view"].append(view)
                        results["short"].append(first)
                        results["long_first"].append(long_first)
                        results["long_last"].append(long_last)
                lab.shutdown_kernels()
            finally:
                browser.close()
    import jupyterlab

    import adk_notebook

    print(
        f"Shift+Enter on a %%chat cell -> on screen, JupyterLab {jupyterlab.__version__}, headless Chromium, "
        f"adk-notebook {adk_notebook.__version__}; a loopback model that answers at once"
    )
    print(summary("run view in the page (2-token)", results["view"]))
    print(summary("first token, 2-token answer", results["short"]))
    print(summary(f"first token, {args.tokens:,}-token answer", results["long_first"]))
    print(summary(f"last token, {args.tokens:,}-token answer", results["long_last"]))
    target = statistics.median(results["short"])
    print(f"  target: first token under 150 ms -> {'met' if target < 150 else 'not met'} ({target:.0f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
