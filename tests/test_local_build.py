"""README command 1 builds llama.cpp (the `[local]` extra) from source: only what the local model
loads, and the README says how long that takes and why.

llama-cpp-python has no Linux wheel on PyPI, so pip compiles llama.cpp. Its default build also
compiles the multimodal library (mtmd, `-DLLAVA_BUILD`), which a text model never loads; the
command turns it off. The local model's process shows which of llama.cpp's libraries it loads.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from adk_notebook import LlmAgent

ROOT = Path(__file__).resolve().parent.parent


def command_1() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return readme.split("\n## Set up\n", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]


def test_readme_command_1_is_one_line_that_skips_what_the_local_model_never_loads() -> None:
    block = command_1()
    [line] = [x for x in block.splitlines() if x.startswith("python3 -m venv .venv")]
    assert "&& CMAKE_ARGS=" in line and re.search(r'CMAKE_ARGS="[^"]*-DLLAVA_BUILD=OFF', line), line
    assert '.venv/bin/pip install -e ".[notebook,local]"' in line
    assert line.endswith("jupyter nbconvert --to html --execute notebooks/01_quickstart.ipynb")
    comments = " ".join(x.lstrip("# ") for x in block.splitlines() if x.startswith("#"))
    assert re.search(r"\d+ minutes", comments), "the README says how long the build takes"
    assert "-v" in comments, "and how to see the compiler work meanwhile"


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason='needs "adk-notebook[local]"')
def test_the_local_model_process_loads_llama_and_ggml_only() -> None:
    from adk_notebook.models.local import LocalModel

    model = LocalModel()
    try:
        LlmAgent(name="hi", model=model).run("Say hi.")
        assert model.pid is not None
        maps = Path(f"/proc/{model.pid}/maps").read_text()
    finally:
        model.close()
    loaded = {Path(p).name.split(".so")[0] for p in re.findall(r"\s(/\S+\.so[.\d]*)$", maps, re.M)}
    assert {"libllama", "libggml", "libggml-base", "libggml-cpu"} <= loaded, sorted(loaded)
    assert not {"libmtmd", "libllava", "libllama-common"} & loaded, sorted(loaded)
