"""The MCP servers a toolset reaches: a local one it starts (stdio) or a running one (HTTP).

Plain descriptions, without the SDK: the connection (`_connection.py`) reads them when it opens.
Whatever could be a secret (env and header values, a URL's userinfo, values the user names) is
never shown, in a repr, a label or an error.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..core.errors import AdkError
from ..models.keys import MASK, Secrets

__all__ = ["HIDDEN", "NOT_IN_NAMES", "HttpServer", "StdioServer"]

NOT_IN_NAMES = re.compile(r"[^A-Za-z0-9_-]")  # what a tool or server name may not contain
HIDDEN = MASK
SHORTEST_SECRET = 4  # "1" or "on" in an env value would only garble text; they are not credentials


class StdioServer:
    """A local MCP server the toolset starts as a child process, speaking over its stdin/stdout.

    Args:
        command: The program, e.g. "mcp-server-time", "npx" or "uvx". A bare name is looked up
            on PATH, then beside this Python (a server pip-installed into the kernel's
            environment, whose bin/ a notebook's PATH often lacks).
        args: Its arguments.
        env: Environment variables for it, over the SDK's safe defaults (PATH, HOME, ...); the
            server sees nothing else of ours. Values are never shown.
        cwd: The folder it runs in.
        secrets: More values never to show, e.g. a token passed in `args`.
    """

    def __init__(
        self,
        command: str,
        args: Iterable[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        *,
        secrets: Iterable[str] = (),
    ) -> None:
        if not isinstance(command, str) or not command.strip():
            raise AdkError.config(
                f"StdioServer needs a command, e.g. StdioServer('mcp-server-time'), got {command!r}.",
                code="invalid_mcp_server",
            )
        if isinstance(args, str):
            raise AdkError.config(
                "StdioServer args must be a list of strings, e.g. ['--local-timezone', 'UTC'].",
                code="invalid_mcp_server",
            )
        self.command = command
        self.args = tuple(_strings(args, "StdioServer args"))
        self.env = {str(k): v for k, v in _string_map(env, "StdioServer env").items()}
        self.cwd = os.fspath(cwd) if cwd is not None else None
        self.secrets = Secrets([*self.env.values(), *secrets], min_length=SHORTEST_SECRET)

    @property
    def label(self) -> str:
        """The command line, secrets hidden: what messages and `%adk mcp` show."""
        return self.redact(" ".join([self.command, *(_quoted(a) for a in self.args)]))

    @property
    def default_name(self) -> str:
        return NOT_IN_NAMES.sub("_", Path(self.command).stem) or "mcp"

    def redact(self, text: str) -> str:
        return self.secrets.scrub(text)

    def _key(self) -> tuple[Any, ...]:
        return (
            self.command,
            self.args,
            sorted(self.env.items()),
            self.cwd,
            self.secrets.values,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StdioServer) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash((self.command, self.args, self.cwd))

    def __repr__(self) -> str:
        parts = [
            repr(self.redact(self.command)),
            repr([self.redact(a) for a in self.args]),
        ]
        if self.env:
            parts.append(f"env={ {k: HIDDEN for k in self.env}!r}")
        if self.cwd is not None:
            parts.append(f"cwd={self.redact(self.cwd)!r}")
        return f"StdioServer({', '.join(parts)})"


class HttpServer:
    """A running MCP server reached over streamable HTTP (the SDK's default path is /mcp).

    Args:
        url: Its endpoint, e.g. "http://127.0.0.1:8000/mcp".
        headers: HTTP headers for every request, e.g. {"Authorization": "Bearer ..."}; values
            are never shown.
        secrets: More values never to show, e.g. a token in the URL.
    """

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str] | None = None,
        *,
        secrets: Iterable[str] = (),
    ) -> None:
        if not isinstance(url, str) or not re.match(r"https?://", url):
            raise AdkError.config(
                f"HttpServer needs an http:// or https:// URL, e.g. 'http://127.0.0.1:8000/mcp', got {url!r}.",
                code="invalid_mcp_server",
            )
        self.url = url
        self.headers = _string_map(headers, "HttpServer headers")
        # Each header's value and the parts a server may echo alone (the token after "Bearer ").
        self.secrets = Secrets.of(self.headers, also=[*secrets, *_userinfo(url)], min_length=SHORTEST_SECRET)

    @property
    def label(self) -> str:
        return self.redact(self.url)

    @property
    def default_name(self) -> str:
        host = re.sub(r"^https?://(?:[^@/]*@)?", "", self.url).split("/")[0].split(":")[0]
        return NOT_IN_NAMES.sub("_", host) or "mcp"

    def redact(self, text: str) -> str:
        return self.secrets.scrub(text)

    def _key(self) -> tuple[Any, ...]:
        return (self.url, sorted(self.headers.items()), self.secrets.values)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HttpServer) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self.url)

    def __repr__(self) -> str:
        headers = f", headers={ {k: HIDDEN for k in self.headers}!r}" if self.headers else ""
        return f"HttpServer({self.label!r}{headers})"


def _strings(values: Iterable[Any], what: str) -> list[str]:
    out = list(values)
    if not all(isinstance(v, str) for v in out):
        raise AdkError.config(
            f"{what} must all be strings, got {[type(v).__name__ for v in out]}.",
            code="invalid_mcp_server",
        )
    return out


def _string_map(values: Mapping[str, str] | None, what: str) -> dict[str, str]:
    out = dict(values or {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in out.items()):
        raise AdkError.config(
            f"{what} must map names to strings (keys: {list(out)}).",
            code="invalid_mcp_server",
        )
    return out


def _userinfo(url: str) -> list[str]:
    """user:password@ in a URL is a secret too."""
    found = re.match(r"https?://([^@/]+)@", url)
    return found.group(1).split(":", 1) if found else []


def _quoted(arg: str) -> str:
    return arg if arg and not re.search(r"\s", arg) else repr(arg)
