"""Trace files under hostile content: written whatever a span holds, read back or refused clearly.

- JsonlTraceExporter: a trace holding lone surrogates (a file name read with surrogateescape,
  an exception's text) is written without failing the run, and reads back.
- read_traces: each damaged line is an AdkError `invalid_trace_file` naming the file, the line
  and the field, never a raw error, never a span with a start that is not a number.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

from adk_notebook import AdkError, FunctionCall, JsonlTraceExporter, LlmAgent, ScriptedModel, read_traces

UNDECODABLE = os.fsdecode(b"report-\xff.pdf")  # 'report-\udcff.pdf': a name read with surrogateescape


def open_report(name: str) -> dict:
    """Open a report."""
    raise FileNotFoundError(f"no file {UNDECODABLE} next to {name}")


async def test_a_trace_holding_lone_surrogates_is_written_and_read_back(tmp_path: Path, tally: Any) -> None:
    path = tmp_path / "runs.jsonl"
    exporter = JsonlTraceExporter(path)
    with tally.case("traces: JSONL runs holding lone surrogates, written and read back"):
        script = [FunctionCall("open_report", {"name": "q3"}), "It is missing."]
        agent = LlmAgent(name="reports", model=ScriptedModel(script), tools=[open_report])
        result = await agent.run_async("Open the Q3 report", plugins=[exporter])
        assert result.text == "It is missing."
        (trace,) = read_traces(path)
        (tool,) = trace.find("tool")
        assert tool.error_type == "FileNotFoundError" and "report-" in (tool.error_message or "")
    with tally.case("traces: JSONL runs holding lone surrogates, written and read back"):
        failing = LlmAgent(name="reports", model=ScriptedModel([RuntimeError("model down \ud800")]))
        with pytest.raises(RuntimeError, match="model down"):
            await failing.run_async("Hi", plugins=[exporter])
        traces = read_traces(path)
        assert len(traces) == 2 and traces[1].error_type == "RuntimeError"
        assert "model down" in (traces[1].error_message or "")
    path.read_bytes().decode("utf-8")  # the file stays UTF-8 any reader takes


GOOD = {
    "name": "run a",
    "kind": "run",
    "start": 1_750_000_000.0,
    "duration": 0.5,
    "agent": "a",
    "children": [{"name": "invoke_agent a", "kind": "agent", "start": 1_750_000_000.1, "duration": 0.2}],
}


def without(key: str) -> dict[str, Any]:
    return {k: v for k, v in GOOD.items() if k != key}


def child_with(**fields: Any) -> dict[str, Any]:
    return {**GOOD, "children": [{**GOOD["children"][0], **fields}]}


def nested(depth: int) -> str:
    return '{"name": "x", "kind": "run", "start": 1, "children": [' * depth + "{}" + "]}" * depth


LINE = json.dumps(GOOD)
# (what, the damaged second line, fragments the message must hold besides the file and "Line 2")
DAMAGED_LINES: list[tuple[str, str | bytes, list[str]]] = [
    ("truncated line", LINE[:40], ["JSON"]),
    ("not JSON", "hello traces", ["JSON"]),
    ("a list", "[1, 2]", ["object"]),
    ("a number", "42", ["object"]),
    ("a string", '"run a"', ["object"]),
    ("null", "null", ["object"]),
    ("name missing", json.dumps(without("name")), ["name", "missing"]),
    ("kind missing", json.dumps(without("kind")), ["kind", "missing"]),
    ("start missing", json.dumps(without("start")), ["start", "missing"]),
    ("start 'yesterday'", json.dumps({**GOOD, "start": "yesterday"}), ["start", "number"]),
    ("start NaN", json.dumps({**GOOD, "start": math.nan}), ["start", "number"]),
    ("start Infinity", json.dumps({**GOOD, "start": math.inf}), ["start", "number"]),
    ("start true", json.dumps({**GOOD, "start": True}), ["start", "number"]),
    ("start an object", json.dumps({**GOOD, "start": {"s": 1}}), ["start", "number"]),
    ("duration negative", json.dumps({**GOOD, "duration": -1}), ["duration", "number"]),
    ("duration text", json.dumps({**GOOD, "duration": "1s"}), ["duration", "number"]),
    ("name a number", json.dumps({**GOOD, "name": 5}), ["name", "text"]),
    ("kind unknown", json.dumps({**GOOD, "kind": "banana"}), ["kind", "run, agent, model"]),
    ("tokens text", json.dumps({**GOOD, "input_tokens": "12"}), ["input_tokens", "whole number"]),
    ("tokens negative", json.dumps({**GOOD, "output_tokens": -1}), ["output_tokens", "whole number"]),
    ("cost NaN", json.dumps({**GOOD, "cost": math.nan}), ["cost", "number"]),
    ("error_message a list", json.dumps({**GOOD, "error_message": ["x"]}), ["error_message", "text"]),
    ("children an object", json.dumps({**GOOD, "children": {}}), ["children", "list"]),
    ("a child not an object", json.dumps({**GOOD, "children": [5]}), ["children[0]", "object"]),
    ("a child's start 'yesterday'", json.dumps(child_with(start="yesterday")), ["children[0].start", "number"]),
    ("a child's kind missing", json.dumps(child_with(kind=None)), ["children[0].kind", "missing"]),
    ("nested 100k deep", nested(100_000), ["deep"]),
    ("nested 200 deep", nested(200), ["children[0].children[0].", "name is missing"]),
    ("not UTF-8", b'{"name": "\xff"}', ["UTF-8"]),
]


@pytest.mark.parametrize(("what", "line", "fragments"), DAMAGED_LINES, ids=[d[0] for d in DAMAGED_LINES])
def test_a_damaged_trace_file_names_the_file_the_line_and_the_field(
    tmp_path: Path, tally: Any, what: str, line: str | bytes, fragments: list[str]
) -> None:
    path = tmp_path / "runs.jsonl"
    damaged = line if isinstance(line, bytes) else line.encode("utf-8")
    path.write_bytes(LINE.encode() + b"\n" + damaged + b"\n" + LINE.encode() + b"\n")
    with tally.case("traces: damaged trace lines, refused naming line and field"):
        with pytest.raises(AdkError) as caught:
            read_traces(path)
        message = caught.value.message
        assert caught.value.code == "invalid_trace_file", repr(caught.value)
        assert repr(str(path)) in message and "Line 2" in message, message
        for fragment in fragments:
            assert fragment in message, f"{fragment!r} not in: {message}"


def test_a_good_file_reads_back_whole(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text(LINE + "\n\n" + json.dumps({**GOOD, "tool": "x\ud800"}) + "\n", encoding="utf-8")
    first, second = read_traces(path)
    assert first.to_dict() == {**GOOD, "children": [{**GOOD["children"][0], "children": []}]}
    assert second.tool == "x\ud800"
