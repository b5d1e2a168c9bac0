"""An agent tree drawn without any network service: `%adk graph NAME` and the run view's map.

`agent_graph(agent)` walks an agent's tree: its sub-agents, its tools and toolsets, the agents
behind its AgentTools (with their own trees), and the transfers an LLM agent with sub-agents is
offered (to each sub-agent, and back to it from a sub-agent that may return). `layout(graph)`
places it as a layered tree, leaves left to right and each parent centred over its children,
and gives JSON-ready nodes and edges; `render.graph_svg` draws that layout as inline SVG (every
label escaped) and the live view (`widgets/run_view.js` drawGraph) draws the same layout with
DOM calls, marking the agent that is running. `graph_mermaid` writes Mermaid flowchart text.

No IPython here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..agents.agent_tool import AgentTool
from ..agents.base import Agent
from ..agents.llm_agent import LlmAgent
from ..agents.workflow import LoopAgent, MapAgent, ParallelAgent, SequentialAgent

__all__ = [
    "AgentGraph",
    "Edge",
    "Node",
    "agent_graph",
    "graph_mermaid",
    "layout",
    "run_graph",
]

NODE_W, NODE_H = 150, 38  # a node's box, in SVG units
GAP_X, GAP_Y = 16, 56  # between two boxes side by side, and between two layers
MAX_LABEL = 20  # characters of a name drawn in a box; the whole name is its <title>

_COLORS = {  # kind -> fill (light, with dark text: readable on light and dark themes)
    "llm": "#e3f2fd",
    "sequential": "#ede7f6",
    "parallel": "#fff3e0",
    "loop": "#e8f5e9",
    "map": "#fce4ec",
    "agent": "#eceff1",
    "tool": "#f5f5f5",
    "toolset": "#f5f5f5",
}


@dataclass(frozen=True)
class Node:
    """One box: an agent (`agent` is its name, for the live mark) or a tool."""

    id: str
    label: str
    kind: str
    agent: str | None = None


@dataclass(frozen=True)
class Edge:
    """`tree` (parent to sub-agent), `tool`, `agent_tool` (to the agent behind it) or `transfer`."""

    source: str
    target: str
    kind: str


@dataclass
class AgentGraph:
    """An agent tree as nodes (in walk order, the root first) and edges; `children` is its layout tree."""

    nodes: dict[str, Node] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)
    children: dict[str, list[str]] = field(default_factory=dict)

    @property
    def root(self) -> str:
        return next(iter(self.nodes))


_KINDS: tuple[tuple[type[Agent], str], ...] = (
    (LlmAgent, "llm"),
    (SequentialAgent, "sequential"),
    (ParallelAgent, "parallel"),
    (LoopAgent, "loop"),
    (MapAgent, "map"),
)


def _kind(agent: Agent) -> str:
    """ "llm", "sequential", "parallel", "loop", "map", or "agent" for another Agent class."""
    return next((kind for cls, kind in _KINDS if isinstance(agent, cls)), "agent")


def agent_graph(agent: Agent) -> AgentGraph:
    """The tree of `agent`: agents, tools, toolsets, AgentTools' agents and transfer edges."""
    graph = AgentGraph()
    _walk(graph, agent, None)
    return graph


def _add(graph: AgentGraph, parent: str | None, node: Node, kind: str) -> bool:
    """Add `node` under `parent`; False when it was there already (an agent reached twice)."""
    if parent is not None:
        graph.edges.append(Edge(parent, node.id, kind))
    if node.id in graph.nodes:
        return False
    graph.nodes[node.id] = node
    graph.children[node.id] = []
    if parent is not None:
        graph.children[parent].append(node.id)
    return True


def _walk(graph: AgentGraph, agent: Agent, parent: str | None, via: str = "tree") -> str:
    node_id = f"agent:{agent.name}"
    kind = _kind(agent)
    if not _add(graph, parent, Node(node_id, agent.name, kind, agent.name), via):
        return node_id
    for tool in getattr(agent, "tools", None) or ():
        if isinstance(tool, AgentTool):
            _walk(graph, tool.agent, node_id, "agent_tool")
        else:
            _add(
                graph,
                node_id,
                Node(f"tool:{agent.name}/{tool.name}", tool.name, "tool"),
                "tool",
            )
    for n, toolset in enumerate(getattr(agent, "toolsets", None) or ()):
        label = getattr(toolset, "name", None) or type(toolset).__name__
        _add(
            graph,
            node_id,
            Node(f"toolset:{agent.name}/{n}", str(label), "toolset"),
            "tool",
        )
    for sub in agent.sub_agents:
        sub_id = _walk(graph, sub, node_id)
        if isinstance(agent, LlmAgent):  # it is offered transfer_to_agent
            graph.edges.append(Edge(node_id, sub_id, "transfer"))
            if isinstance(sub, LlmAgent) and not sub.disallow_transfer_to_parent:
                graph.edges.append(Edge(sub_id, node_id, "transfer"))
    return node_id


# -- layout --------------------------------------------------------------------------------
def _short(label: str) -> str:
    return label if len(label) <= MAX_LABEL else label[: MAX_LABEL - 1] + "…"


def layout(graph: AgentGraph) -> dict[str, Any]:
    """Boxes and edges placed as a layered tree: JSON-ready, for `graph_svg` and the live view."""
    xs: dict[str, float] = {}
    depth: dict[str, int] = {}
    next_leaf = 0.0

    def place(node_id: str, level: int) -> None:
        nonlocal next_leaf
        depth[node_id] = level
        kids = graph.children[node_id]
        for kid in kids:
            place(kid, level + 1)
        if kids:
            xs[node_id] = (xs[kids[0]] + xs[kids[-1]]) / 2
        else:
            xs[node_id] = next_leaf
            next_leaf += 1

    place(graph.root, 0)
    step = NODE_W + GAP_X
    nodes: list[dict[str, Any]] = [
        {
            "id": n.id,
            "label": n.label,
            "short": _short(n.label),
            "kind": n.kind,
            "agent": n.agent,
            "x": round(xs[n.id] * step + GAP_X / 2),
            "y": depth[n.id] * (NODE_H + GAP_Y) + GAP_Y // 4,
        }
        for n in graph.nodes.values()
    ]
    at = {n["id"]: n for n in nodes}
    edges = []
    for e in graph.edges:
        a, b = at[e.source], at[e.target]
        if e.kind == "transfer":  # a curve beside the tree edge, so both stay visible
            down = a["y"] < b["y"]
            x1, y1 = (
                a["x"] + NODE_W / 2 + (8 if down else -8),
                a["y"] + (NODE_H if down else 0),
            )
            x2, y2 = (
                b["x"] + NODE_W / 2 + (8 if down else -8),
                b["y"] + (0 if down else NODE_H),
            )
            bend = 28 if down else -28
            path = f"M{x1:g},{y1:g} C{x1 + bend:g},{(y1 + y2) / 2:g} {x2 + bend:g},{(y1 + y2) / 2:g} {x2:g},{y2:g}"
        else:
            x1, y1, x2, y2 = (
                a["x"] + NODE_W / 2,
                a["y"] + NODE_H,
                b["x"] + NODE_W / 2,
                b["y"],
            )
            path = f"M{x1:g},{y1:g} L{x2:g},{y2:g}"
        edges.append({"kind": e.kind, "d": path})
    width = round(max(next_leaf, 1) * step)
    height = max(depth.values()) * (NODE_H + GAP_Y) + NODE_H + GAP_Y // 2  # a quarter gap above and below
    return {
        "width": width,
        "height": height,
        "node_w": NODE_W,
        "node_h": NODE_H,
        "nodes": nodes,
        "edges": edges,
        "colors": _COLORS,
    }


def run_graph(agent: Agent) -> dict[str, Any] | None:
    """The layout a run view shows above its lanes: only for a tree of more than one agent."""
    graph = agent_graph(agent)
    return layout(graph) if sum(1 for n in graph.nodes.values() if n.agent) > 1 else None


# -- Mermaid -------------------------------------------------------------------------------
_MERMAID_SAFE = re.compile(r"[A-Za-z0-9 _.,:/()-]")
_ARROWS = {
    "tree": "-->",
    "tool": "-->",
    "agent_tool": "-- AgentTool -->",
    "transfer": "-. transfer .->",
}


def _mermaid_label(text: str) -> str:
    """A label Mermaid shows as written: every other character as its `#code;` entity."""
    return "".join(c if _MERMAID_SAFE.fullmatch(c) else f"#{ord(c)};" for c in text)


def graph_mermaid(graph: AgentGraph) -> str:
    """The graph as Mermaid flowchart text (agents rounded, tools square, transfers dotted)."""
    ids = {node_id: f"n{i}" for i, node_id in enumerate(graph.nodes)}
    lines = ["flowchart TD"]
    for node_id, node in graph.nodes.items():
        label = _mermaid_label(f"{node.label} ({node.kind})")
        lines.append(f'    {ids[node_id]}("{label}")' if node.agent else f'    {ids[node_id]}["{label}"]')
    lines.extend(f"    {ids[e.source]} {_ARROWS[e.kind]} {ids[e.target]}" for e in graph.edges)
    return "\n".join(lines)
