"""Interrupts in a real Jupyter kernel and a real script: the run ends with the cell, at once.

For each way a run is started (`%%chat` awaited on the kernel loop, its worker-thread fallback,
`agent.run()` in a cell, `agent.run()` in `python script.py`) and each kind of work in progress
(a sync tool on its thread, an async tool that awaits, an async tool that blocks its event loop
with `time.sleep`, a model streaming text from a loopback server), the kernel is interrupted (or
the script gets SIGINT) while the run is under way. Each interrupt must:
- end the cell (or the script) within a generous bound (bench/interrupts.py prints the figures);
- end the run too: no tool call starts after the interrupt;
- leave the session consistent: every stored call answered exactly once, no claim left;
- leave the session usable: the next message on it gets its answer, not session_busy.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from interrupt_scenarios import SCENARIOS, Scenario, interrupt

pytestmark = pytest.mark.notebook

ROUNDS = 2
LIMIT = 3.0  # seconds: generous on a shared machine; the bench shows the real figures


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name.replace(" ", ""))
async def test_an_interrupt_ends_the_run_with_the_cell(scenario: Scenario, tmp_path: Path, tally: Any) -> None:
    outcomes = await interrupt(scenario, ROUNDS, tmp_path)
    problems = [f"round {i}: {p} (shown: {o.shown!r})" for i, o in enumerate(outcomes) for p in o.check(scenario, LIMIT)]
    lost = sum(1 for o in outcomes if o.check(scenario, LIMIT))
    latencies = ", ".join(f"{o.latency:.2f}" for o in outcomes)
    tally.record(f"interrupt in a real kernel/script: {scenario.name}", len(outcomes), lost, f"latency s: {latencies}")
    assert not problems, problems
