"""A real claimant for tests of session claims: a process that runs an agent into a tool and stays there.

`CLAIMANT` is a script (`python -c CLAIMANT URL LEASE_SECONDS [TOOL_SECONDS]`, the URL of a store as ADK_SESSIONS
takes it, e.g. sqlite:////tmp/s.db) that prints "in tool" once its run holds session "s1" of user
"u" in app "a"; `start_with_pid` starts a process on a given pid, to show what happens when the
kernel hands a dead claimant's pid to another process.
"""

from __future__ import annotations

import subprocess

import pytest

__all__ = ["CLAIMANT", "start_with_pid"]

CLAIMANT = r"""
import asyncio, sys
from adk_notebook import FunctionCall, LlmAgent, Runner, ScriptedModel, tool
from adk_notebook.sessions.urls import open_session_service

@tool
async def slow() -> dict:
    "Take a long time."
    print("in tool", flush=True)
    await asyncio.sleep(float(sys.argv[3]) if len(sys.argv) > 3 else 120)
    return {}

async def main() -> None:
    service = open_session_service(sys.argv[1], lease_seconds=float(sys.argv[2]))
    agent = LlmAgent(name="a", model=ScriptedModel([FunctionCall("slow", {}), "done"]), tools=[slow])
    await Runner(app_name="a", agent=agent, session_service=service).run_to_result(
        user_id="u", session_id="s1", content="go")

asyncio.run(main())
"""


def start_with_pid(pid: int, argv: list[str]) -> subprocess.Popen[bytes]:
    """A process that gets `pid` (free again after its owner died), as the kernel would in time hand it out.

    Linux lets root choose the next pid (/proc/sys/kernel/ns_last_pid); other processes may take
    it first, so this retries."""
    for _ in range(200):
        try:
            with open("/proc/sys/kernel/ns_last_pid", "w") as last:
                last.write(str(pid - 1))
        except OSError as exc:
            pytest.skip(f"cannot choose the next pid here ({exc}): needs Linux and root")
        process = subprocess.Popen(argv)
        if process.pid == pid:
            return process
        process.kill()
        process.wait()
    pytest.fail(f"pid {pid} was always taken by another process first")
