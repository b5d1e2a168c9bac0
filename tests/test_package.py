"""The package surface: what `import adk_notebook` exports, and what it does not drag in."""

from __future__ import annotations

import subprocess
import sys

import adk_notebook


def test_all_is_sorted_and_every_name_resolves() -> None:
    names = adk_notebook.__all__
    assert names == sorted(names, key=lambda n: (n[0].islower(), n)), "classes first, then functions, each sorted"
    assert len(set(names)) == len(names)
    for name in names:
        assert getattr(adk_notebook, name) is not None, name


def test_the_design_entry_points_are_exported() -> None:
    for name in [
        "LlmAgent",
        "Runner",
        "InMemorySessionService",
        "SqliteSessionService",
        "Content",
        "FunctionCall",
        "tool",
        "ScriptedModel",
        "FunctionModel",
        "GeminiModel",
        "OpenAIModel",
        "AnthropicModel",
        "LlmAgentBuilder",
        "RetryBudget",
        "ToolExecutionStrategy",
        "AdkError",
        "FunctionTool",
    ]:
        assert name in adk_notebook.__all__, name


def test_import_stays_light() -> None:
    """Heavy dependencies load when first needed: pydantic with the first schema, httpx with the
    first provider, IPython and the widgets with %load_ext."""
    code = "import sys, adk_notebook; print(sorted(m for m in ('pydantic', 'httpx', 'IPython', 'ipywidgets', 'anywidget') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
