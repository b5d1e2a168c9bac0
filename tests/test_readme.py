"""The README's examples run as pasted: its notebook cells, then its Python blocks, in order, in
one real kernel (nbclient), offline (`--model auto` as tests/test_notebooks.py sets it up)."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from test_notebooks import auto_model_env

README = Path(__file__).resolve().parent.parent / "README.md"

pytestmark = pytest.mark.notebook


def readme_cells() -> list[str]:
    """The ```python blocks of "In a notebook" and "In Python", in order."""
    text = README.read_text(encoding="utf-8")
    start, end = text.index("## In a notebook"), text.index("## What it promises")
    return re.findall(r"```python\n(.*?)```", text[start:end], flags=re.DOTALL)


def test_the_readme_examples_run_as_pasted(tmp_path: Path) -> None:
    cells = readme_cells()
    assert cells[0].strip() == "%load_ext adk_notebook" and len(cells) >= 6
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    with auto_model_env() as env:
        NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute(
            env=env
        )  # raises CellExecutionError on the first cell that fails
    outputs = {i: [o for o in c.outputs] for i, c in enumerate(nb.cells)}
    assert not [o for out in outputs.values() for o in out if o.output_type == "error"]
    printed = "".join(o.get("text", "") for out in outputs.values() for o in out if o.output_type == "stream")
    assert "It is sunny in Tokyo." in printed and "Still sunny." in printed
    chat = next(i for i, c in enumerate(cells) if c.startswith("%%chat"))
    [view] = [o for o in outputs[chat] if o.output_type == "display_data" and "text/html" in o.data]
    assert view.data["text/plain"].startswith("[weather_bot] done · model "), view.data["text/plain"]
    assert "get_weather" in view.data["text/plain"]
