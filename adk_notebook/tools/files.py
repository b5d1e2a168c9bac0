"""Which file references may be read: remote URIs as they are, local files only inside a folder.

A tool's `file_data` may name a local file. The notebook (to show it) and the providers (to
upload it) read such files only through `resolve_file_uri`, so a model or a tool cannot make
them read `/etc/passwd` or `~/.ssh/id_rsa`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from urllib.parse import urlsplit

if sys.platform == "win32":  # sys.platform, not os.name: mypy checks only the branch of its platform
    from nturl2path import url2pathname
else:  # urllib.request would do the same, but importing it costs ~100 ms (http, ssl, email)
    from urllib.parse import unquote as url2pathname

from ..core.errors import AdkError

__all__ = ["REMOTE_SCHEMES", "resolve_file_uri"]

REMOTE_SCHEMES = frozenset({"http", "https", "gs"})
"""URI schemes passed through unchanged: whoever reads them fetches them remotely."""


def resolve_file_uri(uri: str | os.PathLike[str], *, allowed_root: str | os.PathLike[str] | None = None) -> Path | str:
    """Check a file reference before reading it.

    Args:
        uri: An http(s):// or gs:// URI, a file:// URI, or a local path. A relative path is
            taken relative to `allowed_root`.
        allowed_root: The folder local files must be inside (after resolving `..` and
            symlinks); the current working directory by default.

    Returns:
        The URI unchanged (str) for http, https and gs; the resolved local path (Path) otherwise.

    Raises:
        AdkError: `forbidden` for a local file outside `allowed_root`; `unsupported` for any
            other scheme (ftp:, data:, s3:, ...); `invalid_input` for an empty or malformed one.
    """
    text = os.fspath(uri) if isinstance(uri, os.PathLike) else uri
    if not isinstance(text, str) or not text.strip():
        raise AdkError.tool(
            f"A file reference must be a non-empty URI or path, got {uri!r}.",
            code="invalid_file_uri",
            category="invalid_input",
        )
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme in REMOTE_SCHEMES:
        return text
    if scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise AdkError.tool(
                f"File URI {text!r} names host {parts.netloc!r}; only local files (file:///path) can be read.",
                code="file_uri_remote_host",
                category="forbidden",
            )
        path = Path(url2pathname(parts.path))
    elif scheme and not _is_drive_letter(scheme):
        raise AdkError.tool(
            f"Cannot read {text!r}: the {scheme!r} scheme is not supported. Use http(s)://, gs://, "
            "file:// or a local path.",
            code="unsupported_uri_scheme",
            category="unsupported",
        )
    else:
        path = Path(text)
    root = Path(allowed_root if allowed_root is not None else os.getcwd()).resolve()
    try:
        resolved = (root / path).resolve()  # an absolute `path` replaces `root`
    except (OSError, ValueError) as exc:
        raise AdkError.tool(
            f"Cannot resolve file reference {text!r}: {exc}.", code="invalid_file_uri", category="invalid_input"
        ) from None
    if not resolved.is_relative_to(root):
        raise AdkError.tool(
            f"Refusing to read {text!r}: it resolves to {str(resolved)!r}, outside the allowed folder "
            f"{str(root)!r}. Move the file into that folder, or pass allowed_root=... to allow another.",
            code="file_outside_allowed_root",
            category="forbidden",
        )
    return resolved


def _is_drive_letter(scheme: str) -> bool:
    """`C:\\data\\x.pdf` parses with scheme 'c'; on Windows that is a path."""
    return os.name == "nt" and len(scheme) == 1
