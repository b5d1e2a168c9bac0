"""Plugins: hooks applied to every agent of a run, and the exporters of its trace."""

from ..core.trace import ModelPrice, Span
from .base import Plugin

__all__ = ["ModelPrice", "Plugin", "Span"]
