"""%%mcp, --tools SERVER[.TOOL] and %adk mcp: on a Workspace, and in a real kernel via nbclient."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import nbformat
import psutil
import pytest
from IPython.core.error import UsageError
from mcp_helpers import EVERYTHING, everything_server, stubborn_server, wait_until
from nbclient import NotebookClient

from adk_notebook import FunctionCall, ScriptedModel
from adk_notebook.mcp import HttpServer, McpToolset, StdioServer
from adk_notebook.notebook.workspace import Workspace

SECRET = "sk-test-notebook-0123456789"
CONFIG = {
    "mcpServers": {
        "time": {
            "command": "mcp-server-time",
            "args": ["--local-timezone", "UTC"],
            "env": {"TIME_TOKEN": "${ADK_SECRET}"},
            "autoApprove": ["get_current_time"],
        },
        "docs": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${env:ADK_SECRET}"}},
        "off": {"command": "never-started", "disabled": True},
    }
}


@pytest.fixture
def ws(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("ADK_SECRET", SECRET)
    workspace = Workspace(namespace={})
    yield workspace
    workspace.mcp.close_all([])


def test_the_claude_desktop_json_defines_one_toolset_per_server(ws: Workspace) -> None:
    card = ws.define_mcp(json.dumps(CONFIG))
    assert list(ws.mcp) == ["time", "docs"]
    time, docs = ws.mcp["time"], ws.mcp["docs"]
    assert isinstance(time.server, StdioServer) and time.server.env == {"TIME_TOKEN": SECRET}
    assert isinstance(docs.server, HttpServer) and docs.server.headers == {"Authorization": f"Bearer {SECRET}"}
    assert time.status == "not connected"  # nothing starts before it is used
    assert "time: ignored autoApprove." in card.text and "(disabled: left out)" in card.text
    assert SECRET not in card.text + card.html + repr(time) + repr(docs)


def test_timeouts_come_from_the_entry_then_the_cell(ws: Workspace) -> None:
    ws.define_mcp('{"mcpServers": {"a": {"command": "x", "timeout": 120}, "b": {"command": "y"}}}', timeout=5)
    assert (ws.mcp["a"].timeout, ws.mcp["b"].timeout) == (120, 5)
    ws.define_mcp('{"mcpServers": {"b": {"command": "y"}}}')
    assert ws.mcp["b"].timeout == 30  # changed: the default again, a new toolset


def test_an_unchanged_server_is_kept_and_a_changed_one_replaced_in_its_agents(ws: Workspace) -> None:
    ws.define_mcp(json.dumps(CONFIG))
    time = ws.mcp["time"]
    ws.namespace["m"] = ScriptedModel(["hi"])
    agent = ws.define_agent("bot", "", model="m", tools=["time.get_current_time"])
    [picked] = agent.toolsets
    assert picked.tool_filter == ("get_current_time",) and picked._link is time._link
    assert "(unchanged)" in ws.define_mcp(json.dumps(CONFIG)).text and ws.mcp["time"] is time
    changed = json.loads(json.dumps(CONFIG))
    changed["mcpServers"]["time"]["args"] = ["--local-timezone", "Europe/Paris"]
    ws.define_mcp(json.dumps(changed))
    [moved] = agent.toolsets
    assert moved._link is ws.mcp["time"]._link is not time._link and moved.tool_filter == ("get_current_time",)


def test_tools_names_a_whole_server_or_some_of_its_tools(ws: Workspace) -> None:
    ws.define_mcp(json.dumps(CONFIG))
    ws.namespace["m"] = ScriptedModel(["hi"])
    whole = ws.define_agent("a", "", model="m", tools=["time"])
    assert whole.toolsets == [ws.mcp["time"]] and whole.tools == []
    some = ws.define_agent("b", "", model="m", tools=["time.get_current_time", "time.convert_time", "docs"])
    assert [ts.tool_filter for ts in some.toolsets] == [("get_current_time", "convert_time"), None]
    both = ws.define_agent("c", "", model="m", tools=["time.convert_time", "time"])
    assert both.toolsets == [ws.mcp["time"]]
    with pytest.raises(UsageError, match=r"Unknown tool 'weather' \(tools: none yet; MCP servers: time, docs\)"):
        ws.define_agent("d", "", model="m", tools=["weather"])


@pytest.mark.parametrize(
    ("cell", "says"),
    [
        ("{not json", "not valid JSON"),
        ('{"mcpServers": {"x": {"args": []}}}', 'give either "command"'),
        ('{"mcpServers": {"x.y": {"command": "a"}}}', "may contain only letters"),
        ('{"mcpServers": {"x": {"url": "http://h/sse", "type": "sse"}}}', "SSE transport is not supported"),
        (
            '{"mcpServers": {"x": {"command": "a", "env": {"K": "${ADK_NOT_SET_ANYWHERE}"}}}}',
            "the environment has no variable ADK_NOT_SET_ANYWHERE",
        ),
        (
            '{"mcpServers": {"x": {"command": "a", "env": {"K": {"nested": "sk-hidden-value"}}}}}',
            '"env" must map names',
        ),
        ('{"mcpServers": {"x": {"url": "ftp://h"}}}', "http:// or https:// URL"),
        ('{"tools": []}', 'expected {"mcpServers"'),
    ],
)
def test_misuse_is_one_clear_line_that_shows_no_value(ws: Workspace, cell: str, says: str) -> None:
    with pytest.raises(UsageError) as caught:
        ws.define_mcp(cell)
    assert says in str(caught.value) and "sk-hidden-value" not in str(caught.value)


def test_adk_mcp_shows_status_tools_and_the_stderr_of_a_failed_server(ws: Workspace) -> None:
    script = f"import sys; print('cannot start: token {SECRET} rejected', file=sys.stderr); sys.exit(2)"
    ws.define_mcp(
        json.dumps(
            {
                "mcpServers": {
                    "time": {"command": "mcp-server-time"},
                    "broken": {"command": sys.executable, "args": ["-c", script], "env": {"TOKEN": "${ADK_SECRET}"}},
                }
            }
        )
    )
    view = ws.mcp_view()
    assert re.search(r"\ntime +stdio +mcp-server-time +connected +get_current_time, convert_time\n", view.text)
    assert "broken: MCP server 'broken'" in view.text and "exited before it finished starting" in view.text
    assert "Last stderr lines of broken:\n    cannot start: token *** rejected" in view.text
    assert SECRET not in view.text + view.html
    one = ws.mcp_view("time")
    assert "tool get_current_time(timezone: string)  [read-only]" in one.text
    with pytest.raises(UsageError, match="no MCP server 'nope'"):
        ws.mcp_view("nope")


def test_reset_stops_the_servers(ws: Workspace) -> None:
    ws.define_mcp('{"mcpServers": {"time": {"command": "mcp-server-time"}}}')
    time = ws.mcp["time"]
    ws.mcp_view()
    assert time.status == "connected"
    assert "1 MCP servers" in ws.reset().text
    assert time.status == "closed" and not ws.mcp


# -- a real kernel -----------------------------------------------------------------------------
def kernel_notebook(everything: str) -> nbformat.NotebookNode:
    stubborn = stubborn_server()
    config = {
        "mcpServers": {
            "time": {
                "command": "mcp-server-time",
                "args": ["--local-timezone", "UTC"],
                "env": {"TOKEN": "${ADK_SECRET}"},
            },
            "everything": {"command": everything, "args": ["stdio"]},
            "stubborn": {"command": stubborn.command, "args": list(stubborn.args)},  # outlives its stdin
        }
    }
    script = [
        FunctionCall("get_current_time", {"timezone": "Asia/Tokyo"}),
        "It is evening in Tokyo.",
        FunctionCall("get-tiny-image", {}),
        "Here is the logo.",
        FunctionCall("trigger-long-running-operation", {"duration": 0.3, "steps": 3}),
        "Done.",
        FunctionCall("get_current_time", {"timezone": "UTC"}),
        "It is morning in London.",
    ]
    cells = [
        f"%load_ext adk_notebook\nimport os, psutil\nos.environ['ADK_SECRET'] = {SECRET!r}",
        "%%mcp\n" + json.dumps(config, indent=2),
        f"from adk_notebook import FunctionCall, ScriptedModel\nscripted = ScriptedModel({script!r})",
        "%%agent clock --model scripted --tools time.get_current_time,everything\nYou tell the time.",
        "%%chat clock\nWhat time is it in Tokyo?",
        "%%chat clock\nShow me the MCP logo.",
        "%%chat clock\nRun the long operation.",
        "print(clock.run('And in London?').text)",  # agent.run(): a private loop in a worker thread
        "%adk mcp",
        "print(*sorted(p.pid for p in psutil.Process().children(recursive=True)))",
    ]
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])


def everything_output(nb: nbformat.NotebookNode) -> str:
    """Every output of every cell, as saved: streams, errors, text/plain and text/html."""
    out = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            out.append(json.dumps(o))
    return "\n".join(out)


def cell_text(cell: Any) -> str:
    return "\n".join(
        o.get("text", "") if o.output_type == "stream" else o.get("data", {}).get("text/plain", "")
        for o in cell.outputs
    )


@pytest.mark.notebook
def test_mcp_and_chat_in_a_real_kernel_never_mention_a_cancel_scope() -> None:
    everything_server()  # skips (or fails in CI) without the npm server
    nb = kernel_notebook(str(EVERYTHING))
    NotebookClient(nb, timeout=180, kernel_name="python3").execute()
    saved = everything_output(nb)
    assert "cancel scope" not in saved.lower() and "Traceback" not in saved
    assert SECRET not in saved and "Starting default (STDIO) server" not in saved  # stderr stays in its pipe
    assert not [o for c in nb.cells for o in c.outputs if o.output_type == "error"]
    tokyo, logo, progress, london, adk_mcp, pids = (nb.cells[i] for i in range(4, 10))
    assert "It is evening in Tokyo." in cell_text(tokyo) and "+09:00" in cell_text(tokyo)
    [shown] = [o for o in logo.outputs if "text/html" in o.get("data", {})]
    # the MCP image, inline (the live view was sent this same HTML: tests/browser/test_view_page.py)
    assert 'src="data:image/png;base64,iVBORw0KGgo' in shown.data["text/html"]
    assert "1/3" in cell_text(progress) and "3/3" in cell_text(progress)
    assert "It is morning in London." in cell_text(london)
    assert re.search(r"\ntime +stdio .+ connected +get_current_time, convert_time", cell_text(adk_mcp))
    servers = [int(p) for p in cell_text(pids).split()]
    assert len(servers) == 4  # one per server whichever loop used it (the stubborn one is a shell and its child)
    wait_until(lambda: not any(_alive(pid) for pid in servers), timeout=10)  # stopped at kernel shutdown


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_a_toolset_can_be_made_without_loading_the_sdk() -> None:
    code = (
        "import sys; from adk_notebook.mcp import McpToolset, StdioServer; import adk_notebook\n"
        "McpToolset(StdioServer('mcp-server-time'))\nprint('mcp' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert done.stdout.strip() == "False"  # the SDK takes seconds to import: only when a server starts
    blocked = (
        "import sys; sys.modules['mcp'] = None\ntry:\n    import adk_notebook.mcp\n"
        "except ImportError as e:\n    print(e)\nimport adk_notebook; print('light')"
    )
    done = subprocess.run([sys.executable, "-c", blocked], check=True, capture_output=True, text=True)
    assert done.stdout.splitlines() == ['adk_notebook.mcp needs the MCP SDK: pip install "adk-notebook[mcp]"', "light"]


def test_mcp_toolset_reprs_name_the_server(everything_tools: McpToolset) -> None:
    assert repr(everything_tools).startswith("McpToolset(StdioServer(") and "name='everything'" in repr(
        everything_tools
    )
