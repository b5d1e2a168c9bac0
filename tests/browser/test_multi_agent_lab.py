"""A multi-agent run in a real JupyterLab in headless Chromium: a 3-agent pipeline streams each
agent's lane live while the agent graph above the lanes marks the agent that is running.

Each agent's model streams its answer and waits after its first chunk until the page has shown
it (`held`, as in test_lab.py), so what is checked does not depend on the machine's speed.
Screenshots go to tests/browser/screenshots/.
"""

from __future__ import annotations

from typing import Any

import pytest
from test_lab import HELD, code_index, write_notebook

Lab = LabPage = Any  # the fixtures' types live in conftest.py

pytestmark = pytest.mark.browser

AGENTS = ("research", "writer", "editor")

PIPELINE = [
    "%load_ext adk_notebook\nimport asyncio\nfrom adk_notebook import Content, Llm, LlmResponse, Part",
    HELD,
    '''class Streamer(Llm):
    """Streams `words`, waiting after the first until the test has seen it on the page."""

    name = "streamer"

    def __init__(self, agent: str, words: list[str]) -> None:
        self.agent, self.words = agent, words

    async def generate_content(self, request, stream=False):
        for i, word in enumerate(self.words):
            await asyncio.sleep(0.02)
            yield LlmResponse(Content("model", [Part(text=word)]), partial=True, turn_complete=False)
            if i == 0:
                await held(f"{self.agent}.hold")
        yield LlmResponse(Content("model", [Part(text="".join(self.words))]), finish_reason="stop")

research_model = Streamer("research", ["research-says ", "tea ", "is ", "old."])
writer_model = Streamer("writer", ["writer-says ", "an ", "essay."])
editor_model = Streamer("editor", ["editor-says ", "done."])''',
    "%%agent research --model research_model --output-key notes\nFind facts.",
    "%%agent writer --model writer_model\nWrite from {notes}.",
    "%%agent editor --model editor_model\nTighten it.",
    "%%agent pipeline --sequential research,writer,editor\nResearch, write, edit.",
    "%%chat pipeline\nTea, please.",
]

LIVE_JS = """(i) => {
  const cell = document.querySelectorAll(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-CodeCell")[i];
  const view = cell && cell.querySelector(".adk-live .adk-run");
  if (!view) return null;
  return {
    lanes: [...view.querySelectorAll(".adk-item.adk-lane")].map((e) => e.textContent),
    text: view.querySelector('[data-adk="body"]').textContent,
    nodes: [...view.querySelectorAll('[data-adk="graph"] svg g.adk-node')].map((g) => g.getAttribute("data-agent")),
    active: [...view.querySelectorAll('[data-adk="graph"] svg g.adk-active')].map((g) => g.getAttribute("data-agent")),
  };
}"""


def test_a_pipeline_streams_each_lane_live_and_the_graph_marks_the_running_agent(lab: Lab, lab_page: LabPage) -> None:
    path = write_notebook(lab, "pipeline.ipynb", PIPELINE)
    chat = code_index(lab, path, "%%chat")
    lab_page.open(path)
    holds = [f"{agent}.hold" for agent in AGENTS]
    lab_page.hold(*holds)
    seen: dict[str, dict[str, Any]] = {}
    try:
        lab_page.run_all()
        for agent in AGENTS:

            def shows_it(agent: str = agent) -> dict[str, Any] | None:
                shot = lab_page.page.evaluate(LIVE_JS, chat)
                if shot and f"▸ {agent}" in shot["lanes"] and f"{agent}-says" in shot["text"] and shot["active"]:
                    return shot
                return None

            seen[agent] = lab_page.wait_for(shows_it, 90, f"the {agent} lane streaming, live")
            if agent == "writer":
                lab_page.screenshot_of(lab_page.widgets(chat).first, "pipeline-live")
            lab_page.release(f"{agent}.hold")
    finally:
        lab_page.release(*holds)
    for n, agent in enumerate(AGENTS):
        shot = seen[agent]
        assert shot["active"] == [agent], f"while {agent} streamed the graph marked {shot['active']}"
        assert shot["lanes"] == [f"▸ {a}" for a in AGENTS[: n + 1]], shot["lanes"]
        assert set(shot["nodes"]) == {"pipeline", *AGENTS}
        assert all(f"{a}-says" not in shot["text"] for a in AGENTS[n + 1 :]), "later agents had not started"
    assert "tea is old." in seen["writer"]["text"], "research's whole answer stayed in its lane"
    lab_page.wait_run_done(60)
    lab_page.assert_no_errors()
    final = lab_page.transcripts(chat).first
    text = final.inner_text()
    at = [text.find(f"▸ {a}") for a in AGENTS]
    assert -1 not in at and at == sorted(at), text
    assert final.locator("svg g.adk-node").count() == 4 and final.locator("svg g.adk-active").count() == 0
    lab_page.screenshot_of(final, "pipeline-transcript")
