"""Notebook widgets. Importing this package imports anywidget and ipywidgets, so the rest of
adk_notebook imports it lazily (only `%%chat` and friends need it)."""

from .run_view import RunView, RunWidget

__all__ = ["RunView", "RunWidget"]
