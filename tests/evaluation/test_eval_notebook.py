"""notebooks/08_evaluation.ipynb on a real kernel, offline, checked on what a learner reads."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "08_evaluation.ipynb"
KEYS = ("GOOGLE_API_KEY", "GEMINI_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[nbformat.NotebookNode, Path]:
    """Run in a folder of its own (it writes its eval set there), with no provider key."""
    folder = tmp_path_factory.mktemp("nb08")
    shutil.copy(NOTEBOOK, folder)
    saved = {k: os.environ.pop(k) for k in KEYS if k in os.environ}
    try:
        notebook = nbformat.read(folder / NOTEBOOK.name, as_version=4)
        NotebookClient(
            notebook,
            timeout=240,
            kernel_name="python3",
            resources={"metadata": {"path": str(folder)}},
        ).execute()
    finally:
        os.environ.update(saved)
    return notebook, folder


def shown(nb: nbformat.NotebookNode, start: str, mime: str = "text/plain") -> list[str]:
    return [
        "\n".join(
            o.get("text", "") if o.output_type == "stream" else o.get("data", {}).get(mime, "") for o in c.outputs
        )
        for c in nb.cells
        if c.cell_type == "code" and c.source.startswith(start)
    ]


def test_it_is_saved_without_outputs() -> None:
    saved = nbformat.read(NOTEBOOK, as_version=4)
    assert not any(c.get("outputs") or c.get("execution_count") for c in saved.cells if c.cell_type == "code")


@pytest.mark.notebook
def test_the_change_shows_as_a_better_score(
    ran: tuple[nbformat.NotebookNode, Path],
) -> None:
    nb, _ = ran
    assert not [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
    first = shown(nb, "%adk eval weather_bot", "text/html")[0]
    assert "paris_time" in first and "get_time({&quot;city&quot;: &quot;Paris&quot;})" in first  # expected, escaped
    assert "weather: 1/2 cases passed, 1 failed" in shown(nb, "before = _")[0]
    diff = shown(nb, "from adk_notebook.evaluation import evaluate")[0]
    assert "paris_time   failed → passed: tool_trajectory_avg_score 0.00 → 1.00" in diff


@pytest.mark.notebook
def test_a_saved_chat_becomes_a_case_and_ray_scores_the_same(
    ran: tuple[nbformat.NotebookNode, Path],
) -> None:
    nb, folder = ran
    assert "Saved case 'oslo' (1 turns, 2 tool calls)" in shown(nb, "%adk eval save")[0]
    cases = json.loads((folder / "weather.evalset.json").read_text(encoding="utf-8"))["eval_cases"]
    assert [c["eval_id"] for c in cases] == ["tokyo", "paris_time", "oslo"]
    assert "weather: 3/3 cases passed" in shown(nb, "%adk eval weather_bot")[1]
    assert "weather: 3/3 cases passed" in shown(nb, "from adk_notebook import LlmAgent")[0]
