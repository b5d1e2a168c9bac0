"""Turning whatever a tool returned into the JSON object a model receives."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from pydantic import BaseModel

__all__ = ["to_response_dict"]

_SCALARS = (str, int, float, bool, type(None))


def to_response_dict(tool_name: str, result: Any) -> dict[str, Any]:
    """A dict stays as is, a pydantic model or dataclass is dumped, anything else becomes {"result": v}.

    Values that JSON cannot carry become an error the model can read, naming the culprit,
    instead of a crash later inside a provider or the session store.
    """
    if isinstance(result, BaseModel):
        return result.model_dump(mode="json")
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        result = dataclasses.asdict(result)
    if not isinstance(result, dict):
        if isinstance(result, _SCALARS):
            return {"result": result}
        result = {"result": result}
    try:
        json.dumps(result)
    except (TypeError, ValueError) as exc:
        return {
            "error": f"Tool {tool_name!r} returned a value that cannot be sent to the model ({exc}). "
            "Return str, int, float, bool, None, lists, dicts or pydantic models.",
            "code": "result_not_serializable",
        }
    return result
