"""Plugins: the agent callbacks, applied to every agent of a run (google-adk's BasePlugin).

A plugin overrides the hooks it needs; they have the signatures and short-circuit rules of the
agent callbacks (`agents/callbacks.py`). For each hook the run's plugins go first, in list
order, then the agent's own callbacks; the first non-None result ends the chain, so a plugin
that answers (a cached model response, a refused tool) skips the plugins after it and the
agent's callbacks. `after_run_callback` is the plugins' own: it sees the finished trace.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..agents.callbacks import CallbackChain

if TYPE_CHECKING:
    from ..core.content import Content
    from ..core.context import CallbackContext, InvocationContext, ToolContext
    from ..models.base import LlmRequest, LlmResponse
    from ..tools.base import Tool

__all__ = ["Plugin", "plugin_chain"]


class Plugin:
    """Base of every plugin: each hook does nothing unless overridden.

    Args:
        name: Identifies the plugin (default: its class name).
    """

    def __init__(self, name: str | None = None) -> None:
        self.name = name or type(self).__name__

    async def before_agent_callback(self, ctx: CallbackContext) -> Content | str | None:
        """Before an agent runs; a result answers for it (the agent and its callbacks are skipped)."""
        return None

    async def after_agent_callback(self, ctx: CallbackContext) -> Content | str | None:
        """After an agent ran; a result is added as its last answer."""
        return None

    async def before_model_callback(self, ctx: CallbackContext, request: LlmRequest) -> LlmResponse | None:
        """Before a model call; a response is used instead of calling the model."""
        return None

    async def after_model_callback(self, ctx: CallbackContext, response: LlmResponse) -> LlmResponse | None:
        """After a model call; a response replaces the model's."""
        return None

    async def before_tool_callback(self, ctx: ToolContext, tool: Tool, args: dict[str, Any]) -> dict[str, Any] | None:
        """Before a tool call; a dict is the call's result and the tool does not run."""
        return None

    async def after_tool_callback(
        self,
        ctx: ToolContext,
        tool: Tool,
        args: dict[str, Any],
        response: dict[str, Any],
    ) -> dict[str, Any] | None:
        """After a tool call (`ctx.tool_outcome` says how it went); a dict replaces its response."""
        return None

    async def on_tool_error(
        self, ctx: ToolContext, tool: Tool, args: dict[str, Any], error: BaseException
    ) -> dict[str, Any] | None:
        """When a tool failed; a dict is the fallback result the model gets."""
        return None

    async def after_run_callback(self, ctx: InvocationContext) -> None:
        """When a run ended, however it ended: `ctx.span` is its finished trace (see `core/trace.py`)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def plugin_chain(plugins: Sequence[Plugin], hook: str, own: CallbackChain | None = None) -> CallbackChain:
    """The callbacks of hook `hook`: those plugins that override it, in order, then `own`."""
    base = getattr(Plugin, hook)
    methods = [getattr(p, hook) for p in plugins if getattr(type(p), hook, base) is not base]
    if not methods:
        return own if own is not None else CallbackChain()
    chain = CallbackChain(methods)
    return chain + own if own is not None else chain
