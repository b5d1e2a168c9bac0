"""Plugins: hooks applied to every agent of a run, and the exporters of its trace.

`OpenTelemetryPlugin` needs the `[otel]` extra and loads on first use; it is not in `__all__`, so
that `from adk_notebook.plugins import *` works without the extra.
"""

from ..core.trace import ModelPrice, Span
from .base import Plugin
from .jsonl import JsonlTraceExporter, read_traces

__all__ = [
    "JsonlTraceExporter",
    "ModelPrice",
    "Plugin",
    "Span",
    "read_traces",
]

_LAZY = {"OpenTelemetryPlugin": ".otel"}


def __getattr__(name: str) -> object:
    if name == "OpenTelemetryPlugin":  # needs the [otel] extra, so it loads on first use
        from .otel import OpenTelemetryPlugin

        return OpenTelemetryPlugin
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
