"""The README's picture, taken in a real JupyterLab: a finished %%chat with a tool card (its
arguments and result), the inline chart the tool returned, and the tool's PDF links.

The test checks the transcript shows what the README's caption says, then writes
tests/browser/screenshots/test_readme_picture-readme.png; docs/chat-in-jupyterlab.png is that
file (copied by hand when the view changes, so a test run never rewrites a tracked file).
"""

from __future__ import annotations

from typing import Any

import pytest
from test_lab import PNG_CELL, _hrefs, _wait_images, code_index, write_notebook

pytestmark = pytest.mark.browser

CHART_TOOL = '''%%tool
def sales_chart(quarter: str, values: list[int]) -> dict:
    """Chart a quarter's sales by region, with the quarter's report.

    Args:
        quarter: The quarter, e.g. "Q4".
        values: Sales of the North, South, East and West regions.
    """
    import io
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3.6, 1.9), dpi=100)
    ax.bar(["North", "South", "East", "West"][: len(values)], values, color=["#4285f4", "#db4437", "#f4b400", "#0f9d58"])
    ax.set_title(f"{quarter} sales", fontsize=10)
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    chart = io.BytesIO()
    fig.savefig(chart, format="png")
    plt.close(fig)
    return {"quarter": quarter, "best": max(values),
            "inline_data": [{"mime_type": "image/png", "data": chart.getvalue()},
                            {"mime_type": "application/pdf", "data": PDF}],
            "file_data": [{"mime_type": "application/pdf", "file_uri": "https://example.com/reports/q4-2025.pdf"}]}'''

CELLS = [
    "%load_ext adk_notebook\nfrom adk_notebook import FunctionCall, ScriptedModel",
    PNG_CELL,
    CHART_TOOL,
    'model = ScriptedModel([FunctionCall("sales_chart", {"quarter": "Q4", "values": [12, 19, 7, 15]}), '
    '"Here is the **Q4** chart: the South (19) sold the most. The full report is attached."])',
    "%%agent chart_bot --model model --tools sales_chart\nChart sales when asked.",
    "%%chat chart_bot\nChart Q4 sales for me.",
]


def test_readme_picture(lab: Any, lab_page: Any) -> None:
    path = write_notebook(lab, "readme_picture.ipynb", CELLS)
    chat = code_index(lab, path, "%%chat")
    lab_page.open(path)
    lab_page.run_all_and_wait(180)
    lab_page.assert_no_errors()
    transcript = lab_page.transcripts(chat)
    assert transcript.count() == 1
    shown = transcript.inner_text()
    assert "🔧 sales_chart" in shown and '"values": [12, 19, 7, 15]' in shown, shown
    assert "the South (19) sold the most" in shown
    assert _wait_images(lab_page, transcript.locator("img")) == 1, "the chart is an image that loaded"
    hrefs = _hrefs(transcript.locator("a[href]"))
    assert "https://example.com/reports/q4-2025.pdf" in hrefs, hrefs
    assert any(h.startswith("data:application/pdf") for h in hrefs), hrefs
    transcript.locator("details > summary", has_text="result").click()  # the tool's result, open
    lab_page.settle(transcript)
    lab_page.screenshot_of(transcript, "readme")
