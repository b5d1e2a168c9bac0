"""Reliability tests: each test records what it tried, and the session ends with one table.

A test asks for the `tally` fixture and calls `tally.record(category, tried, lost, note=...)`
once per thing it counted (the line is printed at once, visible with `-s`). `lost` counts
inputs that were lost or corrupted: a tool run with arguments its schema rejects, an event
missing or half-written, a call without its response, state that does not match its events.
The goal is zero everywhere.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest

_ROWS = pytest.StashKey[list["Row"]]()


@dataclass(slots=True)
class Row:
    category: str
    tried: int
    lost: int
    notes: list[str] = field(default_factory=list)


class Tally:
    """Collects (category, tried, lost) rows for the summary table."""

    def __init__(self, rows: list[Row]) -> None:
        self._rows = rows

    def record(self, category: str, tried: int, lost: int = 0, note: str = "") -> None:
        print(f"\n[reliability] {category}: tried {tried}, lost/corrupted {lost}" + (f" ({note})" if note else ""))
        self._rows.append(Row(category, tried, lost, [note] if note else []))

    @contextmanager
    def case(self, category: str) -> Iterator[None]:
        """One input tried: counted as lost when the block fails."""
        try:
            yield
        except BaseException:
            self.record(category, 1, 1)
            raise
        self.record(category, 1, 0)


@pytest.fixture(scope="session")
def tally(pytestconfig: pytest.Config) -> Tally:
    rows = pytestconfig.stash.setdefault(_ROWS, [])
    return Tally(rows)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    rows = config.stash.get(_ROWS, [])
    if not rows:
        return
    merged: dict[str, Row] = {}
    for row in rows:  # one line per category, in the order they were first recorded
        seen = merged.setdefault(row.category, Row(row.category, 0, 0))
        seen.tried += row.tried
        seen.lost += row.lost
        seen.notes += [n for n in row.notes if n not in seen.notes]
    width = max(len("category"), *(len(c) for c in merged))
    write = terminalreporter.write_line
    terminalreporter.write_sep("=", "reliability summary")
    write(f"{'category':<{width}}  {'tried':>8}  {'lost/corrupted':>14}")
    write(f"{'-' * width}  {'-' * 8}  {'-' * 14}")
    for row in merged.values():
        write(f"{row.category:<{width}}  {row.tried:>8}  {row.lost:>14}")
    total_tried = sum(r.tried for r in merged.values())
    total_lost = sum(r.lost for r in merged.values())
    write(f"{'-' * width}  {'-' * 8}  {'-' * 14}")
    write(f"{'total':<{width}}  {total_tried:>8}  {total_lost:>14}")
    notes = [(r.category, n) for r in merged.values() for n in r.notes]
    if notes:
        write("")
        for category, note in notes:
            write(f"  {category}: {note}")
