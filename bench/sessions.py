"""Session stores side by side: appends per second and a 50-event session read.

    python bench/sessions.py [--n 300]

Starts a throwaway PostgreSQL (Debian's server, as tests/sessions do), then times one workload
(bench/peers/sessions_workload.py) on our SqliteSessionService and PostgresSessionService and on
google-adk's DatabaseSessionService on the same server (and on SQLite through aiosqlite), the
peer in a throwaway venv of its own (bench/.venvs/google-adk-sessions, with asyncpg). The
machine is shared and noisy: compare the ratios of one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from peers.sessions_workload import measure
from peers.venvs import BENCH, Peer, log, peer_python, run

sys.path.insert(0, str(BENCH.parent / "tests"))
from postgres_server import find_bin, postgres_server  # tests/ holds the server starter

from adk_notebook import BaseSessionService, Content, Event, EventActions
from adk_notebook.sessions.postgres import PostgresSessionService
from adk_notebook.sessions.sqlite import SqliteSessionService

GOOGLE_ADK = Peer(
    "google-adk-sessions",
    "google-adk[db] asyncpg",
    "google.adk.sessions, asyncpg, aiosqlite",
    "google_adk_sessions.py",
)


async def ours(service: BaseSessionService, n: int) -> dict[str, float]:
    async def create(session_id: str) -> Any:
        return await service.create(app_name="bench", user_id="u", session_id=session_id)

    async def append(session: Any, i: int) -> None:
        event = Event(
            "agent",
            Content.model(f"event {i}: the weather in Tokyo is sunny"),
            "inv",
            actions=EventActions(state_delta={"n": i}),
        )
        await service.append_event(session, event)

    async def get(session_id: str) -> Any:
        return await service.get(app_name="bench", user_id="u", session_id=session_id)

    return await measure(create, append, get, n)


async def ours_on_postgres(dsn: str, n: int) -> dict[str, float]:
    async with PostgresSessionService(dsn) as service:
        return await ours(service, n)


def google_adk(db_url: str, n: int) -> dict[str, Any] | None:
    python = peer_python(GOOGLE_ADK)
    if python is None:
        return None
    process = run(python, BENCH / "peers" / GOOGLE_ADK.script, db_url, str(n))
    if process.returncode != 0:
        log(f"[google-adk] skipped: the workload failed:\n{process.stderr[-3000:]}")
        return None
    return json.loads(process.stdout.strip().splitlines()[-1])


def row(name: str, figures: dict[str, Any] | None, base: dict[str, float] | None) -> str:
    if figures is None:
        return f"{name:<44} {'(could not run)':>14}"
    ratio = ""
    if base is not None:
        ratio = (
            f"   adk-notebook: {base['appends_per_s'] / figures['appends_per_s']:.1f}x the appends,"
            f" {figures['read_50_ms'] / base['read_50_ms']:.1f}x faster reads"
        )
    return f"{name:<44} {figures['appends_per_s']:>10.0f} /s {figures['read_50_ms']:>10.2f} ms{ratio}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300, help="events appended per round")
    args = parser.parse_args()
    bin_dir = find_bin()
    if bin_dir is None:
        sys.exit("no PostgreSQL server installed (apt-get install postgresql)")
    import psycopg

    with tempfile.TemporaryDirectory() as folder, postgres_server(bin_dir) as dsn:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE DATABASE peer")
        peer_dsn = dsn.rsplit("/", 1)[0] + "/peer"
        with SqliteSessionService(Path(folder) / "ours.db") as sqlite_service:
            sqlite = asyncio.run(ours(sqlite_service, args.n))
        postgres = asyncio.run(ours_on_postgres(dsn, args.n))
        peer_pg = google_adk(peer_dsn.replace("postgresql://", "postgresql+asyncpg://"), args.n)
        peer_sqlite = google_adk(f"sqlite+aiosqlite:///{Path(folder) / 'peer.db'}", args.n)
    version = f" {peer_pg['version']}" if peer_pg else ""
    print(f"session stores: {args.n} appends per round, a 50-event read; medians of one run")
    print(f"{'':<44} {'appends':>13} {'read 50':>13}")
    print(row("adk-notebook SqliteSessionService", sqlite, None))
    print(row(f"google-adk{version} DatabaseSessionService (SQLite)", peer_sqlite, sqlite))
    print(row("adk-notebook PostgresSessionService", postgres, None))
    print(row(f"google-adk{version} DatabaseSessionService (PG)", peer_pg, postgres))


if __name__ == "__main__":
    main()
