"""Every `# noqa` and `# type: ignore` left in the package names its codes and says why.

ruff (RUF100) and mypy (warn_unused_ignores) already fail on a marker that silences nothing, and
ruff's PGH rules on one without codes; the reason beside it is what this checks.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "adk_notebook"
MARKER = re.compile(r"#\s*(noqa|type:\s*ignore)\b")
# the marker with its codes, then the reason after "# " or " - "
EXPLAINED = re.compile(r"#\s*(noqa: [A-Z]+[0-9]+(, [A-Z]+[0-9]+)*|type: ignore\[[a-z-]+(, [a-z-]+)*\])\s+(#|-)\s*\S")


def markers_without_a_reason(source: str) -> list[str]:
    found = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT and MARKER.search(token.string) and not EXPLAINED.search(token.string):
            found.append(f"{token.start[0]}: {token.string}")
    return found


def test_the_check_tells_a_reason_from_none() -> None:
    assert markers_without_a_reason("x = 1  # noqa: E501  # a URL\ny = f()  # type: ignore[arg-type]  # why\n") == []
    assert markers_without_a_reason("x = 1  # noqa\ny = f()  # type: ignore[arg-type]\nz = 2  # noqa: E501\n") == [
        "1: # noqa",
        "2: # type: ignore[arg-type]",
        "3: # noqa: E501",
    ]


def test_every_marker_in_the_package_names_its_reason() -> None:
    unexplained = {
        str(path.relative_to(PACKAGE.parent)): found
        for path in sorted(PACKAGE.rglob("*.py"))
        if (found := markers_without_a_reason(path.read_text(encoding="utf-8")))
    }
    assert unexplained == {}
