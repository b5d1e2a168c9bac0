"""End to end in a real JupyterLab and a real browser (Chromium, driven by Playwright).

The harness is in conftest.py. Each test opens a notebook (with a new kernel), runs every cell
from the Run menu, and reads the DOM: the live run widget (run_view.js's `.adk-live`, holding the
`.adk-run` that render.py draws) while a run goes on, and the static transcript (the same `.adk-run`,
the cell's text/html) that replaces it when the run ends.

Notebooks under test: notebooks/01_quickstart.ipynb, notebooks/03_multimodal.ipynb,
notebooks/99_xss_probe.ipynb, and small ones written here (a slow-streaming model, a long
tool to Stop, a tool returning an image and PDFs, a run held while the page reloads). Screenshots go to tests/browser/screenshots/.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest

Lab = LabPage = Any  # the fixtures' types live in conftest.py

pytestmark = pytest.mark.browser

PAYLOADS = (
    "<img src=x onerror=window.__pwned=1>",
    "<script>window.__pwned=1</script>",
    "<svg onload=window.__pwned=1></svg>",
)


def write_notebook(lab: Lab, name: str, cells: list[str]) -> str:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(src) for src in cells]
    nbformat.write(nb, lab.root / name)
    return name


def code_index(lab: Lab, path: str, marker: str) -> int:
    """The index, among code cells, of the first cell whose source contains `marker`."""
    nb = nbformat.read(lab.root / path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    for i, cell in enumerate(code):
        if marker in cell.source:
            return i
    raise AssertionError(f"{path} has no code cell containing {marker!r}")


def _contains(container: Any, item: Any) -> None:
    assert item in container, f"{item!r} not in {container!r}"


def _equal(a: Any, b: Any) -> None:
    assert a == b, f"{a!r} != {b!r}"


def _at_least(a: Any, b: Any) -> None:
    assert a >= b, f"{a!r} < {b!r}"


def image_loaded(locator) -> bool:
    return locator.evaluate("img => img.complete && img.naturalWidth > 0")


# -- notebooks written by the tests ------------------------------------------------------------
PNG_CELL = '''import struct, zlib

def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A tiny solid PNG, no PIL needed."""
    raw = b"".join(b"\\x00" + bytes(rgb) * width for _ in range(height))
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    return (b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))

PDF = (b"%PDF-1.4\\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj 2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj "
       b"3 0 obj<</Type/Page/MediaBox[0 0 200 200]/Parent 2 0 R>>endobj\\ntrailer<</Root 1 0 R>>\\n%%EOF\\n")'''

# A run waits at a point while a file exists (LabPage.hold / release), so a test can look at the
# live view there for as long as the machine needs, instead of racing a sleep of fixed length.
HELD = '''import os

async def held(name: str) -> None:
    """Wait while the file `name` exists (two minutes at most): tests/browser holds the run here."""
    for _ in range(2400):
        if not os.path.exists(name):
            return
        await asyncio.sleep(0.05)'''

MULTIMODAL = [
    "%load_ext adk_notebook\nimport asyncio\nfrom adk_notebook import FunctionCall, ScriptedModel",
    HELD,
    PNG_CELL,
    '''%%tool
def make_chart(title: str) -> dict:
    """Draw a chart and attach its report.

    Args:
        title: The chart's title.
    """
    return {"title": title,
            "inline_data": [{"mime_type": "image/png", "data": png(64, 32, (30, 140, 220))},
                            {"mime_type": "application/pdf", "data": PDF}],
            "file_data": [{"mime_type": "application/pdf", "file_uri": "https://example.com/reports/q4.pdf"}]}


async def pause(seconds: float) -> dict:
    """Wait (so the live view can be looked at).

    Args:
        seconds: How long.
    """
    await asyncio.sleep(seconds)
    await held("multimodal.hold")
    return {"paused": seconds}''',
    'model = ScriptedModel([FunctionCall("make_chart", {"title": "Q4"}), FunctionCall("pause", {"seconds": 0.1}), '
    '"Here is the **Q4** chart and its report."])',
    "%%agent charts --model model --tools make_chart,pause\nDraw charts.",
    "%%chat charts\nChart Q4, please.",
]

# A model that streams (as a real provider does) and a tool that reports progress; each waits at
# the points the test looks at (chunks 0, 1 and 2 of the answer, step 2 of the tool) until the
# page has shown them, so the widget is seen to grow however slow the machine is.
SLOW = [
    "%load_ext adk_notebook\nimport asyncio\nfrom adk_notebook import Content, FunctionCall, Llm, LlmResponse, Part",
    HELD,
    '''class SlowModel(Llm):
    """Turn 1: a sentence, then a tool call. Turn 2: 40 chunks, ending in THE-END."""

    name = "slow"

    def __init__(self) -> None:
        self.turn = 0

    async def generate_content(self, request, stream=False):
        self.turn += 1
        if self.turn == 1:
            words, call = ["Let ", "me ", "look ", "that ", "up. "], FunctionCall("slow_lookup", {"topic": "streaming"})
        else:
            words, call = [f"chunk{i:02d} " for i in range(40)] + ["THE-END"], None
        for i, word in enumerate(words):
            await asyncio.sleep(0.02)
            yield LlmResponse(Content("model", [Part(text=word)]), partial=True, turn_complete=False)
            if self.turn == 2 and i < 3:
                await held(f"chunk{i}.hold")
        parts = [Part(text="".join(words))] + ([Part(function_call=call)] if call else [])
        yield LlmResponse(Content("model", parts), finish_reason="stop")

model = SlowModel()''',
    '''%%tool
async def slow_lookup(topic: str, ctx) -> dict:
    """Look a topic up, slowly.

    Args:
        topic: What to look up.
    """
    for step in range(1, 5):
        await ctx.emit_progress("stdout", f"step {step} of 4\\n")
        await asyncio.sleep(0.1)
        if step == 2:
            await held("step2.hold")
    return {"topic": topic, "answer": "found it"}''',
    "%%agent streamer --model model --tools slow_lookup\nAnswer slowly.",
    "%%chat streamer\nTell me about streaming.",
]

LONG_TOOL = [
    "%load_ext adk_notebook\nimport asyncio, ipykernel\nfrom adk_notebook import FunctionCall, ScriptedModel\nprint('ipykernel', ipykernel.__version__)",
    '''%%tool
async def long_job(seconds: int) -> dict:
    """Work for a long time.

    Args:
        seconds: How long to work.
    """
    await asyncio.sleep(seconds)
    return {"slept": seconds}''',
    'model = ScriptedModel([FunctionCall("long_job", {"seconds": 120}), "Finished the long job."])',
    "%%agent sleeper --model model --tools long_job\nRun jobs.",
    "%%chat sleeper\nRun the long job.",
    "print('after the chat')",
]


# -- the harness -------------------------------------------------------------------------------
def test_smoke_print_and_html(lab: Lab, lab_page: LabPage) -> None:
    """The harness itself: a kernel runs, stdout and HTML outputs reach the DOM."""
    path = write_notebook(
        lab,
        "smoke.ipynb",
        [
            "print('hello from the kernel')",
            "from IPython.display import HTML, display\ndisplay(HTML('<b id=\"smoke-html\">bold <i>html</i></b>'))",
        ],
    )
    lab_page.open(path)
    lab_page.run_all_and_wait(60)
    lab_page.assert_no_errors()
    assert lab_page.prompts() == ["[1]:", "[2]:"]
    lab_page.eventually(lambda: _contains(lab_page.output_text(0), "hello from the kernel"))
    html = lab_page.page.locator("#smoke-html")
    assert html.inner_text() == "bold html"
    assert html.locator("i").count() == 1
    lab_page.screenshot("done")


# -- the notebooks -----------------------------------------------------------------------------
def chat_cells(lab: Lab, path: str) -> list[int]:
    nb = nbformat.read(lab.root / path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    return [i for i, c in enumerate(code) if re.match(r"\s*(\w+\s*=\s*)?%%?chat\b", c.source)]


def test_quickstart_runs_in_lab(lab: Lab, lab_page: LabPage) -> None:
    """Every cell runs; each %%chat leaves a transcript with a tool card (arguments and result)
    and the answer. `--model auto` is the stand-in OpenAI server of conftest.py."""
    path = "01_quickstart.ipynb"
    lab_page.open(path)
    lab_page.run_all_and_wait(300)
    lab_page.assert_no_errors()
    assert lab_page.all_numbered(), lab_page.prompts()
    chats = chat_cells(lab, path)
    assert chats, "01_quickstart.ipynb has no %%chat cell"

    def transcripts_shown() -> None:
        for index in chats:
            shot = lab_page.run_snapshot(index)
            assert shot["kind"] == "static", f"code cell {index} left no transcript: {lab_page.output_text(index)!r}"
            assert shot["status"] == "done", shot
            assert shot["text"].strip(), f"no model text in the transcript: {shot}"
        tools = [t for i in chats for t in lab_page.run_snapshot(i)["tools"]]
        assert tools, "no tool card in any transcript"
        assert all(t["args"].strip().startswith("{") and t["result"] for t in tools), tools

    lab_page.eventually(transcripts_shown)
    first = lab_page.transcripts(chats[0]).first
    for summary in first.locator("details > summary").all():
        summary.click()  # the result is folded away; open it as a user would
    assert first.locator("details > pre").first.is_visible()
    lab_page.screenshot_of(first, "transcript")


def _wait_images(lab_page: LabPage, images) -> int:
    lab_page.wait_for(
        lambda: images.count() > 0 and all(image_loaded(images.nth(i)) for i in range(images.count())),
        15,
        "the images to load",
    )
    return images.count()


def _hrefs(scope) -> list[str]:
    return scope.evaluate_all("as => as.map(a => a.href)")


def test_multimodal_tool_image_and_pdf_links(lab: Lab, lab_page: LabPage) -> None:
    """A tool's inline PNG is an <img> that loaded, and its PDFs (inline, https) are links: in the
    live view while the run goes on, then in the transcript that replaces it."""
    path = write_notebook(lab, "multimodal_small.ipynb", MULTIMODAL)
    chat = code_index(lab, path, "%%chat")
    lab_page.open(path)
    lab_page.hold("multimodal.hold")  # the run waits in its pause tool until the live view was looked at
    try:
        lab_page.run_all()
        lab_page.wait_for(
            lambda: any(
                t["name"] == "pause" and t["status"] == "running"
                for t in lab_page.run_snapshot(chat).get("tools") or []
            ),
            120,
            "the pause tool",
        )
        view = lab_page.widgets(chat)
        assert _wait_images(lab_page, view.locator(".adk-tool img")) == 1
        assert view.locator(".adk-tool img").evaluate("img => img.naturalWidth") == 64
        lab_page.eventually(
            lambda: _contains(_hrefs(view.locator(".adk-tool a[href]")), "https://example.com/reports/q4.pdf")
        )
        hrefs = _hrefs(view.locator(".adk-tool a[href]"))
        assert any(h.startswith("data:application/pdf") for h in hrefs), (
            f"the inline PDF is not a link in the live view: {hrefs}"
        )
        lab_page.screenshot_of(view, "live")
    finally:
        lab_page.release("multimodal.hold")

    lab_page.wait_run_done(60)
    lab_page.assert_no_errors()
    transcript = lab_page.transcripts(chat)
    assert transcript.count() == 1 and lab_page.widgets(chat).count() == 0
    assert _wait_images(lab_page, transcript.locator("img")) == 1
    assert transcript.locator("img").evaluate("img => img.naturalWidth") == 64
    hrefs = _hrefs(transcript.locator("a[href]"))
    assert any(h.startswith("data:application/pdf") for h in hrefs), f"the inline PDF is not a link: {hrefs}"
    assert "https://example.com/reports/q4.pdf" in hrefs, hrefs
    assert all(re.match(r"(https?|data|blob):", h) for h in hrefs), hrefs
    lab_page.screenshot_of(transcript, "transcript")


def test_multimodal_notebook(lab: Lab, lab_page: LabPage) -> None:
    """Each image a tool returned is an <img> that loaded; PDF references are links."""
    path = "03_multimodal.ipynb"
    lab_page.open(path)
    lab_page.run_all_and_wait(240)
    lab_page.assert_no_errors()
    assert lab_page.all_numbered(), lab_page.prompts()
    transcripts = lab_page.transcripts()
    lab_page.eventually(lambda: _equal(transcripts.count(), len(chat_cells(lab, path))))
    assert transcripts.count() >= 1
    images = lab_page.page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .adk-run img")
    assert _wait_images(lab_page, images) >= 1
    hrefs = _hrefs(lab_page.page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .adk-run a[href]"))
    pdfs = [h for h in hrefs if re.match(r"(https?:.*\.pdf|data:application/pdf|blob:)", h)]
    assert pdfs, f"no PDF link (http(s), data: or blob:) in any transcript; links: {hrefs}"
    for i in chat_cells(lab, path):
        if lab_page.transcripts(i).locator("img").count():
            lab_page.screenshot_of(lab_page.transcripts(i).first, "transcript")
            break


# -- streaming ---------------------------------------------------------------------------------
def test_streamed_text_appears_before_the_run_ends(lab: Lab, lab_page: LabPage) -> None:
    path = write_notebook(lab, "streaming.ipynb", SLOW)
    chat = code_index(lab, path, "%%chat")
    lab_page.open(path)
    # The run waits at step 2 of its tool and after each of the answer's first three chunks,
    # each until the page has shown it: what is sampled below does not depend on timing.
    holds = {"step2.hold": lambda s: any("step 2 of 4" in t["log"] and t["status"] == "running" for t in s["tools"])}
    holds |= {f"chunk{i}.hold": (lambda s, i=i: f"chunk{i:02d}" in s["text"]) for i in range(3)}
    lab_page.hold(*holds)
    samples = []  # what the cell showed while it was still [*]
    shot_taken = False
    try:
        lab_page.run_all()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            shot = lab_page.run_snapshot(chat)
            if shot["prompt"] != "[*]:":
                break
            if shot["kind"] == "live":
                samples.append(shot)
                for name, shown in list(holds.items()):
                    if shown(shot):
                        lab_page.release(name)
                        del holds[name]
                if not shot_taken and "chunk01" in shot["text"]:
                    lab_page.screenshot_of(lab_page.widgets(chat).first, "mid-run")
                    shot_taken = True
            time.sleep(0.05)
    finally:
        lab_page.release(*holds)
    assert not holds, f"the page never showed what these holds wait for: {sorted(holds)}"
    lab_page.wait_run_done(60)
    lab_page.assert_no_errors()
    final = lab_page.run_snapshot(chat)

    running = [s for s in samples if s["kind"] == "live" and s["status"].startswith("running")]
    assert running, f"the live view never showed 'running' while the cell ran ({len(samples)} samples)"
    lengths = sorted({len(s["text"]) for s in running if "chunk" in s["text"]})
    assert len(lengths) >= 3, f"the answer did not grow in place while the cell ran: lengths {lengths}"
    assert any("chunk" in s["text"] and "THE-END" not in s["text"] for s in running)
    assert any(s["stopVisible"] for s in running), "the Stop button was not shown while running"
    tool_running = [t for s in running for t in s["tools"] if t["status"] == "running"]
    assert tool_running, "no tool card showed 'running' while the tool slept"
    assert any("step 2 of 4" in t["log"] for t in tool_running), "the tool's progress log did not show while it ran"

    assert final["kind"] == "static" and final["status"] == "done", final
    assert "THE-END" in final["text"] and "chunk39" in final["text"]
    (card,) = final["tools"]
    assert card["name"] == "slow_lookup" and card["status"] == "ok", card
    assert '"topic": "streaming"' in card["args"]
    assert "found it" in (card["result"] or "")
    lab_page.screenshot_of(lab_page.transcripts(chat).first, "transcript")


# -- Stop --------------------------------------------------------------------------------------
def test_stop_button_cancels_a_long_tool(lab: Lab, lab_page: LabPage) -> None:
    path = write_notebook(lab, "stop.ipynb", LONG_TOOL)
    chat = code_index(lab, path, "%%chat")
    lab_page.open(path)
    lab_page.run_all()
    lab_page.wait_for(
        lambda: any(t["status"] == "running" for t in lab_page.run_snapshot(chat).get("tools") or []),
        120,
        "the long tool to be running",
    )
    version = lab_page.wait_for(
        lambda: re.search(r"ipykernel \d+\S*", lab_page.output_text(0)), 15, "cell 0 to print the ipykernel version"
    ).group(0)
    major = int(re.search(r"ipykernel (\d+)", version).group(1))
    if major < 7:
        pytest.skip(f"{version.strip()}: ipykernel 6 holds widget messages until the cell ends (DESIGN.md)")
    stop = lab_page.widgets(chat).locator("[data-adk-action=stop]")
    assert stop.is_visible()
    clicked = time.monotonic()
    stop.click()
    lab_page.wait_for(
        lambda: lab_page.run_snapshot(chat).get("status") == "cancelled",
        5,
        "the run to say 'cancelled' within 5 s of Stop",
    )
    latency = time.monotonic() - clicked
    lab_page.wait_run_done(30)
    shot = lab_page.run_snapshot(chat)
    assert shot["status"] == "cancelled" and not shot["stopVisible"], shot
    lab_page.eventually(lambda: _contains(lab_page.output_text(chat), "Run cancelled."))
    lab_page.eventually(lambda: _contains(lab_page.output_text(chat + 1), "after the chat"))  # Run All went on
    assert lab_page.all_numbered(), lab_page.prompts()
    lab_page.screenshot_of(lab_page.code_cells().nth(chat).locator(".jp-OutputArea"), "cancelled")
    print(f"Stop -> 'cancelled' in {latency:.2f} s")
    assert latency < 5


# -- saved transcript --------------------------------------------------------------------------
def test_transcript_survives_save_and_reload_without_widget_state(lab: Lab, lab_page: LabPage) -> None:
    """Saved (JupyterLab keeps no widget state by default), kernel gone, page reloaded: the
    chat cell still shows the run, from its text/html output."""
    path = write_notebook(lab, "reload.ipynb", MULTIMODAL)
    chat = code_index(lab, path, "%%chat")
    lab_page.open(path)
    lab_page.run_all_and_wait(120)
    lab_page.assert_no_errors()
    lab_page.save()
    saved = nbformat.from_dict(lab.notebook_json(path))
    outputs = [c for c in saved.cells if c.cell_type == "code"][chat].outputs
    html = [o.data["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert len(html) == 1 and "adk-run" in html[0], f"the saved chat cell has no text/html transcript: {outputs}"
    assert not saved.metadata.get("widgets"), "expected JupyterLab's default: no widget state saved"

    lab.shutdown_kernels(path)  # no kernel, no widget state: only what the file holds
    lab_page.reload()
    settled = lambda: (lambda t: "<ChatResult" in t and "Loading widget" not in t)(lab_page.output_text(chat))  # noqa: E731
    lab_page.wait_for(settled, 30, "the chat cell's outputs to settle")
    assert "Error displaying widget" not in lab_page.output_text(chat)
    shot = lab_page.run_snapshot(chat)
    assert shot["kind"] == "static" and shot["status"] == "done", shot
    assert "Here is the Q4 chart" in shot["text"]
    assert [t["name"] for t in shot["tools"]] == ["make_chart", "pause"], shot["tools"]
    transcript = lab_page.transcripts(chat)
    assert _wait_images(lab_page, transcript.locator("img")) == 1
    assert "https://example.com/reports/q4.pdf" in _hrefs(transcript.locator("a[href]"))
    lab_page.screenshot_of(lab_page.code_cells().nth(chat), "reloaded")


# A run that waits in a tool after a markdown turn, so the page can be saved and reloaded mid-run.
MID_RUN = [
    "%load_ext adk_notebook\nfrom adk_notebook import FunctionCall, ScriptedModel\nimport asyncio",
    HELD,
    '''%%tool
async def pause() -> dict:
    """Wait while the browser test reloads the page."""
    await held("midrun.hold")
    return {"paused": True}''',
    'model = ScriptedModel([["Let me **check** that.", FunctionCall("pause", {})], "All *done*."])',
    "%%agent checker --model model --tools pause\nCheck things.",
    "%%chat checker\nCheck it.",
]


def test_a_page_reloaded_mid_run_draws_the_live_view_again(lab: Lab, lab_page: LabPage) -> None:
    """Saved and reloaded while the run waits in a tool (the kernel goes on): the live view comes
    back from the kernel's widget model (its trait, then a snapshot), its finished turn drawn as
    markdown, and it shows the end of the run when it comes, and keeps showing it once the kernel
    closes the model."""
    path = write_notebook(lab, "midrun.ipynb", MID_RUN)
    chat = code_index(lab, path, "%%chat")
    lab_page.open(path)
    lab_page.hold("midrun.hold")
    try:
        lab_page.run_all()
        bold = lab_page.widgets(chat).locator(".adk-text strong")
        lab_page.wait_for(lambda: bold.count() == 1, 120, "the first turn drawn as markdown")
        lab_page.save()
        lab_page.reload(kernel_idle=False)
        lab_page.wait_for(lambda: bold.count() == 1, 60, "the live view, markdown drawn, after the reload")
        assert bold.inner_text() == "check"
        shot = lab_page.run_snapshot(chat)
        assert shot["kind"] == "live" and shot["status"].startswith("running"), shot
        lab_page.screenshot_of(lab_page.widgets(chat), "reloaded")
    finally:
        lab_page.release("midrun.hold")
    # This page did not send the execute request, so the transcript does not replace the view
    # here: the view shows the run's end from the last delta, and keeps it when the model closes.
    lab_page.wait_for(lambda: lab_page.run_snapshot(chat).get("status") == "done", 60, "the run to end in the view")
    lab_page.wait_kernel_idle(60)  # idle comes after the run's last message, the model's close
    shot = lab_page.run_snapshot(chat)
    assert shot["status"] == "done" and not shot["stopVisible"], shot
    assert lab_page.widgets(chat).is_visible(), "the run's end is drawn but hidden"
    assert "All done" in shot["text"] and lab_page.widgets(chat).locator(".adk-text em").inner_text() == "done"
    assert [t["name"] for t in shot["tools"]] == ["pause"] and shot["tools"][0]["status"] == "ok", shot["tools"]
    lab_page.screenshot_of(lab_page.code_cells().nth(chat), "ended")
    assert lab_page.pwned() is None


# -- XSS -----------------------------------------------------------------------------------
XSS = "99_xss_probe.ipynb"


def _assert_probe_safe(lab_page: LabPage, scope, where: str) -> None:
    lab_page.settle(scope)  # an <img onerror> would fire once its image failed to load
    assert lab_page.pwned() is None, f"window.__pwned was set ({where})"
    shown = scope.inner_text()
    for payload in PAYLOADS:
        assert payload in shown, f"{payload!r} is not shown as text ({where})"
    assert "javascript:window.__pwned=1" in shown, f"the javascript: link is not shown as text ({where})"
    bad = lab_page.page.locator(".jp-OutputArea a[href]").evaluate_all(
        "as => as.map(a => a.getAttribute('href')).filter(h => !/^(https?:|data:|blob:|#)/i.test(h.trim()))"
    )
    assert not bad, f"links with unexpected schemes ({where}): {bad}"
    assert (
        lab_page.page.locator(".jp-OutputArea script, .jp-OutputArea [onerror], .jp-OutputArea [onload]").count() == 0
    )


def test_xss_probe(lab: Lab, lab_page: LabPage, tmp_path: Path) -> None:
    chat = code_index(lab, XSS, "%%chat")
    lab_page.open(XSS)
    lab_page.hold("xss_probe.hold")  # the notebook's pause tool waits while this file exists
    try:
        lab_page.run_all()
        # 1. The live widget, while the run waits in its last tool (the markdown turn is drawn).
        lab_page.wait_for(
            lambda: any(
                t["name"] == "pause" and t["status"] == "running"
                for t in lab_page.run_snapshot(chat).get("tools") or []
            ),
            120,
            "the pause tool",
        )
        view = lab_page.widgets(chat)
        assert view.count() == 1
        lab_page.eventually(lambda: _at_least(view.locator(".adk-text strong").count(), 1))  # markdown drawn
        for summary in view.locator(".adk-tool details > summary").all():
            summary.click()
        _assert_probe_safe(lab_page, view, "live widget")
        assert view.locator("a").count() == 0, "the model's javascript: links became anchors in the live widget"
        lab_page.screenshot_of(view, "live")
    finally:
        lab_page.release("xss_probe.hold")

    # 2. The static transcript that replaces it, rendered by JupyterLab as trusted HTML.
    lab_page.wait_run_done(60)
    lab_page.assert_no_errors()
    transcript = lab_page.transcripts(chat)
    assert transcript.count() == 1
    assert lab_page.code_cells().nth(chat).locator(".jp-OutputArea-output.jp-mod-trusted .adk-run").count() == 1
    for summary in transcript.locator("details > summary").all():
        summary.click()
    _assert_probe_safe(lab_page, transcript, "static transcript")
    assert lab_page.pwned() is None, "window.__pwned was set by the %%tool / %%agent cards"
    lab_page.screenshot_of(transcript, "transcript")

    # 3. Saved, kernel gone, reloaded: the transcript from the file (trusted: saved by this server).
    lab_page.save()
    saved = nbformat.from_dict(lab.notebook_json(XSS))
    lab.shutdown_kernels(XSS)
    lab_page.reload()
    lab_page.wait_for(lambda: lab_page.transcripts(chat).count() == 1, 30, "the transcript after reload")
    assert lab_page.code_cells().nth(chat).locator(".jp-OutputArea-output.jp-mod-trusted .adk-run").count() == 1
    _assert_probe_safe(lab_page, lab_page.transcripts(chat), "transcript after reload")

    # 4. The same saved notebook through nbconvert, as a page of its own.
    source = tmp_path / "probe.ipynb"
    nbformat.write(saved, source)
    subprocess.run(
        [sys.executable, "-m", "nbconvert", "--to", "html", str(source)], check=True, capture_output=True, timeout=120
    )
    page = lab_page.page.context.new_page()  # beside JupyterLab's page, which later tests reuse
    try:
        page.route(re.compile(r"^https?://"), lambda route: route.abort())  # CDN scripts: offline here
        page.goto((tmp_path / "probe.html").as_uri(), wait_until="load")
        assert page.locator(".adk-run").count() == 1
        lab_page.settle(page.locator(".adk-run"))
        assert page.evaluate("() => window.__pwned") is None, "window.__pwned was set (nbconvert HTML)"
        shown = page.locator(".adk-run").inner_text()
        for payload in PAYLOADS:
            assert payload in shown, f"{payload!r} is not in the nbconvert page as text"
        assert page.locator(".adk-run script, .adk-run [onerror], .adk-run [onload]").count() == 0
    finally:
        page.close()
