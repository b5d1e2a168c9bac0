"""notebooks/07_mcp.ipynb on a real kernel, offline, checked on what a learner reads."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import struct
import zlib
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "07_mcp.ipynb"
KEYS = ("GOOGLE_API_KEY", "GEMINI_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")


@pytest.fixture(scope="module")
def nb(tmp_path_factory: pytest.TempPathFactory) -> nbformat.NotebookNode:
    """Run in a folder of its own (it writes my_tools.py there), with no provider key: offline."""
    folder = tmp_path_factory.mktemp("nb07")
    shutil.copy(NOTEBOOK, folder)
    saved = {k: os.environ.pop(k) for k in KEYS if k in os.environ}
    try:
        notebook = nbformat.read(folder / NOTEBOOK.name, as_version=4)
        NotebookClient(
            notebook, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(folder)}}
        ).execute()
    finally:
        os.environ.update(saved)
    return notebook


def cells(nb: nbformat.NotebookNode, start: str) -> list[nbformat.NotebookNode]:
    return [c for c in nb.cells if c.cell_type == "code" and c.source.startswith(start)]


def cell(nb: nbformat.NotebookNode, start: str) -> nbformat.NotebookNode:
    [found] = cells(nb, start)
    return found


def shown(c: nbformat.NotebookNode, mime: str = "text/plain") -> str:
    return "\n".join(
        o.get("text", "") if o.output_type == "stream" else o.get("data", {}).get(mime, "") for o in c.outputs
    )


def test_it_is_saved_without_outputs() -> None:
    saved = nbformat.read(NOTEBOOK, as_version=4)
    assert not any(c.get("outputs") or c.get("execution_count") for c in saved.cells if c.cell_type == "code")


@pytest.mark.notebook
def test_every_cell_runs_and_nothing_says_cancel_scope(nb: nbformat.NotebookNode) -> None:
    everything = json.dumps([c.get("outputs", []) for c in nb.cells])
    assert "cancel scope" not in everything.lower() and "Traceback" not in everything
    assert not [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]


@pytest.mark.notebook
def test_a_real_pypi_server_answers_in_a_tool_card(nb: nbformat.NotebookNode) -> None:
    assert "tool get_current_time(timezone: string)  [read-only]" in shown(cell(nb, "%adk mcp time"))
    chat = cell(nb, "%%chat clock")
    assert re.search(r'tool get_current_time\(\{"timezone": "Asia/Tokyo"\}\) → ok', shown(chat))
    assert "+09:00" in shown(chat) and "get_current_time" in shown(chat, "text/html")
    assert "America/New_York" in shown(cell(nb, "from adk_notebook.mcp import"))


@pytest.mark.notebook
def test_our_own_server_returns_an_image_shown_inline(nb: nbformat.NotebookNode) -> None:
    page = shown(cell(nb, "%%chat painter"), "text/html")
    [png] = [base64.b64decode(m) for m in re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", page)]
    width, height = struct.unpack(">II", png[16:24])
    idat = png.index(b"IDAT")
    pixels = zlib.decompress(png[idat + 4 : idat + 4 + struct.unpack(">I", png[idat - 4 : idat])[0]])
    assert (width, height) == (24, 24) and pixels[1:4] == bytes((0, 128, 128))  # a teal swatch
    _, both, _ = cells(nb, "%%mcp")
    assert re.search(r"time +stdio .+ connected \(unchanged\)", shown(both))  # its server kept running


@pytest.mark.notebook
def test_a_failing_server_shows_its_stderr(nb: nbformat.NotebookNode) -> None:
    [every] = [c for c in nb.cells if c.source == "%adk mcp"]
    status = shown(every)
    assert re.search(r"fussy +stdio +adk-notebook mcp serve no_such_file.py +failed", status)
    assert "Last stderr lines of fussy:\n    error: mcp serve: there is no file 'no_such_file.py'." in status
    assert re.search(r"colors +stdio .+ connected +swatch, mix", status)
