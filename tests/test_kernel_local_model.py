"""The local model dies, the kernel does not: a real kernel (nbclient) whose model process is
killed in the middle of an answer.

A crash inside llama.cpp (its AMX path did, on some Xeons) used to take the kernel and every
variable with it. Here the model's child process gets SIGSEGV from outside while it streams;
the run must end with one clear error (in the cell and in the run's transcript), the kernel
must still hold its variables, and the next %%chat must answer from a new model process.
"""

from __future__ import annotations

import asyncio
import html
import importlib.util
import os
import re
import signal
import time
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = [
    pytest.mark.notebook,
    pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="needs the [local] extra"),
]

CELLS = [
    "%load_ext adk_notebook\nfrom adk_notebook import LocalModel\nprecious = {'answer': 42}",
    "tiny = LocalModel(max_output_tokens=2000)",
    "%%agent teller --model tiny\nYou are a storyteller.",
    "tiny.worker().pid",  # the model's process, started now (a run would start it too)
    "%%chat teller\nWrite a very long story about a dragon and a knight.",
    "precious",
    "tiny.max_output_tokens = 40",
    "%%chat teller\nSay hello again.",
    "tiny.pid",
]


class StreamWatch(NotebookClient):
    """An nbclient that also reads the run widget's deltas (custom comm messages, never saved):
    the answer's text the view has been sent so far, put together as run_view.js does."""

    drawn: tuple[str, str] = ("", "")  # the answer's closed blocks and its open tail, as HTML

    @property
    def streamed(self) -> str:
        return html.unescape(re.sub(r"<[^>]*>", "", "".join(self.drawn)))

    def process_message(self, msg: dict[str, Any], cell: Any, cell_index: int) -> Any:
        data = (msg.get("content") or {}).get("data") or {}
        if msg.get("msg_type") == "comm_msg" and data.get("method") == "custom":
            body = data.get("content") or {}
            if body.get("type") == "delta" and body.get("seq") == 1:  # a new run's view: its answer alone
                self.drawn = ("", "")
            for op in body.get("ops", ()) if body.get("type") == "delta" else ():
                if op[0] == "stream":  # ["stream", target, kept, cut, suffix, split]: cut, split in UTF-16 units
                    done, tail = self.drawn
                    new = (tail.encode("utf-16-le")[: 2 * op[3]] + op[4].encode("utf-16-le")).decode("utf-16-le")
                    units = new.encode("utf-16-le")
                    self.drawn = (
                        done + units[: 2 * op[5]].decode("utf-16-le"),
                        units[2 * op[5] :].decode("utf-16-le"),
                    )
        return super().process_message(msg, cell, cell_index)


def value(cell: nbformat.NotebookNode) -> str:
    [result] = [o for o in cell.outputs if o.output_type == "execute_result"]
    return result.data["text/plain"]


def transcript(cell: nbformat.NotebookNode) -> dict[str, str]:
    [shown] = [o for o in cell.outputs if o.output_type == "display_data" and "text/html" in o.data]
    return shown.data


async def test_a_killed_model_process_leaves_the_kernel_and_its_variables() -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    client = StreamWatch(nb, timeout=300, kernel_name="python3", allow_errors=True)
    async with client.async_setup_kernel():
        for index in range(4):
            await client.async_execute_cell(nb.cells[index], index)
        pid = int(value(nb.cells[3]))
        running = asyncio.ensure_future(client.async_execute_cell(nb.cells[4], 4))
        deadline = time.monotonic() + 120  # a loaded, shared machine may take a while to the first words
        while len(client.streamed) < 40 and not running.done() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert len(client.streamed) >= 40 and not running.done(), "the story should be streaming"
        before_the_crash = client.streamed
        os.kill(pid, signal.SIGSEGV)
        await asyncio.wait_for(running, 30)
        for index in range(5, len(CELLS)):
            await client.async_execute_cell(nb.cells[index], index)
    cells = nb.cells
    assert not [o for c in cells[:4] for o in c.outputs if o.output_type == "error"]

    died = cells[4]
    [error] = [o for o in died.outputs if o.output_type == "error"]
    [line] = error.traceback
    assert line.startswith("model.unavailable: The local model process of 'local:SmolLM2-135M-Instruct.Q4_1.gguf'")
    assert f"(pid {pid}) was killed by SIGSEGV" in line and "next run starts the model again" in line
    shown = transcript(died)
    assert "error" in shown["text/plain"].splitlines()[0], "the run's view ends as an error"
    assert "killed by SIGSEGV" in shown["text/html"] and "killed by SIGSEGV" in shown["text/plain"]
    assert before_the_crash[:40] in shown["text/plain"], "what streamed before the crash stays in the transcript"

    assert value(cells[5]) == "{'answer': 42}", "the kernel survived with its variables"
    assert not [o for o in cells[7].outputs if o.output_type == "error"]
    assert transcript(cells[7])["text/plain"].startswith("[teller] done · model local:SmolLM2-135M-Instruct.Q4_1.gguf")
    assert int(value(cells[8])) not in (pid, 0), "a new model process answered"
