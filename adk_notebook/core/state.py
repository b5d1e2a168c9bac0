"""Session state with scopes chosen by key prefix.

| prefix  | shared by                        | persisted |
|---------|----------------------------------|-----------|
| `app:`  | every user and session of an app | yes       |
| `user:` | every session of one user        | yes       |
| `temp:` | this invocation only             | never     |
| (none)  | this session                     | yes       |

`State` is the view contexts hand to tools and callbacks: reads see the session's merged
state, writes land in it at once (so later reads in the same invocation see them) and are
recorded in a delta that travels on the next event, which is how they get persisted.

Every service keeps the same values, so a program that works on the in-memory service works
on SQLite: keys are strings, and values other than `temp:` ones are strict JSON (str, int,
finite float, bool, None, lists and dicts; tuples come back as lists). A write the store
could not keep is refused where it happens, with an AdkError naming the key (`storable`).
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Any

from .errors import AdkError
from .json_value import json_problem, repaired

__all__ = ["APP_PREFIX", "TEMP_PREFIX", "USER_PREFIX", "State", "checked_state", "split_delta", "storable"]

APP_PREFIX = "app:"
USER_PREFIX = "user:"
TEMP_PREFIX = "temp:"


class State(MutableMapping[str, Any]):
    """A mutable mapping over the session's state that records every write in `delta`."""

    __slots__ = ("_value", "_delta")

    def __init__(self, value: dict[str, Any], delta: dict[str, Any]) -> None:
        self._value = value
        self._delta = delta

    def __getitem__(self, key: str) -> Any:
        return self._value[key]

    def __setitem__(self, key: str, value: Any) -> None:
        value = storable(key, value)
        self._value[key] = value
        self._delta[key] = value

    def __delitem__(self, key: str) -> None:
        # A deletion persists as None: the scopes below have no tombstones of their own.
        del self._value[key]
        self._delta[key] = None

    def __iter__(self) -> Iterator[str]:
        return iter(self._value)

    def __len__(self) -> int:
        return len(self._value)

    def __contains__(self, key: object) -> bool:
        return key in self._value

    def get(self, key: str, default: Any = None) -> Any:
        return self._value.get(key, default)

    @property
    def delta(self) -> dict[str, Any]:
        return self._delta

    def to_dict(self) -> dict[str, Any]:
        return dict(self._value)

    def __repr__(self) -> str:
        return f"State({self._value!r})"


def split_delta(delta: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Split a state delta into (app, user, session) parts; `temp:` keys are dropped."""
    app: dict[str, Any] = {}
    user: dict[str, Any] = {}
    session: dict[str, Any] = {}
    for key, value in delta.items():
        if key.startswith(APP_PREFIX):
            app[key] = value
        elif key.startswith(USER_PREFIX):
            user[key] = value
        elif not key.startswith(TEMP_PREFIX):
            session[key] = value
    return app, user, session


def storable(key: Any, value: Any) -> Any:
    """`value` as a session keeps it under `key` (its text repaired); AdkError when no store could keep it.

    `temp:` values are not checked: they never leave the invocation.
    """
    if not isinstance(key, str):
        raise AdkError.session(
            f"State key {key!r} is not a string ({type(key).__name__}); state keys are strings, their prefix "
            f"is their scope. Use a string key, e.g. {str(key)!r}.",
            code="not_serializable",
            category="invalid_input",
        )
    if key.startswith(TEMP_PREFIX):
        return value
    problem = json_problem(value, f"state[{key!r}]")
    if problem is not None:
        raise AdkError.session(
            f"State key {key!r} cannot be stored: {problem}. Session state is kept as JSON: store a datetime as "
            "`value.isoformat()`, a set as a list, a pydantic model as `model.model_dump(mode='json')`, and keep "
            "an object only this run needs under a 'temp:' key.",
            code="not_serializable",
            category="invalid_input",
        )
    return repaired(value)


def checked_state(state: dict[str, Any]) -> dict[str, Any]:
    """`state` with every entry made `storable` (the first one that cannot be raises)."""
    return {key: storable(key, value) for key, value in state.items()}
