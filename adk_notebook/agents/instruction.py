"""Instruction templates: `{var}` and `{var?}` filled from session state before each model call.

| form             | becomes                                              |
|------------------|------------------------------------------------------|
| `{name}`         | state["name"]; missing is an error naming the key    |
| `{name?}`        | state["name"], or "" when missing                    |
| `{app:x}` etc.   | the same for the `app:`, `user:` and `temp:` scopes  |
| `{artifact.f}`   | the text of artifact `f`                             |
| anything else    | left as written (so JSON examples survive)           |
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ..core.errors import AdkError

__all__ = ["render_instruction"]

_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_STATE_NAME = re.compile(r"^(?:(?:app|user|temp):)?[A-Za-z_][A-Za-z0-9_]*$")
_ARTIFACT_NAME = re.compile(r"^artifact\.(.+)$")

ArtifactLoader = Callable[[str], Awaitable[str | None]]


async def render_instruction(
    template: str,
    state: Mapping[str, Any],
    *,
    agent_name: str,
    load_artifact: ArtifactLoader | None = None,
) -> str:
    """Fill the placeholders of `template`; raise AdkError naming any missing required one."""
    if "{" not in template:
        return template
    pieces: list[str] = []
    last = 0
    for match in _PLACEHOLDER.finditer(template):
        pieces.append(template[last : match.start()])
        pieces.append(await _fill(match, state, agent_name, load_artifact))
        last = match.end()
    pieces.append(template[last:])
    return "".join(pieces)


async def _fill(
    match: re.Match[str], state: Mapping[str, Any], agent_name: str, load_artifact: ArtifactLoader | None
) -> str:
    key = match.group(1).strip()
    optional = key.endswith("?")
    if optional:
        key = key[:-1]
    artifact = _ARTIFACT_NAME.match(key)
    if artifact is not None:
        name = artifact.group(1)
        text = await load_artifact(name) if load_artifact is not None else None
        if text is not None:
            return text
        if optional:
            return ""
        raise AdkError.agent(
            f"The instruction of agent {agent_name!r} uses {{artifact.{name}}} but there is no artifact {name!r}"
            + ("" if load_artifact is not None else " (the runner has no artifact service)")
            + f". Save it first, or write {{artifact.{name}?}} to make it optional.",
            code="missing_template_artifact",
            category="invalid_input",
        )
    if not _STATE_NAME.match(key):
        return match.group(0)
    if key in state:
        value = state[key]
        return "" if value is None else str(value)
    if optional:
        return ""
    raise AdkError.agent(
        f"The instruction of agent {agent_name!r} uses {{{key}}} but the session state has no {key!r}. "
        f"Set it (e.g. `sessions.create(..., state={{{key!r}: ...}})` or `--state {key}=...` in %%chat), "
        f"or write {{{key}?}} to make it optional.",
        code="missing_template_variable",
        category="invalid_input",
    )
