"""The live view and the saved transcript are one drawing. For a rich run (a tool card with
progress and an image result, a thought, a transfer, a markdown answer with a table and code,
parallel lanes, the agent graph and the waterfall), in a real JupyterLab in headless Chromium,
the live widget's last HTML equals the text/html the cell saves, part by part and item by item.

How the live view's last HTML is read: when a run ends, the kernel sends the last delta, then
replaces the cell's output by the transcript (same display id) and closes the model. An observer
installed in the page before the run keeps a reference to the view's root (`.adk-live`) when it
is added; once the output is replaced, that root is detached but holds what the page showed last,
with the last delta applied: that is what is compared, as the page parsed it, with the saved
text/html parsed by the same page. Screenshots go to tests/browser/screenshots/.
"""

from __future__ import annotations

from typing import Any

import nbformat
import pytest
from test_lab import HELD, PNG_CELL, code_index, write_notebook

Lab = LabPage = Any  # the fixtures' types live in conftest.py

pytestmark = pytest.mark.browser

ANSWER = (
    "## Q4 report\n\n| region | sales |\n|---|---:|\n| north | 12 |\n| south | 7 |\n\n"
    '```python\nprint("q4")\n```\n\n**North** leads.'
)

# desk thinks, draws a chart (progress, then an image) and transfers to writer, who answers in
# markdown; then pros and cons argue in parallel, cons after a tool. The run waits in the chart
# tool (chart.hold) and in cons's tool (rich.hold) while the test looks at the live view.
RICH = [
    "%load_ext adk_notebook\nimport asyncio\nfrom adk_notebook import FunctionCall, Part, ScriptedModel",
    HELD,
    PNG_CELL,
    '''%%tool
async def chart(title: str, ctx) -> dict:
    """Draw a chart, saying how far it got.

    Args:
        title: The chart's title.
    """
    for step in range(1, 4):
        await ctx.emit_progress("stdout", f"drawing {step} of 3\\n")
        await asyncio.sleep(0.05)
        if step == 2:
            await held("chart.hold")
    return {"title": title, "inline_data": [{"mime_type": "image/png", "data": png(48, 24, (220, 120, 30))}]}


async def pause() -> dict:
    """Wait while the test looks at the live view."""
    await held("rich.hold")
    return {"paused": True}''',
    f"""desk_model = ScriptedModel([
    [Part(text="A chart first, then the writer.", thought=True), FunctionCall("chart", {{"title": "Q4"}})],
    FunctionCall("transfer_to_agent", {{"agent_name": "writer"}}),
])
writer_model = ScriptedModel([{ANSWER!r}])
pros_model = ScriptedModel(["For: one place to look."])
cons_model = ScriptedModel([FunctionCall("pause", {{}}), "Against: one outage stops all."])""",
    '%%agent writer --model writer_model --description "Writes the report."\nWrite the report.',
    "%%agent desk --model desk_model --tools chart --sub-agents writer\nChart, then hand over to the writer.",
    "%%agent pros --model pros_model\nArgue for.",
    "%%agent cons --model cons_model --tools pause\nArgue against.",
    "%%agent panel --parallel pros,cons\nBoth sides at once.",
    "%%agent rich --sequential desk,panel\nReport, then argue.",
    "%%chat rich\nChart Q4 and argue both sides.",
]
HOLDS = ("chart.hold", "rich.hold")

# Keeps every live view's root added to the page from now on (window.__adkLive).
OBSERVE_JS = """() => {
  window.__adkLive = [];
  const keep = (node) => {
    if (node.nodeType !== 1) return;
    for (const root of node.matches('.adk-live') ? [node] : node.querySelectorAll('.adk-live'))
      if (!window.__adkLive.includes(root)) window.__adkLive.push(root);
  };
  window.__adkObserver = new MutationObserver((records) => records.forEach((r) => r.addedNodes.forEach(keep)));
  window.__adkObserver.observe(document.body, {childList: true, subtree: true});
}"""

# A run's parts and items (data-adk "top", ..., "i0", "i1", ...) as outerHTML, by name.
PIECES = """(run) => Object.fromEntries([...run.querySelectorAll('[data-adk]')]
  .filter((e) => /^(top|stop|graph|body|end|trace|i\\d+)$/.test(e.getAttribute('data-adk')))
  .map((e) => [e.getAttribute('data-adk'), e.outerHTML]))"""

LIVE_PIECES_JS = f"""() => {{
  window.__adkObserver.disconnect();
  const roots = window.__adkLive;
  return {{count: roots.length, connected: roots.map((r) => r.isConnected),
          pieces: roots.length ? ({PIECES})(roots[roots.length - 1].querySelector('.adk-run')) : null}};
}}"""

SAVED_PIECES_JS = f"""(html) => {{
  const t = document.createElement('template');
  t.innerHTML = html;
  return ({PIECES})(t.content.querySelector('.adk-run'));
}}"""


def _first_difference(a: str, b: str) -> str:
    at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return f"at {at}: live …{a[max(0, at - 80) : at + 80]!r}… saved …{b[max(0, at - 80) : at + 80]!r}…"


def test_the_live_views_last_html_equals_the_saved_transcript_item_by_item(lab: Lab, lab_page: LabPage) -> None:
    path = write_notebook(lab, "rich.ipynb", RICH)
    chat = code_index(lab, path, "%%chat")
    lab_page.open(path)
    lab_page.page.evaluate(OBSERVE_JS)
    lab_page.hold(*HOLDS)
    try:
        lab_page.run_all()
        view = lab_page.widgets(chat)
        lab_page.wait_for(
            lambda: any("drawing 2 of 3" in t["log"] for t in lab_page.run_snapshot(chat).get("tools") or []),
            120,
            "the chart tool's progress, live",
        )
        early = lab_page.run_snapshot(chat)
        assert early["kind"] == "live" and early["status"].startswith("running") and early["stopVisible"], early
        assert view.locator("details.adk-thoughts").count() == 1, "the thought, folded, live"
        lab_page.screenshot_of(view, "live-progress")
        lab_page.release("chart.hold")

        lab_page.wait_for(
            lambda: any(t["name"] == "pause" for t in lab_page.run_snapshot(chat).get("tools") or []),
            120,
            "cons's pause tool, live",
        )
        late = lab_page.run_snapshot(chat)
        assert late["kind"] == "live" and "North leads" in late["text"] and "North" not in early["text"], (
            "the answer showed while the run went on"
        )
        assert view.locator(".adk-text table td").count() == 4 and view.locator(".adk-text pre code").count() == 1
        assert view.locator(".adk-tool img").count() == 1 and "→ transfer to writer" in late["all"]
        lanes = view.locator(".adk-item.adk-lane").all_inner_texts()
        assert {"▸ pros · panel.pros", "▸ cons · panel.cons"} <= set(lanes), lanes
        assert view.locator('[data-adk="graph"] svg g.adk-active').count() == 1, "the running agent marked"
        assert view.locator('[data-adk="trace"] details.adk-trace .adk-wf-bar').count() >= 6, "the waterfall, live"
        lab_page.screenshot_of(view, "live-lanes")
    finally:
        lab_page.release(*HOLDS)

    lab_page.wait_run_done(60)
    lab_page.assert_no_errors()
    live = lab_page.page.evaluate(LIVE_PIECES_JS)
    assert live["count"] == 1 and live["connected"] == [False], f"one live view, replaced by the transcript: {live}"
    lab_page.save()
    saved_nb = nbformat.from_dict(lab.notebook_json(path))
    outputs = [c for c in saved_nb.cells if c.cell_type == "code"][chat].outputs
    (html,) = [o.data["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    saved = lab_page.page.evaluate(SAVED_PIECES_JS, html)
    shown = live["pieces"]

    items = [k for k in saved if k.startswith("i")]
    assert len(items) >= 12, f"the rich run has few items: {items}"
    assert list(shown) == list(saved), "the live view has other parts or items than the transcript"
    differ = {k: _first_difference(shown[k], saved[k]) for k in saved if shown[k] != saved[k]}
    assert not differ, f"{len(differ)} of {len(saved)} parts and items differ:\n" + "\n".join(
        f"{k}: {d}" for k, d in differ.items()
    )
    # What the comparison covered: every kind of item the issue lists.
    body = saved["body"]
    for what in ('class="adk-thoughts"', 'data-adk="i', ".log", "<img ", "<table", "<pre><code", "transfer to writer"):
        assert what in body, f"{what!r} is not in the run"
    assert saved["body"].count('class="adk-lane"') >= 4 and "panel.cons" in body
    assert "<svg" in saved["graph"] and "adk-waterfall" in saved["trace"]
    assert "Stop" not in saved["stop"] and "done" in saved["top"]

    transcript = lab_page.transcripts(chat).first
    transcript.locator("details.adk-trace > summary").click()
    transcript.locator("details.adk-thoughts > summary").click()
    lab_page.screenshot_of(transcript, "saved")
