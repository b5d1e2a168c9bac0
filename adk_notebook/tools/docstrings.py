"""Read a function's docstring into the parts a tool schema needs.

A tool's description and its per-parameter descriptions come from the docstring the user
already wrote, in Google, NumPy or Sphinx style, so they never repeat themselves.
"""

from __future__ import annotations

import inspect
import re
import textwrap
from dataclasses import dataclass, field

__all__ = ["Docstring", "parse_docstring"]

_PARAM_SECTIONS = frozenset({
    "args", "arguments", "parameters", "params", "keyword args", "keyword arguments",
    "other parameters",
})  # fmt: skip
_RETURN_SECTIONS = frozenset({"returns", "return", "yields"})
_SECTIONS = _PARAM_SECTIONS | _RETURN_SECTIONS | {
    "raises", "example", "examples", "note", "notes", "see also", "warning", "warnings",
    "attributes", "references", "todo",
}  # fmt: skip
_SPHINX_PARAMS = frozenset({"param", "parameter", "arg", "argument", "key", "keyword"})
_SPHINX_RETURNS = frozenset({"returns", "return"})
_SPHINX_FIELD = re.compile(r"^:(\w+)([^:]*):(.*)$")
_UNDERLINE = re.compile(r"^-{3,}\s*$")
_GOOGLE_ENTRY = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:(.*)$")


@dataclass(frozen=True, slots=True)
class Docstring:
    """The parts of a docstring: `description` is the summary plus prose, without sections."""

    summary: str = ""
    description: str = ""
    params: dict[str, str] = field(default_factory=dict)
    returns: str | None = None


@dataclass(slots=True)
class _Section:
    name: str  # lower-cased section title or Sphinx field name; "" for the leading prose
    style: str  # "prose", "google", "numpy" or "sphinx"
    arg: str = ""  # a Sphinx field's argument, e.g. "str city" in ":param str city:"
    body: list[str] = field(default_factory=list)


def parse_docstring(doc: str | None) -> Docstring:
    """Parse a Google, NumPy or Sphinx style docstring; styles may even be mixed."""
    if not doc or not doc.strip():
        return Docstring()
    prose, *sections = _split(inspect.cleandoc(doc).splitlines())
    description = "\n".join(prose.body).strip()
    summary = _join(description.split("\n\n")[0].splitlines())
    params: dict[str, str] = {}
    returns: str | None = None
    for section in sections:
        if section.style == "sphinx":
            if section.name in _SPHINX_PARAMS and section.arg.split():
                params[section.arg.split()[-1]] = _join(section.body)
            elif section.name in _SPHINX_RETURNS:
                returns = _join(section.body)
        elif section.name in _PARAM_SECTIONS:
            numpy = section.style == "numpy"
            params.update(_numpy_params(section.body) if numpy else _google_params(section.body))
        elif section.name in _RETURN_SECTIONS:
            returns = _returns(section)
    return Docstring(summary, description, params, returns)


def _split(lines: list[str]) -> list[_Section]:
    """Cut the docstring at section titles and Sphinx fields; the first section is the prose."""
    sections = [_Section("", "prose")]
    index = 0
    while index < len(lines):
        line = lines[index]
        title = line.strip().rstrip(":").lower()
        top_level = not line[:1].isspace()
        if top_level and line.rstrip().endswith(":") and title in _SECTIONS:
            sections.append(_Section(title, "google"))
        elif top_level and title in _SECTIONS and index + 1 < len(lines) and _UNDERLINE.match(lines[index + 1]):
            sections.append(_Section(title, "numpy"))
            index += 1
        elif match := _SPHINX_FIELD.match(line):
            sections.append(_Section(match[1].lower(), "sphinx", match[2].strip(), [match[3]]))
        else:
            sections[-1].body.append(line)
        index += 1
    return sections


def _entries(body: list[str]) -> list[tuple[str, list[str]]]:
    """Group a section's lines into (entry line, indented continuation lines)."""
    entries: list[tuple[str, list[str]]] = []
    for line in textwrap.dedent("\n".join(body)).splitlines():
        if not line.strip():
            continue
        if line[:1].isspace() and entries:
            entries[-1][1].append(line)
        else:
            entries.append((line.strip(), []))
    return entries


def _google_params(body: list[str]) -> dict[str, str]:
    """`name (type): text` entries, the text possibly continued on indented lines."""
    params = {}
    for head, more in _entries(body):
        if match := _GOOGLE_ENTRY.match(head):
            params[match[1]] = _join([match[2], *more])
    return params


def _numpy_params(body: list[str]) -> dict[str, str]:
    """`name : type` entries (or `x, y : type`) with the text on the indented lines below."""
    params = {}
    for head, more in _entries(body):
        names = head.partition(":")[0]
        for name in names.split(","):
            params[name.strip().lstrip("*")] = _join(more)
    return params


def _returns(section: _Section) -> str:
    """A Google returns section is prose; a NumPy one is `type` lines with text below them."""
    if section.style == "google":
        return _join(section.body)
    return " ".join(_join(more) or head for head, more in _entries(section.body))


def _join(lines: list[str]) -> str:
    """One line of text with runs of whitespace collapsed."""
    return " ".join(" ".join(lines).split())
