"""Toolsets: groups of tools an agent resolves at the start of each run.

`await toolset.tools(ctx)` gets a `ReadonlyContext` (user id, session id, state), so what a
toolset offers can depend on who is asking. The building blocks:

- `BasicToolset(name, tools)`: a fixed group.
- `FilteredToolset(toolset, predicate_or_names)`: only the tools a predicate accepts.
- `MergedToolset(*toolsets)` (or the seed's `MergedToolset(name, [a, b])`): several toolsets
  as one; a duplicate name is an error.
- `PrefixedToolset(toolset, prefix)`: every tool renamed `prefix_name`, to avoid clashes.

A toolset of your own subclasses `Toolset`, e.g. the seed's permission-based one:

    class AdminToolset(Toolset):
        name = "admin_toolset"

        def __init__(self, admin_tools, user_tools):
            self.admin_tools, self.user_tools = admin_tools, user_tools

        async def tools(self, ctx):
            return self.admin_tools if ctx.user_id.startswith("admin_") else self.user_tools
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..core.errors import AdkError
from .base import Tool, Toolset
from .function import FunctionTool
from .names import check_tool_name

if TYPE_CHECKING:
    from ..core.context import ReadonlyContext, ToolContext

__all__ = ["BasicToolset", "FilteredToolset", "MergedToolset", "PrefixedTool", "PrefixedToolset", "collect_tools"]


def collect_tools(owner: str, groups: Iterable[tuple[str, Iterable[Tool]]]) -> dict[str, Tool]:
    """Tools by name from `(source, tools)` groups, in order; a name seen twice is an error.

    Args:
        owner: Who holds the tools, for the message, e.g. "Agent 'bot'" or "Toolset 'all'".
        groups: Where each group comes from (e.g. "toolset 'github'") and its tools.

    Raises:
        AdkError: `duplicate_tool_name`, naming both sources of the first duplicate found.
    """
    tools: dict[str, Tool] = {}
    sources: dict[str, str] = {}
    for source, group in groups:
        for tool in group:
            if tool.name in tools:
                raise AdkError.config(
                    f"{owner} has two tools named {tool.name!r} (from {sources[tool.name]} and {source}). "
                    "Tool names must be unique: rename one, or wrap a toolset in PrefixedToolset.",
                    code="duplicate_tool_name",
                )
            tools[tool.name] = tool
            sources[tool.name] = source
    return tools


class BasicToolset(Toolset):
    """A fixed group of tools, the same for every run.

    Args:
        name: Identifies the toolset in messages.
        tools: Tools, or plain functions (wrapped with `@tool`); names must be unique.
    """

    def __init__(self, name: str, tools: Iterable[Tool | Callable[..., Any]]) -> None:
        self.name = name
        made = [t if isinstance(t, Tool) else FunctionTool.from_function(t) for t in tools]
        collect_tools(f"Toolset {name!r}", ((f"tools[{i}]", [t]) for i, t in enumerate(made)))
        self._tools = made

    async def tools(self, ctx: ReadonlyContext) -> list[Tool]:
        return list(self._tools)

    def __repr__(self) -> str:
        return f"BasicToolset({self.name!r}, {[t.name for t in self._tools]!r})"


class FilteredToolset(Toolset):
    """The tools of `toolset` that `predicate` accepts, resolved per run.

    Args:
        toolset: The toolset to filter.
        predicate: `predicate(tool) -> bool`, or the names of the tools to keep.
        name: Identifies the toolset in messages (default: the wrapped toolset's name).
    """

    def __init__(
        self, toolset: Toolset, predicate: Callable[[Tool], bool] | Iterable[str], name: str | None = None
    ) -> None:
        self.toolset = toolset
        self.name = name or toolset.name
        if callable(predicate):
            self.predicate = predicate
        else:
            allowed = frozenset([predicate] if isinstance(predicate, str) else predicate)
            self.predicate = lambda tool: tool.name in allowed

    async def tools(self, ctx: ReadonlyContext) -> list[Tool]:
        return [t for t in await self.toolset.tools(ctx) if self.predicate(t)]


class MergedToolset(Toolset):
    """Several toolsets offered as one, in order; two tools with one name are an error.

    `MergedToolset(a, b, name="all")`, or as the seed writes it, `MergedToolset("all", [a, b])`.

    Args:
        *toolsets: The toolsets to merge (resolved concurrently, combined in this order).
        name: Identifies the toolset in messages (default: the parts' names joined by "+").
    """

    def __init__(self, *toolsets: Toolset | str | list[Toolset] | tuple[Toolset, ...], name: str | None = None) -> None:
        if len(toolsets) == 2 and isinstance(toolsets[0], str) and isinstance(toolsets[1], (list, tuple)):
            if name is not None:
                raise TypeError("MergedToolset(name, [a, b]) already names the toolset; leave out name=.")
            name, toolsets = toolsets[0], tuple(toolsets[1])  # the seed's MergedToolset::new(name, vec![...])
        for ts in toolsets:
            if not isinstance(ts, Toolset):
                raise TypeError(
                    f"MergedToolset takes toolsets, got {type(ts).__name__}; write MergedToolset(a, b), "
                    "MergedToolset(*toolsets) or, as the seed does, MergedToolset('all', [a, b])."
                )
        self.toolsets: tuple[Toolset, ...] = toolsets  # type: ignore[assignment]  # checked just above
        self.name = name or "+".join(ts.name for ts in self.toolsets)

    async def tools(self, ctx: ReadonlyContext) -> list[Tool]:
        results = await asyncio.gather(*(ts.tools(ctx) for ts in self.toolsets), return_exceptions=True)
        for result in results:  # the first failure in order, whichever finished first
            if isinstance(result, BaseException):
                raise result
        groups = [
            (f"toolset {ts.name!r}", tools)
            for ts, tools in zip(self.toolsets, results, strict=True)
            if not isinstance(tools, BaseException)
        ]  # none is, as raised above
        return list(collect_tools(f"Toolset {self.name!r}", groups).values())


class PrefixedToolset(Toolset):
    """The tools of `toolset` renamed `prefix_name`; everything else about them is unchanged.

    Args:
        toolset: The toolset whose tools are renamed.
        prefix: Letters, digits, `_` or `-`, starting with a letter or `_`, e.g. "github".
        name: Identifies the toolset in messages (default: `prefix_` + the toolset's name).
    """

    def __init__(self, toolset: Toolset, prefix: str, name: str | None = None) -> None:
        try:
            check_tool_name(prefix)
        except AdkError:
            raise AdkError.config(
                f"PrefixedToolset prefix {prefix!r} is not valid in a tool name: it must start with a letter or "
                "underscore and contain only letters, digits, '_' or '-' (e.g. 'github').",
                code="invalid_tool_prefix",
            ) from None
        self.toolset = toolset
        self.prefix = prefix
        self.name = name or f"{prefix}_{toolset.name}"

    async def tools(self, ctx: ReadonlyContext) -> list[Tool]:
        return [PrefixedTool(self._prefixed(t.name), t) for t in await self.toolset.tools(ctx)]

    def _prefixed(self, name: str) -> str:
        full = f"{self.prefix}_{name}"
        try:
            return check_tool_name(full)
        except AdkError:
            raise AdkError.config(
                f"PrefixedToolset {self.name!r} makes the tool name {full!r} ({len(full)} characters) from "
                f"{name!r}; providers accept at most 64. Use a shorter prefix.",
                code="invalid_tool_name",
            ) from None


class PrefixedTool(Tool):
    """`tool` under another name: same description, schemas and flags; running it runs `tool`."""

    def __init__(self, name: str, tool: Tool) -> None:
        self.name = name
        self.tool = tool

    @property
    def description(self) -> str:  # type: ignore[override]  # read through to the wrapped tool
        return self.tool.description

    @property
    def is_long_running(self) -> bool:  # type: ignore[override]  # read through to the wrapped tool
        return self.tool.is_long_running

    @property
    def is_read_only(self) -> bool:  # type: ignore[override]  # read through to the wrapped tool
        return self.tool.is_read_only

    @property
    def is_concurrency_safe(self) -> bool:  # type: ignore[override]  # read through to the wrapped tool
        return self.tool.is_concurrency_safe

    @property
    def required_scopes(self) -> tuple[str, ...]:  # type: ignore[override]  # read through to the wrapped tool
        return self.tool.required_scopes

    @property
    def parameters_schema(self) -> dict[str, Any] | None:
        return self.tool.parameters_schema

    @property
    def response_schema(self) -> dict[str, Any] | None:
        return self.tool.response_schema

    def validate_args(self, args: dict[str, Any]) -> dict[str, Any]:
        return self.tool.validate_args(args)

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> Any:
        return await self.tool.execute(ctx, args)

    def __repr__(self) -> str:
        return f"<PrefixedTool {self.name!r} -> {self.tool!r}>"
