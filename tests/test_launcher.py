"""The console REPL of seed 004: Launcher(agent).run() and `python -m adk_notebook chat`."""

from __future__ import annotations

import io
import subprocess
import sys

from adk_notebook import FunctionCall, LlmAgent, ScriptedModel, tool
from adk_notebook.launcher import Launcher


@tool
def calculate(a: float, b: float, operation: str) -> dict:
    """Perform arithmetic."""
    return {"result": a * b if operation == "multiply" else a + b}


def test_a_conversation_in_the_console() -> None:
    model = ScriptedModel([FunctionCall("calculate", {"a": 250, "b": 0.15, "operation": "multiply"}),
                           "15% of 250 is 37.5.", "You asked about percentages."])
    lines = iter(["What's 15% of 250?", "", "What did I ask?", "exit"])
    out = io.StringIO()
    Launcher(LlmAgent(name="multi_tool_agent", model=model, tools=[calculate]), input_fn=lambda prompt: next(lines),
             output=out).run()
    text = out.getvalue()
    assert text.startswith("🤖 Agent 'multi_tool_agent' ready!")
    assert "[Using calculate with a=250, b=0.15, operation=multiply]" in text
    assert "Assistant: 15% of 250 is 37.5." in text.replace("[Using calculate with a=250, b=0.15, operation=multiply]\n", "")
    assert "You asked about percentages." in text and text.rstrip().endswith("👋 Goodbye!")
    assert [c.role for c in model.requests[2].contents] == ["user", "model", "tool", "model", "user"], "one session"


def test_end_of_input_quits_cleanly() -> None:
    def no_more(prompt: str) -> str:
        raise EOFError

    out = io.StringIO()
    Launcher(LlmAgent(name="a", model=ScriptedModel([])), input_fn=no_more, output=out).run()
    assert "Goodbye" in out.getvalue()


def test_cli_reports_a_bad_model_in_one_line() -> None:
    proc = subprocess.run([sys.executable, "-m", "adk_notebook", "chat", "--model", "gpt5"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: config.invalid_input: Unknown model string 'gpt5'")
    assert "Traceback" not in proc.stderr
