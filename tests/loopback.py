"""A real HTTP server on 127.0.0.1 for provider tests: it records requests and replays scripts.

Each request takes the next `Reply` from the script: a status, headers and a body sent in
chunks (SSE streams are just chunks), optionally with pauses, or a dropped connection after
some chunks; a body made by a callable may go on for ever (a server that never finishes). The provider under test talks to it over real sockets with real httpx.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["LoopbackServer", "RecordedRequest", "Reply", "sse"]


@dataclass
class Reply:
    """One scripted HTTP response."""

    status: int = 200
    # A callable is called per request and may yield chunks forever (until the client hangs up).
    body: bytes | str | dict[str, Any] | list[bytes | str] | Callable[[], Iterable[bytes | str]] = b""
    headers: dict[str, str] = field(default_factory=dict)
    chunk_delay: float = 0.0  # seconds between chunks
    drop_after: int | None = None  # close the socket after this many chunks, mid-response

    def chunks(self) -> Iterable[bytes]:
        if callable(self.body):
            return (c.encode() if isinstance(c, str) else c for c in self.body())
        if isinstance(self.body, dict):
            return [json.dumps(self.body).encode()]
        if isinstance(self.body, list):
            return [c.encode() if isinstance(c, str) else c for c in self.body]
        return [self.body.encode() if isinstance(self.body, str) else self.body]


def sse(*events: dict[str, Any] | str, event_names: list[str] | None = None) -> list[str]:
    """Server-sent event chunks: each dict becomes `data: {json}` (with `event:` lines if named)."""
    out = []
    for i, item in enumerate(events):
        data = item if isinstance(item, str) else json.dumps(item)
        prefix = f"event: {event_names[i]}\n" if event_names else ""
        out.append(f"{prefix}data: {data}\n\n")
    return out


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class LoopbackServer:
    """`with LoopbackServer([Reply(...), ...]) as server:` then point a provider at `server.url`."""

    def __init__(self, script: list[Reply] | None = None) -> None:
        self.script: list[Reply] = list(script or [])
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        # A short poll interval: shutdown() waits for it, and every test stops a server.
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _next_reply(self) -> Reply:
        with self._lock:
            if not self.script:
                return Reply(500, {"error": {"message": "loopback server: script exhausted"}})
            return self.script.pop(0)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with server._lock:
                    server.requests.append(
                        RecordedRequest(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                    )
                reply = server._next_reply()
                chunks = reply.chunks()
                self.send_response(reply.status)
                headers = {"Content-Type": "application/json", **reply.headers}
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for i, chunk in enumerate(chunks):
                    if reply.drop_after is not None and i >= reply.drop_after:
                        self.wfile.flush()
                        self.connection.shutdown(2)  # socket.SHUT_RDWR: a dropped connection mid-body
                        self.close_connection = True
                        return
                    if i and reply.chunk_delay:
                        time.sleep(reply.chunk_delay)
                    self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

            def _serve_unless_hung_up(self) -> None:
                try:
                    self._serve()
                except (BrokenPipeError, ConnectionResetError):  # the client closed early, as some tests do
                    self.close_connection = True

            do_POST = _serve_unless_hung_up
            do_GET = _serve_unless_hung_up

        return Handler
