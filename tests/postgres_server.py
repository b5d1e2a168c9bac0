"""A real PostgreSQL server for tests and benchmarks: initdb in a temporary folder, 127.0.0.1, a free port.

Debian's `postgresql` package puts the server in /usr/lib/postgresql/<major>/bin. initdb
refuses to run as root, so as root the cluster belongs to the `postgres` user (which the
package creates). Trust authentication on loopback only. The server runs at its defaults but for
fsync (see `postgres_server`), so the tests meet the limits a user's server has (max_connections=100).
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["find_bin", "free_port", "postgres_server"]


def find_bin() -> Path | None:
    """The folder of the newest installed PostgreSQL server, or None when there is none."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parent.parent.name),
    )
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _owner() -> dict[str, object]:
    """Popen options that run the server as `postgres` when we are root (the process itself, so
    signals reach it)."""
    return {"user": "postgres", "group": "postgres", "extra_groups": []} if os.geteuid() == 0 else {}


def free_port() -> int:
    """A loopback port nobody listens on (as long as nobody takes it next)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def postgres_server(bin_dir: Path) -> Iterator[str]:
    """Start a throwaway server; yields its DSN (user `postgres`, database `postgres`); stops it after."""
    folder = Path(tempfile.mkdtemp(prefix="adk-pg-"))
    data = folder / "data"
    try:
        if os.geteuid() == 0:
            shutil.chown(folder, "postgres", "postgres")
        subprocess.run(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "-A",
                "trust",
                "--no-sync",
                "-E",
                "UTF8",
                "--locale=C",
            ],
            check=True,
            capture_output=True,
            timeout=120,
            cwd=folder,
            **_owner(),
        )  # type: ignore[call-overload]
        port = free_port()
        # A file, not a pipe: nobody reads a pipe while the tests run.
        log = folder / "server.log"
        with log.open("wb") as log_file:
            server = subprocess.Popen(
                [
                    str(bin_dir / "postgres"),
                    "-D",
                    str(data),
                    "-p",
                    str(port),
                    "-k",
                    str(folder),
                    "-c",
                    "listen_addresses=127.0.0.1",
                    # The one change from the server's defaults (max_connections=100 and all): the data
                    # is thrown away, so the suite's thousands of commits need not each wait for the
                    # disk. Everything else is what a user's server has, so the tests meet its limits.
                    "-c",
                    "fsync=off",
                ],
                stdout=subprocess.DEVNULL,
                stderr=log_file,
                cwd=folder,
                **_owner(),  # type: ignore[call-overload]
            )
        try:
            deadline = time.monotonic() + 60
            while (
                subprocess.run(
                    [
                        str(bin_dir / "pg_isready"),
                        "-h",
                        "127.0.0.1",
                        "-p",
                        str(port),
                        "-q",
                    ],
                    check=False,
                ).returncode
                != 0
            ):
                if server.poll() is not None or time.monotonic() > deadline:
                    shown = log.read_text(errors="replace")[-2000:]
                    raise RuntimeError(f"PostgreSQL did not start on port {port}:\n{shown}")
                time.sleep(0.1)
            yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
        finally:
            # "fast" shutdown: clients still connected are let go.
            server.send_signal(signal.SIGINT)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
