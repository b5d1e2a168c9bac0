"""bubblewrap for the code executor's tests: skip a test that needs it where it cannot run, or
fail it when ADK_SANDBOX_REQUIRED=1 (CI, whose .ci/run installs bubblewrap)."""

from __future__ import annotations

import os

import pytest

from adk_notebook.tools.code_sandbox import bwrap_problem

REQUIRED = os.environ.get("ADK_SANDBOX_REQUIRED", "") not in ("", "0")


def require_bwrap() -> None:
    """Return when PythonCodeExecutor(sandbox="bwrap") can run here; else skip, or fail in CI."""
    problem = bwrap_problem()
    if problem is None:
        return
    if REQUIRED:
        pytest.fail(f"the bubblewrap sandbox is required (ADK_SANDBOX_REQUIRED=1) but {problem}", pytrace=False)
    pytest.skip(problem)
