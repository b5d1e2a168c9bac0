"""The run's waterfall in a real JupyterLab: the live view's folded Timeline, opened while the run
goes, the saved transcript's, and `%adk trace`; bars laid out in proportion to the steps'
durations, errors marked, hostile names shown as text. Screenshots in tests/browser/screenshots/."""

from __future__ import annotations

import re
from typing import Any

import pytest
from test_lab import HELD, PAYLOADS, _contains, code_index, write_notebook

Lab = LabPage = Any  # the fixtures' types live in conftest.py

pytestmark = pytest.mark.browser

TIMED = [
    (
        "%load_ext adk_notebook\nimport asyncio\n"
        "from adk_notebook import Content, FunctionCall, LlmResponse, Part, ScriptedModel, Usage"
    ),
    HELD,
    f'''%%tool
async def fetch_data(city: str) -> dict:
    """Fetch a city's data, slowly.

    Args:
        city: The city.
    """
    await asyncio.sleep(0.4)
    return {{"city": city, "rows": 12}}


def flaky(city: str) -> dict:
    """Always fails.

    Args:
        city: The city.
    """
    raise ValueError("no data for " + {PAYLOADS[0]!r})


async def pause() -> dict:
    """Wait while the test looks at the live view."""
    await held("timeline.hold")
    return {{"paused": True}}''',
    """def call(name, usage, **args):
    return LlmResponse(Content("model", [Part(function_call=FunctionCall(name, args))]), usage=Usage(*usage))

model = ScriptedModel([call("fetch_data", (120, 8, 128), city="Tokyo"), call("flaky", (140, 6, 146), city="Oslo"),
                       call("pause", (150, 4, 154)),
                       LlmResponse(Content.model("Tokyo has 12 rows."), usage=Usage(160, 9, 169))])""",
    f"%%agent timed --model model --tools fetch_data,flaky,pause\nAnswer with data. {PAYLOADS[1]}",
    "%%chat timed\nHow many rows for Tokyo?",
    "%adk trace timed",
]

GEOMETRY_JS = """rows => rows.map(bar => {
  const track = bar.parentElement.getBoundingClientRect();
  const box = bar.getBoundingClientRect();
  return {left: (box.left - track.left) / track.width * 100, width: box.width / track.width * 100,
          style: bar.getAttribute("style")};
})"""


ROWS_JS = "grid => [...grid.children].map(c => c.innerText)"
ERROR_COLOR = "var(--jp-error-color1,#d32f2f)"  # waterfall.py's bar of a failed step


def _rows(grid: Any) -> tuple[list[str], list[str], list[str]]:
    """A waterfall grid's rows as shown: labels, metas (latency · tokens) and error lines.
    A row is three cells (label, bar, meta), then one more when the step failed ("⚠ ...")."""
    cells = grid.evaluate(ROWS_JS)
    at = [i for i, t in enumerate(cells) if re.match(r"^(\d+ ms|[\d.]+ s|\d+ min \d+ s|running…)", t)]
    return [cells[i - 2] for i in at], [cells[i] for i in at], [t for t in cells if t.startswith("⚠")]


def _seconds(meta: str) -> float:
    """The latency a row shows ("412 ms", "1.3 s", "1 min 2 s") in seconds."""
    first = meta.split(" · ")[0]
    if m := re.fullmatch(r"(\d+) ms", first):
        return int(m[1]) / 1000
    if m := re.fullmatch(r"([\d.]+) s", first):
        return float(m[1])
    m = re.fullmatch(r"(\d+) min (\d+) s", first)
    assert m, meta
    return int(m[1]) * 60 + int(m[2])


def _check_bars(lab_page: LabPage, bars: Any, metas: list[str]) -> list[dict[str, Any]]:
    """Each bar drawn where its style puts it, as wide as its step took (the run's row is 100 %)."""
    shown = bars.evaluate_all(GEOMETRY_JS)
    assert len(shown) == len(metas) >= 8, (len(shown), metas)
    total = _seconds(metas[0])
    for bar, meta in zip(shown, metas, strict=True):
        style = dict(re.findall(r"(?<![-\w])(left|width):([\d.]+)%", bar["style"]))
        assert bar["left"] == pytest.approx(float(style["left"]), abs=0.6), bar
        if float(style["width"]) > 1:  # a bar of a few ms is drawn 2 px wide at least
            assert bar["width"] == pytest.approx(float(style["width"]), abs=0.6), bar
        if "running" not in meta:
            assert float(style["width"]) == pytest.approx(_seconds(meta) / total * 100, abs=2.5), (bar, meta, total)
    return shown


def test_waterfall_live_saved_and_from_adk_trace(lab: Lab, lab_page: LabPage) -> None:
    path = write_notebook(lab, "timeline.ipynb", TIMED)
    chat, trace_cell = (
        code_index(lab, path, "%%chat"),
        code_index(lab, path, "%adk trace"),
    )
    lab_page.open(path)
    lab_page.hold("timeline.hold")
    try:
        lab_page.run_all()
        view = lab_page.widgets(chat)
        lab_page.wait_for(
            lambda: any(
                t["name"] == "pause" and t["status"] == "running"
                for t in lab_page.run_snapshot(chat).get("tools") or []
            ),
            120,
            "the pause tool",
        )
        folded = view.locator('[data-adk="trace"] > details.adk-trace')
        assert folded.count() == 1 and not folded.locator(".adk-waterfall").is_visible(), "live, folded"
        folded.locator("summary").click()  # the Timeline, opened as a user would
        timeline = folded.locator(".adk-waterfall")
        assert timeline.is_visible()
        lab_page.eventually(lambda: _contains(timeline.inner_text(), "running…"))
        names, metas, errors = _rows(timeline)
        assert names[:2] == ["▶ timed", "🤖 timed"] and names[2].startswith("💬") and names[3] == "🔧 fetch_data", names
        assert "pause" in names[-1] and metas[-1] == "running…", "the running tool is the last row so far"
        assert "120 in · 8 out" in timeline.inner_text()
        assert len(errors) == 1 and PAYLOADS[0] in errors[0], "the failed tool marked, its message as text"
        assert timeline.locator(f'.adk-wf-bar[style*="{ERROR_COLOR}"]').count() == 1, "one bar drawn as failed"
        lab_page.screenshot_of(view, "live-timeline")
    finally:
        lab_page.release("timeline.hold")

    lab_page.wait_run_done(60)
    lab_page.assert_no_errors()
    transcript = lab_page.transcripts(chat)
    assert transcript.count() == 1 and lab_page.widgets(chat).count() == 0
    folded = transcript.locator("details.adk-trace")
    assert folded.count() == 1 and not folded.locator(".adk-waterfall").is_visible(), "saved folded"
    folded.locator("summary").click()
    saved = folded.locator(".adk-waterfall")
    assert saved.is_visible()
    rows = saved.evaluate(ROWS_JS)
    labels, metas, _ = _rows(saved)
    saved_bars = _check_bars(lab_page, saved.locator(".adk-wf-bar"), metas)
    assert any(PAYLOADS[0] in t for t in rows) and "no data for" in saved.inner_text()
    tool_row = labels.index("🔧 fetch_data")
    assert saved_bars[tool_row]["width"] >= 0.4 / _seconds(metas[0]) * 100 - 1, "fetch_data slept 0.4 s"
    lab_page.screenshot_of(transcript, "saved-timeline")

    out = lab_page.code_cells().nth(trace_cell).locator(".adk-trace-view")
    assert out.count() == 1 and "Trace of timed (its last run)" in out.inner_text()
    drawn = out.locator(".adk-waterfall").evaluate(ROWS_JS)
    assert drawn == rows, "%adk trace draws the run the transcript saved"
    _check_bars(lab_page, out.locator(".adk-wf-bar"), metas)
    assert lab_page.pwned() is None
    lab_page.screenshot_of(out, "adk-trace")
