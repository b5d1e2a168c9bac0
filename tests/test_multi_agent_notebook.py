"""notebooks/06_multi_agent.ipynb on a real kernel, offline (scripted models), checked on what a
learner reads: each team's lanes, the hand-off, the agent used as a tool, the graphs."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
KEYS = ("GOOGLE_API_KEY", "GEMINI_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")


@pytest.fixture(scope="module")
def nb06() -> nbformat.NotebookNode:
    saved = {k: os.environ.pop(k) for k in KEYS if k in os.environ}  # offline: the scripted models
    try:
        nb = nbformat.read(NOTEBOOKS / "06_multi_agent.ipynb", as_version=4)
        NotebookClient(
            nb,
            timeout=120,
            kernel_name="python3",
            resources={"metadata": {"path": str(NOTEBOOKS)}},
        ).execute()
    finally:
        os.environ.update(saved)
    return nb


def shown(nb: nbformat.NotebookNode, start: str, mime: str = "text/plain") -> str:
    (cell,) = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith(start)]
    assert not [o for o in cell.outputs if o.output_type == "error"], start
    return "\n".join(
        o.get("text", "") if o.output_type == "stream" else o.get("data", {}).get(mime, "") for o in cell.outputs
    )


def in_order(text: str, *parts: str) -> None:
    """Each part is in `text`, after the one before it."""
    at = 0
    for part in parts:
        found = text.find(part, at)
        assert found != -1, (part, text[at:])
        at = found + len(part)


def test_the_pipeline_runs_each_agent_in_its_lane_and_passes_notes_on(
    nb06: nbformat.NotebookNode,
) -> None:
    run = shown(nb06, "%%chat pipeline")
    in_order(
        run,
        "▸ research",
        "Tea was first drunk",
        "state: notes",
        "▸ writer",
        "**A short history of tea.**",
        "▸ editor",
        "A short history of tea: brewed",
    )
    assert "draft" in shown(nb06, "%adk state pipeline")
    page = shown(nb06, "%%chat pipeline", "text/html")
    assert "<svg" in page and "▸ editor" in page and "<strong>A short history of tea.</strong>" in page


def test_the_fan_out_labels_each_branch(nb06: nbformat.NotebookNode) -> None:
    """Each branch's answer reads whole under its header, though their chunks interleaved."""
    run = shown(nb06, "%%chat both")
    in_order(
        run,
        "▸ pros · both.pros\nFor: one place to look, one bill, less to maintain.\n",
        "▸ cons · both.cons\nAgainst: one outage stops everything, and it is harder to change one part.\n",
        "▸ pros · both.pros\nstate: pros = For",
        "▸ cons · both.cons\nstate: cons = Against",
    )


def test_the_loop_stops_at_exit_loop(nb06: nbformat.NotebookNode) -> None:
    run = shown(nb06, "%%chat refine")
    in_order(
        run,
        "▸ critic",
        "Too vague",
        "▸ reviser",
        "Lisbon in 2027",
        "▸ critic",
        "tool exit_loop",
    )
    assert "Good now." not in run, "the loop ended when the critic escalated"


def test_the_coordinator_hands_off_to_support(nb06: nbformat.NotebookNode) -> None:
    run = shown(nb06, "%%chat desk")
    in_order(
        run,
        "tool transfer_to_agent",
        "transfer to support",
        "▸ support",
        "restart the router",
    )
    assert "invoice" not in run


def test_the_agent_used_as_a_tool_shows_inside_its_card(
    nb06: nbformat.NotebookNode,
) -> None:
    run = shown(nb06, "%%chat lead")
    in_order(
        run,
        "tool fact_checker(",
        "    » fact_checker: The Great Wall is about 21,000 km",
        "Checked: about 21,000",
    )
    assert "▸" not in run, "its steps belong to the tool card, not to a lane of the lead's run"


def test_the_graphs(nb06: nbformat.NotebookNode) -> None:
    svg = ET.fromstring(shown(nb06, "%adk graph desk", "text/html"))
    labels = [t.text for t in svg.iter("{http://www.w3.org/2000/svg}text")][::2]
    assert labels == ["desk", "billing", "support"]
    dotted = [p for p in svg.iter("{http://www.w3.org/2000/svg}path") if p.get("stroke-dasharray") == "5,4"]
    assert len(dotted) == 4, "desk may hand off to billing and support, and each may hand back"
    mermaid = shown(nb06, "%adk graph lead --mermaid")
    assert mermaid.splitlines() == [
        "flowchart TD",
        '    n0("lead (llm)")',
        '    n1("fact_checker (llm)")',
        "    n0 -- AgentTool --> n1",
    ]
