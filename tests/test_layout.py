"""The README's Layout section is a module map that matches the code: every public module of the
package is named there, under its package, and nothing named there is missing."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "adk_notebook"


def layout_block() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    return section.split("```", 2)[1]


def named_modules(block: str) -> set[str]:
    """`pkg/mod.py` paths the map names: a line `  pkg/ ...` opens a package, `name.py` under it
    (on that line or the lines indented below it) names one of its modules."""
    named: set[str] = set()
    package = ""
    for line in block.splitlines():
        opened = re.match(r"^  (\w+)/\s", line)
        if opened:
            package = opened[1]
        elif re.match(r"^  \w+\.py\b", line):  # a module of the package itself (runner.py)
            package = ""
        elif re.match(r"^\S", line):  # adk_notebook/ itself, bench/, notebooks/, tests/
            package = "-"
        if package == "-":
            continue
        named.update(
            f"{package}/{name}.py" if package else f"{name}.py" for name in re.findall(r"\b([\w/]+)\.py\b", line)
        )
    return named


def public_modules() -> set[str]:
    found = set()
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE)
        if path.name.startswith("_") or "__pycache__" in relative.parts:
            continue
        found.add(relative.as_posix())
    return found


def test_every_public_module_is_on_the_map_and_every_mapped_module_exists() -> None:
    named, actual = named_modules(layout_block()), public_modules()
    assert not actual - named, f"add to README's Layout: {sorted(actual - named)}"
    assert not named - actual, f"README's Layout names modules that do not exist: {sorted(named - actual)}"


def test_the_map_reads_as_it_is_checked() -> None:
    block = "adk_notebook/\n  core/       content.py (Content), events.py\n              state.py\n  runner.py   Runner\nbench/  x.py\n"
    assert named_modules(block) == {"core/content.py", "core/events.py", "core/state.py", "runner.py"}
