"""The notebook layer: `%load_ext adk_notebook` adds %%tool, %%agent, %%chat / %chat and %adk.

IPython and ipywidgets are imported only when the extension loads, so `import adk_notebook`
(and this package) stays fast. `magics` holds only the magics; the logic lives in `workspace`
(the notebook's tools, agents and sessions), `tables` (what `%adk` shows), `wire` (what a model
receives), `kernel` (running a chat on the kernel's loop), `transcript` (a run's events folded
into one state) and `widgets` / `render` (what a run looks like).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .workspace import Workspace

__all__ = ["get_workspace", "load_ipython_extension", "unload_ipython_extension"]

_LOADED: dict[int, Any] = {}  # id(shell) -> its AdkMagics


def load_ipython_extension(ipython: Any) -> None:
    """Register the magics and the input transformer that runs %%chat cells on the kernel loop."""
    from . import kernel
    from .magics import AdkMagics

    if id(ipython) in _LOADED:
        return
    magics = AdkMagics(ipython)
    ipython.register_magics(magics)
    kernel.install(ipython, magics.chat_async)
    _LOADED[id(ipython)] = magics


def unload_ipython_extension(ipython: Any) -> None:
    """Remove the magics and the transformer; the notebook's tools, agents and sessions are forgotten."""
    from . import kernel

    magics = _LOADED.pop(id(ipython), None)
    kernel.uninstall(ipython)
    if magics is None:
        return
    magics.workspace.mcp.close_all([])  # its MCP servers stop
    manager = ipython.magics_manager
    for kind, names in magics.magics.items():
        for name in names:
            manager.magics[kind].pop(name, None)
    manager.registry.pop(type(magics).__name__, None)


def get_workspace(ipython: Any = None) -> Workspace:
    """The notebook's workspace (tools, agents, sessions, default model) for `ipython` (default: the running shell)."""
    if ipython is None:
        from IPython import get_ipython

        ipython = get_ipython()
    magics = _LOADED.get(id(ipython))
    if magics is None:
        raise RuntimeError("adk_notebook is not loaded in this shell: run %load_ext adk_notebook first.")
    return magics.workspace
