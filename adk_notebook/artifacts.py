"""Artifacts: named, versioned files (a Part each) that agents and tools save in a session.

Saving through a context records the new version in the event's `artifact_delta`, and
`{artifact.name}` in an instruction inserts an artifact's text.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from .core.content import Part

__all__ = ["BaseArtifactService", "InMemoryArtifactService"]


class BaseArtifactService(ABC):
    @abstractmethod
    async def save(self, *, app_name: str, user_id: str, session_id: str, filename: str, artifact: Part) -> int:
        """Store a new version of `filename`; return its version number (0, 1, ...)."""

    @abstractmethod
    async def load(
        self, *, app_name: str, user_id: str, session_id: str, filename: str, version: int | None = None
    ) -> Part | None:
        """The given (default: latest) version, or None."""

    @abstractmethod
    async def list_keys(self, *, app_name: str, user_id: str, session_id: str) -> list[str]: ...

    @abstractmethod
    async def delete(self, *, app_name: str, user_id: str, session_id: str, filename: str) -> None: ...


class InMemoryArtifactService(BaseArtifactService):
    """Artifacts in a dict; `user:`-prefixed names are shared by all sessions of the user."""

    def __init__(self) -> None:
        self._versions: dict[tuple[str, str, str, str], list[Part]] = {}

    @staticmethod
    def _key(app_name: str, user_id: str, session_id: str, filename: str) -> tuple[str, str, str, str]:
        return (app_name, user_id, "" if filename.startswith("user:") else session_id, filename)

    async def save(self, *, app_name: str, user_id: str, session_id: str, filename: str, artifact: Part) -> int:
        versions = self._versions.setdefault(self._key(app_name, user_id, session_id, filename), [])
        versions.append(artifact)
        return len(versions) - 1

    async def load(
        self, *, app_name: str, user_id: str, session_id: str, filename: str, version: int | None = None
    ) -> Part | None:
        versions = self._versions.get(self._key(app_name, user_id, session_id, filename))
        if not versions:
            return None
        if version is None:
            return versions[-1]
        return versions[version] if 0 <= version < len(versions) else None

    async def list_keys(self, *, app_name: str, user_id: str, session_id: str) -> list[str]:
        return sorted(
            name
            for (app, user, sid, name) in self._versions
            if app == app_name and user == user_id and sid in ("", session_id)
        )

    async def delete(self, *, app_name: str, user_id: str, session_id: str, filename: str) -> None:
        self._versions.pop(self._key(app_name, user_id, session_id, filename), None)
