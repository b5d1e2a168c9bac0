"""The notebooks, executed by a real Jupyter kernel, checked on what they print."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"

pytestmark = pytest.mark.notebook


def execute(name: str) -> nbformat.NotebookNode:
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    return nb


def stream_text(cell: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.output_type == "stream")


def test_quickstart_runs_the_tool_conversation() -> None:
    nb = execute("01_quickstart.ipynb")
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]
    printed = "\n".join(stream_text(c) for c in code)
    assert "{'city': 'Tokyo', 'condition': 'sunny', 'temperature_c': 24}" in printed  # the tool called directly
    assert "[weather_bot] calls get_weather({'city': 'Tokyo'})" in printed
    assert "[weather_bot] get_weather returned {'city': 'Tokyo', 'condition': 'sunny'" in printed
    assert "[weather_bot] It is sunny in Tokyo, 24 °C. Enjoy your walk, Ana!" in printed
    assert "system: You help Ana with the weather." in printed, "the template was filled from state"
    assert "Sunny in Lima too." in printed
