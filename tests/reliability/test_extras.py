"""A user without the extras: star-imports work, and whatever needs an extra says which one, in one line.

Here every extra is installed, so their modules are hidden the way Python documents (None in
`sys.modules`: importing raises ImportError, `find_spec` finds nothing); .ci/run also runs
tests/check_base_install.py in a virtual environment with the base install only.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import nbformat
import pytest
from IPython.core.error import UsageError
from IPython.testing import globalipapp
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from adk_notebook import FunctionModel, LlmAgent
from adk_notebook.evaluation import evaluate
from adk_notebook.extras import EXTRAS

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
EVALSET = {
    "eval_set_id": "hello",
    "eval_cases": [
        {
            "eval_id": "hi",
            "conversation": [
                {
                    "user_content": {"role": "user", "parts": [{"text": "Hi"}]},
                    "final_response": {"role": "model", "parts": [{"text": "Hello!"}]},
                }
            ],
        }
    ],
}


def test_star_imports_work_and_each_extra_is_named_when_missing(tally: Any) -> None:
    with tally.case("extras: star-import and missing-extra errors, extras hidden"):
        run = subprocess.run(
            [sys.executable, "tests/check_base_install.py", "--hide-extras"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode == 0, run.stdout + run.stderr
        assert "every check held" in run.stdout


def test_the_extras_are_pyprojects_and_the_readme_lists_each() -> None:
    optional = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(EXTRAS) == set(optional) - {"dev", "test", "browser"}  # those three are the project's own
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Extras\n", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\| `\[(\w+)\]` \| (.+) \|$", section, re.M)
    assert listed == [(name, extra.brings) for name, extra in EXTRAS.items()]


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.name)
def test_every_notebook_states_its_extras_first_and_checks_them(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    first_text = next(c for c in nb.cells if c.cell_type == "markdown").source
    first_code = next(c for c in nb.cells if c.cell_type == "code").source.splitlines()
    stated = re.search(r'\*\*Needs:\*\* `pip install "adk-notebook\[([\w,]+)\]"', first_text)
    assert stated, f"{path.name}: the first cell does not say which extras it needs"
    assert first_code[:2] == ["%load_ext adk_notebook", f"%adk requires {' '.join(stated[1].split(','))}"]


async def test_evaluate_without_rouge_score_names_the_eval_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tally: Any
) -> None:
    """It used to score every case None (and notebook 08 died formatting that None)."""
    path = tmp_path / "hello.evalset.json"
    path.write_text(json.dumps(EVALSET))
    agent = LlmAgent(name="hello", model=FunctionModel(lambda request: "Hello!"))
    monkeypatch.setitem(sys.modules, "rouge_score", None)
    with tally.case("extras: evaluate with response_match_score, no rouge-score"):
        with pytest.raises(ImportError, match=re.escape('pip install "adk-notebook[eval]"')):
            await evaluate(agent, path)


def test_adk_eval_without_rouge_score_is_one_line_naming_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tally: Any
) -> None:
    path = tmp_path / "hello.evalset.json"
    path.write_text(json.dumps(EVALSET))
    shell = globalipapp.start_ipython() or globalipapp.get_ipython()
    shell.run_cell("%load_ext adk_notebook")
    shell.user_ns["hello_model"] = FunctionModel(lambda request: "Hello!")
    shell.run_cell("%%agent hello --model hello_model\nSay hello.")
    monkeypatch.setitem(sys.modules, "rouge_score", None)
    try:
        with tally.case("extras: %adk eval, no rouge-score"):
            with pytest.raises(UsageError) as raised:
                shell.run_line_magic("adk", f"eval hello {path}")
            assert 'pip install "adk-notebook[eval]"' in str(raised.value)
            assert "\n" not in str(raised.value)
    finally:  # the shell is IPython's one global shell: the next module's tests must not see them
        for name in ("hello", "hello_model"):
            shell.user_ns.pop(name, None)


@pytest.mark.notebook
def test_notebook_08_without_rouge_score_stops_at_its_first_cell_naming_the_extra(tmp_path: Path, tally: Any) -> None:
    """On a real kernel whose Python cannot import rouge_score (a sitecustomize hides it)."""
    (tmp_path / "sitecustomize.py").write_text("import sys\nsys.modules['rouge_score'] = None\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])))
    nb = nbformat.read(NOTEBOOKS / "08_evaluation.ipynb", as_version=4)
    client = NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    with tally.case("extras: notebook 08 without [eval]"):
        with pytest.raises(CellExecutionError) as raised:
            client.execute(env=env)
        first, *rest = [c for c in nb.cells if c.cell_type == "code"]
        assert [(o.output_type, o.get("name"), o.get("text")) for o in first.outputs] == [
            (
                "stream",
                "stderr",
                'UsageError: this notebook needs the [eval] extra (rouge_score is missing): pip install "adk-notebook[eval]"\n',
            )
        ], raised.value  # IPython prints a UsageError as this one line, no traceback
        assert not [c for c in rest if c.get("outputs")], "the notebook went on after its first cell"
