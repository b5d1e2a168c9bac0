"""Tool functions whose annotations are strings (`from __future__ import annotations`).

Kept apart from tests/test_schema_corpus.py so the future import covers exactly these.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field
from typing_extensions import TypedDict  # pydantic needs it before Python 3.12


class ToolContext:
    """Stands in for adk_notebook.core.context.ToolContext, recognised by its class name."""


class Dimensions(TypedDict):
    """Box size in centimetres."""

    width: float
    height: float


@dataclass
class Parcel:
    """A parcel to ship."""

    weight_kg: float
    fragile: bool = False


class Destination(BaseModel):
    """Where a parcel goes."""

    city: str = Field(description="Destination city.")
    postcode: str | None = None


class LookupArgs(BaseModel):
    key: str = Field(description="Cache key.")
    ttl: int = Field(default=60, ge=0, description="Seconds to keep the entry.")


def ship(
    parcel: Parcel,
    destination: Destination,
    size: Dimensions | None = None,
    speed: Literal["standard", "express"] = "standard",
    ctx: ToolContext | None = None,
) -> dict[str, str]:
    """Ship a parcel.

    Args:
        parcel: What to ship.
        destination: Where to ship it.
        size: Box size, if known.
        speed: Delivery speed.
    """
    return {"status": "shipped"}


def schedule(when: datetime.date, note: str | None = None, *, context: ToolContext) -> str:
    """Schedule a pickup.

    Parameters
    ----------
    when : date
        The pickup day.
    note : str, optional
        Instructions for
        the driver.
    """
    return f"pickup on {when.isoformat()}"


def lookup(tool_context: ToolContext, args: LookupArgs) -> dict[str, str]:
    """Look up cached data."""
    return {"key": args.key}


def tally(counts: dict[str, int], labels: list[str] | None = None) -> int:
    """Total the counts.

    :param counts: Count per label.
    :param labels: Only these labels.
    :type labels: list[str]
    :returns: The total.
    """
    return sum(counts.values())
