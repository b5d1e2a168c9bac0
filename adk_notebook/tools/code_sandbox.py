"""The bubblewrap sandbox `PythonCodeExecutor` runs the model's code in, and whether this machine has one.

bubblewrap (`bwrap`, Debian's `bubblewrap`) starts a process in namespaces of its own: PID (it
sees, signals and outlives none of the user's processes, and all of it dies with bwrap), IPC,
UTS, network (none but its own loopback, unless `network=True`), mount (a root of its own that
is read-only: the system folders and Python's prefixes bound read-only, the working folder
read-write, a private /tmp, its own /proc, a minimal /dev; the user's home, but for Python's
folders in it, and projects are not there at all) and, where the kernel allows it, user; with
no capabilities left, even for root.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["TMPFS_BYTES", "bwrap_command", "bwrap_problem"]

TMPFS_BYTES = 256 * 2**20
"""Most bytes the private /tmp and /dev/shm each hold (bubblewrap 0.8 and later): memory beside RLIMIT_AS."""
# links on merged-/usr systems (/bin -> usr/bin), real folders on the others
_SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
_PROBE_TIMEOUT = 20.0


def bwrap_command(
    command: Sequence[str], workdir: Path, *, network: bool, files: Mapping[str, Path] | None = None
) -> list[str]:
    """`command` run inside the sandbox, the working folder read-write.

    `files` maps paths inside to files outside, bound read-only: a file of a project is there
    without the project's folder.
    """
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise FileNotFoundError("bwrap")
    args = [
        bwrap,
        "--unshare-all",  # user (where possible), PID, IPC, UTS, network, cgroup
        *(["--share-net"] if network else []),
        "--cap-drop",
        "ALL",  # root outside is not root in here
        "--die-with-parent",
        "--new-session",  # no TIOCSTI into the user's terminal
    ]
    for folder in _SYSTEM_FOLDERS:
        if os.path.islink(folder):
            args += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            args += ["--ro-bind", folder, folder]
    size = ["--size", str(TMPFS_BYTES)] if _can_size_tmpfs(bwrap) else []
    args += ["--proc", "/proc", "--dev", "/dev", *size, "--tmpfs", "/dev/shm", *size, "--tmpfs", "/tmp"]
    # after /tmp, which would hide what lies under it (a virtual environment in /tmp, say)
    for path in _outermost(_python_folders()):
        args += ["--ro-bind", str(path), str(path)]
    for inside, outside in (files or {}).items():
        args += ["--ro-bind", str(outside), inside]
    args += ["--bind", str(workdir), str(workdir)]
    args += ["--remount-ro", "/", "--chdir", str(workdir), "--", *command]
    return args


@functools.cache
def _can_size_tmpfs(bwrap: str) -> bool:
    """bubblewrap 0.8 and later bound a tmpfs (--size); older ones (Ubuntu 22.04's 0.6) still sandbox."""
    try:
        said = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=_PROBE_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--size" in said.stdout + said.stderr


def _outermost(paths: set[Path]) -> list[Path]:
    """`paths` without those inside another of them (bound with it already)."""
    return [p for p in sorted(paths) if not any(o != p and p.is_relative_to(o) for o in paths)]


def _python_folders() -> set[Path]:
    """Where this interpreter, its standard library and its site-packages live (often under a home)."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    paths |= {sysconfig.get_path(name) for name in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths.add(os.path.dirname(os.path.realpath(sys.executable)))
    return {Path(p).resolve() for p in paths if p and os.path.exists(p)}


@functools.cache
def bwrap_problem() -> str | None:
    """None when bubblewrap can run a sandbox here, else why not; found once per process.

    The probe runs this interpreter in the very sandbox a run gets, so a kernel that refuses
    the namespaces (a container without user namespaces, say) is found here, not at the first run.
    """
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed"
    with tempfile.TemporaryDirectory(prefix="adk-bwrap-probe-") as folder:
        command = bwrap_command([sys.executable, "-I", "-c", "pass"], Path(folder).resolve(), network=False)
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=_PROBE_TIMEOUT, env={}, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bwrap could not be run: {exc}"
    if done.returncode != 0:
        said = done.stderr.strip().splitlines()
        return f"bwrap cannot create a sandbox here: {said[-1] if said else f'exit code {done.returncode}'}"
    return None
