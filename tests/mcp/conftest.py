"""Fixtures: one toolset per real server per module, and `mcp serve --http` processes (see mcp_helpers)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mcp_helpers import HttpProcess, close, everything_server, our_server, time_server

from adk_notebook.mcp import McpToolset


@pytest.fixture(scope="module")
def time_tools() -> Iterator[McpToolset]:
    toolset = McpToolset(time_server(), name="time")
    yield toolset
    close(toolset)


@pytest.fixture(scope="module")
def everything_tools() -> Iterator[McpToolset]:
    toolset = McpToolset(everything_server(), name="everything")
    yield toolset
    close(toolset)


@pytest.fixture(scope="module")
def our_tools() -> Iterator[McpToolset]:
    toolset = McpToolset(our_server(), name="ours")
    yield toolset
    close(toolset)


@pytest.fixture
def http_process() -> Iterator[HttpProcess]:
    served = HttpProcess()
    yield served
    served.stop()


@pytest.fixture(scope="module")
def http_served() -> Iterator[HttpProcess]:
    served = HttpProcess()
    yield served
    served.stop()
