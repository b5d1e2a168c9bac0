"""The loopback server the provider tests script: one per test module, cleared for each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from loopback import LoopbackServer


@pytest.fixture(scope="module")
def shared_server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as server:  # one per module: stopping a server takes half a second
        yield server


@pytest.fixture
def server(shared_server: LoopbackServer) -> LoopbackServer:
    """The module's server with no script and no requests yet."""
    shared_server.script.clear()
    shared_server.requests.clear()
    return shared_server
