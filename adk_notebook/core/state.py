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
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Any

__all__ = ["APP_PREFIX", "TEMP_PREFIX", "USER_PREFIX", "State", "split_delta"]

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

    def has_delta(self) -> bool:
        return bool(self._delta)

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
