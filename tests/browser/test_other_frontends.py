"""The rich run of test_live_equals_saved.py outside JupyterLab, each server started like the
suite's JupyterLab (127.0.0.1, a free port, a random token) over its own copy of the notebook.

Notebook 7 shows the live view: the run waits in its chart tool and in its last tool (the `held`
files) until the page has shown the live view there, so the text is seen to grow while the run
goes, however slow the machine. Voila shows the transcript only (see its test for why).
Screenshots go to tests/browser/screenshots/.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import LIVE, RUN_IN_JS, SAVED, LabPage, running_server, unavailable
from test_lab import write_notebook
from test_live_equals_saved import HOLDS, RICH

Lab = Any  # the fixtures' types live in conftest.py

pytestmark = pytest.mark.browser


def _require(module: str) -> None:
    try:
        importlib.import_module(module)
    except ImportError:
        unavailable(f"{module} is not installed: pip install -e '.[browser]'")


@pytest.fixture(scope="module")
def notebook7(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    _require("notebook.app")  # Notebook 7 (6 had no notebook.app)
    with running_server("notebook", tmp_path_factory.mktemp("notebook7"), {}) as server:
        yield server


@pytest.fixture(scope="module")
def voila(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    _require("voila")
    base = tmp_path_factory.mktemp("voila")
    (base / "root").mkdir()
    with running_server("voila", base, {}) as server:
        yield server


@pytest.fixture
def page(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, device_scale_factor=1)
    context.set_default_timeout(30_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    try:
        yield page
    finally:
        failed = getattr(request.node, "rep_call", None)
        if failed is not None and failed.failed:
            print("page errors:\n" + "\n".join(errors[-20:]))
        context.close()


def _watch_the_run(helper: LabPage) -> None:
    """With the run held in its chart tool: the live view shows the tool's progress and no answer
    yet; with it held in cons's tool: the answer and both lanes; released: the transcript."""

    def seen(what: Any) -> Any:
        def check() -> dict[str, Any] | None:
            shot = helper.page.locator("body").evaluate(RUN_IN_JS)
            return shot if shot and shot.get("kind") == "live" and what(shot) else None

        return check

    try:
        early = helper.wait_for(
            seen(lambda s: any("drawing 2 of 3" in t["log"] for t in s["tools"])), 180, "the chart's progress, live"
        )
        assert early["status"].startswith("running") and early["stopVisible"] and "North" not in early["text"], early
        helper.screenshot_of(helper.page.locator(LIVE).first, "live-progress")
        helper.release("chart.hold")
        late = helper.wait_for(seen(lambda s: "North leads" in s["text"]), 120, "the answer, live")
        assert late["status"].startswith("running") and len(late["text"]) > len(early["text"]), (early, late)
        assert helper.page.locator(f"{LIVE} .adk-item.adk-lane").count() >= 3
        helper.screenshot_of(helper.page.locator(LIVE).first, "live-lanes")
    finally:
        helper.release(*HOLDS)
    helper.wait_for(lambda: helper.page.locator(SAVED).count() == 1, 60, "the transcript")
    assert helper.page.locator(LIVE).count() == 0
    helper.screenshot_of(helper.page.locator(SAVED).first, "transcript")


def test_notebook7_shows_the_live_view(notebook7: Lab, page: Any, request: pytest.FixtureRequest) -> None:
    path = write_notebook(notebook7, "rich.ipynb", RICH)
    helper = LabPage(page, notebook7, re.sub(r"\W+", "_", request.node.name))
    page.goto(f"{notebook7.base_url}notebooks/{path}?token={notebook7.token}", wait_until="domcontentloaded")
    page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for(state="attached", timeout=60_000)
    helper.path = path
    helper.wait_kernel_idle(60)
    helper.hold(*HOLDS)
    try:
        helper.run_all()
        _watch_the_run(helper)
    finally:
        helper.release(*HOLDS)
        notebook7.shutdown_kernels(path)


def test_voila_shows_the_run(voila: Lab, page: Any, request: pytest.FixtureRequest) -> None:
    """Voila shows the run as its transcript, never live: it sends a cell's outputs to the page
    only once the cell has finished (voila/tornado/execution_request_handler.py awaits
    `executor.execute_cell` before `write_message`; without progressive rendering the page is
    the template rendered cell by cell after nbclient ran each). A `%%chat` cell ends with its run,
    so by then nbclient has applied the display update that puts the transcript in place of the
    widget, and the kernel has closed the widget's model. The run here is not held: nothing of it
    shows before it ends."""
    path = write_notebook(voila, "rich.ipynb", RICH)
    helper = LabPage(page, voila, re.sub(r"\W+", "_", request.node.name))
    page.goto(f"{voila.base_url}voila/render/{path}?token={voila.token}", wait_until="domcontentloaded")
    helper.wait_for(lambda: page.locator(SAVED).count() == 1, 120, "the run's transcript")
    run = page.locator("body").evaluate(RUN_IN_JS)
    assert run["kind"] == "static" and run["status"] == "done" and "North leads" in run["text"], run
    assert [t["name"] for t in run["tools"]] == ["chart", "transfer_to_agent", "pause"], run["tools"]
    assert page.locator(LIVE).count() == 0 and page.locator(f"{SAVED} img").count() == 1
    helper.screenshot_of(page.locator(SAVED).first, "transcript")
