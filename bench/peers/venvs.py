"""Peers' throwaway virtual environments under bench/.venvs/, shared by the benchmarks (stdlib only).

Each peer framework runs in its own venv, created and installed on first use, so the figures
compare released versions without their dependencies meeting ours.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parents[1]


@dataclass(frozen=True, slots=True)
class Peer:
    name: str  # also the venv's folder name
    requirement: str  # what `pip install` gets (several, separated by spaces)
    probe: str  # a module whose import proves the venv works
    script: str  # under bench/peers/


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run(*command: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in command], capture_output=True, text=True, env=env)


def tail(process: subprocess.CompletedProcess[str]) -> str:
    return "\n".join((process.stderr or process.stdout).strip().splitlines()[-5:])


def peer_python(peer: Peer) -> Path | None:
    """The interpreter of the peer's venv, created and installed if missing or broken; None if that fails."""
    venv = BENCH / ".venvs" / peer.name
    python = venv / "bin" / "python"
    if python.exists() and run(python, "-c", f"import {peer.probe}").returncode == 0:
        return python
    log(f"[{peer.name}] creating {venv.relative_to(BENCH.parent)} and installing {peer.requirement} (a few minutes)...")
    for command in (
        (sys.executable, "-m", "venv", "--clear", venv),
        (python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *peer.requirement.split()),
        (python, "-c", f"import {peer.probe}"),
    ):
        process = run(*command)
        if process.returncode != 0:
            log(f"[{peer.name}] skipped: `{' '.join(map(str, command))}` failed:\n{tail(process)}")
            return None
    return python


def run_peer(peer: Peer, *args: str) -> dict[str, Any] | None:
    """Run the peer's script in its venv; its last stdout line, as JSON; None (reason on stderr) if it cannot run."""
    python = peer_python(peer)
    if python is None:
        return None
    process = run(python, BENCH / "peers" / peer.script, *args)
    if process.returncode != 0:
        log(f"[{peer.name}] skipped: the workload failed:\n{tail(process)}")
        return None
    return json.loads(process.stdout.strip().splitlines()[-1])
