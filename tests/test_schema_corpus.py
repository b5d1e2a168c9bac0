"""A corpus of tool functions with the exact JSON schema each must produce, and validation.

The schemas below are what a model provider receives, so they are written out literally:
a change in what pydantic emits shows up here as a diff to review, not as silent drift.
"""

import datetime
import sys
import typing
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Any, Literal, Optional

import pytest
from pydantic import BaseModel, Field, ValidationError
from typing_extensions import TypedDict  # pydantic needs it before Python 3.12

from adk_notebook import AdkError
from adk_notebook.tools.docstrings import Docstring, parse_docstring
from adk_notebook.tools.schema import (
    FunctionSchema,
    ToolArgumentsError,
    function_schema,
    gemini_schema,
    inline_refs,
    model_json_schema,
)
from tests import schema_corpus_future as future


class ToolContext:
    """Stands in for adk_notebook.core.context.ToolContext, recognised by its class name."""


class Unit(str, Enum):
    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


class Color(Enum):
    """A paint colour."""

    RED = 1
    GREEN = 2


class Address(TypedDict, total=False):
    """A postal address."""

    street: str
    city: str


@dataclass
class LineItem:
    """One line of an order."""

    sku: str
    quantity: int = 1


class Customer(BaseModel):
    """Who placed the order."""

    name: str
    email: str | None = None


class Order(BaseModel):
    """An order."""

    customer: Customer
    items: list[LineItem]
    shipping: Address | None = None


class WeatherArgs(BaseModel):
    """Arguments of get_weather."""

    city: str = Field(description="The city to look up")
    unit: str | None = Field(default=None, description="Temperature unit (celsius or fahrenheit)")


class Node(BaseModel):
    value: int
    children: list["Node"] = []


# --- the corpus ------------------------------------------------------------------------------


def current_time():
    """Return the current time."""


def google_style(city: str, days: int = 3, metric: bool = True):
    """Forecast the weather.

    Looks the city up first, then asks
    the weather service.

    Args:
        city (str): The city to look up,
            e.g. "Paris".
        days (int): How many days ahead.
        metric: Use metric units.

    Returns:
        dict: The forecast.
    """


def google_arguments(path: str, recursive: bool = False):
    """List files.

    Arguments:
        path: Folder to list.
        recursive: Descend into sub-folders.
    """


def numpy_style(a: float, b: float, precision: int = 2):
    """Divide two numbers.

    Parameters
    ----------
    a : float
        The dividend.
    b : float
        The divisor; must not
        be zero.
    precision : int, optional
        Digits after the point.

    Returns
    -------
    float
        The quotient.
    """


def sphinx_style(query: str, limit: int = 10):
    """Search the documents.

    :param str query: Words to look for.
    :type query: str
    :param limit: At most this many
        hits.
    :returns: The hits.
    :rtype: list
    """


def optionals(tag: str | None, name: Optional[str] = None, count: int | None = None):
    """Optional parameters: `tag` may be null but must be given."""


def literals(mode: Literal["fast", "slow"], level: Literal[1, 2, 3] = 1, only: Literal["x"] = "x"):
    """Pick a mode."""


def enums(unit: Unit, color: Color = Color.RED):
    """Paint it.

    Args:
        unit: Temperature unit.
    """


def collections(tags: list[str], scores: dict[str, float], grid: list[list[int]] = []):  # noqa: B006  # the default under test is a list
    """Collections of values."""


def tuples_and_sets(point: tuple[float, float], ids: set[int], rest: tuple[int, ...] = ()):
    """Tuples and sets."""


def typed_dict(address: Address):
    """Use a TypedDict.

    Args:
        address: Where to deliver.
    """


def dataclass_param(item: LineItem, note: str = ""):
    """Use a dataclass."""


def nested_models(order: Order, notify: bool = False):
    """Place an order.

    Args:
        order: The order to place.
        notify: Email the customer.
    """


def optional_model(customer: Customer | None = None):
    """An optional nested model."""


def annotated_constraints(
    days: Annotated[int, Field(ge=1, le=7, description="Days ahead, 1 to 7.")],
    ratio: Annotated[float, Field(gt=0, lt=1)] = 0.5,
):
    """Constrained numbers.

    Args:
        days: Docstring text that the Field description overrides.
        ratio: A fraction.
    """


def string_constraints(
    code: Annotated[str, Field(min_length=2, max_length=3, pattern="^[A-Z]+$")],
    tags: Annotated[list[str], Field(max_length=5)] = [],  # noqa: B006  # the default under test is a list
):
    """Constrained strings."""


def get_weather(args: WeatherArgs):
    """Get the current weather for a city."""


def search_docs(ctx: ToolContext, args: WeatherArgs):
    """Search the user's saved documents."""


def context_by_annotation(query: str, context: ToolContext):
    """The context is found by its type."""


def context_by_name(tool_context, query: str):
    """The context is found by its name."""


def optional_context(query: str, session: Optional[ToolContext] = None):
    """An optional context is found by its type too."""


def unannotated(x, y=3, z="a", w=None, f=1.5):
    """No annotations at all."""


def unions(value: int | str, when: datetime.date | None = None):
    """A union and a date."""


def awkward_names(title: str, json: int = 0, _id: str = "", model_config: str = ""):
    """Names that are JSON schema keywords or pydantic attributes."""


async def async_tool(url: str, *, timeout: float = 10.0):
    """An async tool with a keyword-only parameter."""


def no_docstring(x: int):
    pass


OBJECT = {"additionalProperties": False, "type": "object"}

CORPUS: list[tuple[Callable[..., Any], str, dict[str, Any]]] = [
    (current_time, "Return the current time.", {**OBJECT, "properties": {}}),
    (
        google_style,
        "Forecast the weather.\n\nLooks the city up first, then asks\nthe weather service.",
        {
            **OBJECT,
            "properties": {
                "city": {"type": "string", "description": 'The city to look up, e.g. "Paris".'},
                "days": {"type": "integer", "default": 3, "description": "How many days ahead."},
                "metric": {"type": "boolean", "default": True, "description": "Use metric units."},
            },
            "required": ["city"],
        },
    ),
    (
        google_arguments,
        "List files.",
        {
            **OBJECT,
            "properties": {
                "path": {"type": "string", "description": "Folder to list."},
                "recursive": {
                    "type": "boolean",
                    "default": False,
                    "description": "Descend into sub-folders.",
                },
            },
            "required": ["path"],
        },
    ),
    (
        numpy_style,
        "Divide two numbers.",
        {
            **OBJECT,
            "properties": {
                "a": {"type": "number", "description": "The dividend."},
                "b": {"type": "number", "description": "The divisor; must not be zero."},
                "precision": {
                    "type": "integer",
                    "default": 2,
                    "description": "Digits after the point.",
                },
            },
            "required": ["a", "b"],
        },
    ),
    (
        sphinx_style,
        "Search the documents.",
        {
            **OBJECT,
            "properties": {
                "query": {"type": "string", "description": "Words to look for."},
                "limit": {"type": "integer", "default": 10, "description": "At most this many hits."},
            },
            "required": ["query"],
        },
    ),
    (
        optionals,
        "Optional parameters: `tag` may be null but must be given.",
        {
            **OBJECT,
            "properties": {
                "name": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
                "count": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
                "tag": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            },
            "required": ["tag"],
        },
    ),
    (
        literals,
        "Pick a mode.",
        {
            **OBJECT,
            "properties": {
                "mode": {"type": "string", "enum": ["fast", "slow"]},
                "level": {"type": "integer", "enum": [1, 2, 3], "default": 1},
                "only": {"type": "string", "const": "x", "default": "x"},
            },
            "required": ["mode"],
        },
    ),
    (
        enums,
        "Paint it.",
        {
            **OBJECT,
            "properties": {
                "unit": {
                    "type": "string",
                    "enum": ["celsius", "fahrenheit"],
                    "description": "Temperature unit.",
                },
                "color": {
                    "type": "integer",
                    "enum": [1, 2],
                    "description": "A paint colour.",
                    "default": 1,
                },
            },
            "required": ["unit"],
        },
    ),
    (
        collections,
        "Collections of values.",
        {
            **OBJECT,
            "properties": {
                "tags": {"type": "array", "items": {"type": "string"}},
                "scores": {"type": "object", "additionalProperties": {"type": "number"}},
                "grid": {
                    "type": "array",
                    "items": {"type": "array", "items": {"type": "integer"}},
                    "default": [],
                },
            },
            "required": ["tags", "scores"],
        },
    ),
    (
        tuples_and_sets,
        "Tuples and sets.",
        {
            **OBJECT,
            "properties": {
                "point": {
                    "type": "array",
                    "prefixItems": [{"type": "number"}, {"type": "number"}],
                    "minItems": 2,
                    "maxItems": 2,
                },
                "ids": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
                "rest": {"type": "array", "items": {"type": "integer"}, "default": []},
            },
            "required": ["point", "ids"],
        },
    ),
    (
        typed_dict,
        "Use a TypedDict.",
        {
            **OBJECT,
            "properties": {
                "address": {
                    "type": "object",
                    "additionalProperties": False,
                    "description": "Where to deliver.",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                },
            },
            "required": ["address"],
        },
    ),
    (
        dataclass_param,
        "Use a dataclass.",
        {
            **OBJECT,
            "properties": {
                "item": {
                    "type": "object",
                    "additionalProperties": False,
                    "description": "One line of an order.",
                    "properties": {
                        "sku": {"type": "string"},
                        "quantity": {"type": "integer", "default": 1},
                    },
                    "required": ["sku"],
                },
                "note": {"type": "string", "default": ""},
            },
            "required": ["item"],
        },
    ),
    (
        nested_models,
        "Place an order.",
        {
            **OBJECT,
            "properties": {
                "order": {
                    "type": "object",
                    "description": "The order to place.",
                    "properties": {
                        "customer": {
                            "type": "object",
                            "description": "Who placed the order.",
                            "properties": {
                                "name": {"type": "string"},
                                "email": {
                                    "anyOf": [{"type": "string"}, {"type": "null"}],
                                    "default": None,
                                },
                            },
                            "required": ["name"],
                        },
                        "items": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "description": "One line of an order.",
                                "properties": {
                                    "sku": {"type": "string"},
                                    "quantity": {"type": "integer", "default": 1},
                                },
                                "required": ["sku"],
                            },
                        },
                        "shipping": {
                            "anyOf": [
                                {
                                    "type": "object",
                                    "description": "A postal address.",
                                    "properties": {
                                        "street": {"type": "string"},
                                        "city": {"type": "string"},
                                    },
                                },
                                {"type": "null"},
                            ],
                            "default": None,
                        },
                    },
                    "required": ["customer", "items"],
                },
                "notify": {"type": "boolean", "default": False, "description": "Email the customer."},
            },
            "required": ["order"],
        },
    ),
    (
        optional_model,
        "An optional nested model.",
        {
            **OBJECT,
            "properties": {
                "customer": {
                    "anyOf": [
                        {
                            "type": "object",
                            "description": "Who placed the order.",
                            "properties": {
                                "name": {"type": "string"},
                                "email": {
                                    "anyOf": [{"type": "string"}, {"type": "null"}],
                                    "default": None,
                                },
                            },
                            "required": ["name"],
                        },
                        {"type": "null"},
                    ],
                    "default": None,
                },
            },
        },
    ),
    (
        annotated_constraints,
        "Constrained numbers.",
        {
            **OBJECT,
            "properties": {
                "days": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 7,
                    "description": "Days ahead, 1 to 7.",
                },
                "ratio": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "exclusiveMaximum": 1,
                    "default": 0.5,
                    "description": "A fraction.",
                },
            },
            "required": ["days"],
        },
    ),
    (
        string_constraints,
        "Constrained strings.",
        {
            **OBJECT,
            "properties": {
                "code": {"type": "string", "minLength": 2, "maxLength": 3, "pattern": "^[A-Z]+$"},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5, "default": []},
            },
            "required": ["code"],
        },
    ),
    (
        get_weather,
        "Get the current weather for a city.",
        {
            "type": "object",
            "description": "Arguments of get_weather.",
            "properties": {
                "city": {"type": "string", "description": "The city to look up"},
                "unit": {
                    "anyOf": [{"type": "string"}, {"type": "null"}],
                    "default": None,
                    "description": "Temperature unit (celsius or fahrenheit)",
                },
            },
            "required": ["city"],
        },
    ),
    (
        search_docs,
        "Search the user's saved documents.",
        {
            "type": "object",
            "description": "Arguments of get_weather.",
            "properties": {
                "city": {"type": "string", "description": "The city to look up"},
                "unit": {
                    "anyOf": [{"type": "string"}, {"type": "null"}],
                    "default": None,
                    "description": "Temperature unit (celsius or fahrenheit)",
                },
            },
            "required": ["city"],
        },
    ),
    (
        context_by_annotation,
        "The context is found by its type.",
        {**OBJECT, "properties": {"query": {"type": "string"}}, "required": ["query"]},
    ),
    (
        context_by_name,
        "The context is found by its name.",
        {**OBJECT, "properties": {"query": {"type": "string"}}, "required": ["query"]},
    ),
    (
        optional_context,
        "An optional context is found by its type too.",
        {**OBJECT, "properties": {"query": {"type": "string"}}, "required": ["query"]},
    ),
    (
        unannotated,
        "No annotations at all.",
        {
            **OBJECT,
            "properties": {
                "x": {},
                "y": {"type": "integer", "default": 3},
                "z": {"type": "string", "default": "a"},
                "w": {"default": None},
                "f": {"type": "number", "default": 1.5},
            },
            "required": ["x"],
        },
    ),
    (
        unions,
        "A union and a date.",
        {
            **OBJECT,
            "properties": {
                "value": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                "when": {
                    "anyOf": [{"type": "string", "format": "date"}, {"type": "null"}],
                    "default": None,
                },
            },
            "required": ["value"],
        },
    ),
    (
        awkward_names,
        "Names that are JSON schema keywords or pydantic attributes.",
        {
            **OBJECT,
            "properties": {
                "title": {"type": "string"},
                "json": {"type": "integer", "default": 0},
                "_id": {"type": "string", "default": ""},
                "model_config": {"type": "string", "default": ""},
            },
            "required": ["title"],
        },
    ),
    (
        async_tool,
        "An async tool with a keyword-only parameter.",
        {
            **OBJECT,
            "properties": {
                "url": {"type": "string"},
                "timeout": {"type": "number", "default": 10.0},
            },
            "required": ["url"],
        },
    ),
    (no_docstring, "", {**OBJECT, "properties": {"x": {"type": "integer"}}, "required": ["x"]}),
    (
        future.ship,
        "Ship a parcel.",
        {
            **OBJECT,
            "properties": {
                "parcel": {
                    "type": "object",
                    "additionalProperties": False,
                    "description": "What to ship.",
                    "properties": {
                        "weight_kg": {"type": "number"},
                        "fragile": {"type": "boolean", "default": False},
                    },
                    "required": ["weight_kg"],
                },
                "destination": {
                    "type": "object",
                    "description": "Where to ship it.",
                    "properties": {
                        "city": {"type": "string", "description": "Destination city."},
                        "postcode": {
                            "anyOf": [{"type": "string"}, {"type": "null"}],
                            "default": None,
                        },
                    },
                    "required": ["city"],
                },
                "size": {
                    "anyOf": [
                        {
                            "type": "object",
                            "additionalProperties": False,
                            "description": "Box size in centimetres.",
                            "properties": {
                                "width": {"type": "number"},
                                "height": {"type": "number"},
                            },
                            "required": ["width", "height"],
                        },
                        {"type": "null"},
                    ],
                    "default": None,
                    "description": "Box size, if known.",
                },
                "speed": {
                    "type": "string",
                    "enum": ["standard", "express"],
                    "default": "standard",
                    "description": "Delivery speed.",
                },
            },
            "required": ["parcel", "destination"],
        },
    ),
    (
        future.schedule,
        "Schedule a pickup.",
        {
            **OBJECT,
            "properties": {
                "when": {"type": "string", "format": "date", "description": "The pickup day."},
                "note": {
                    "anyOf": [{"type": "string"}, {"type": "null"}],
                    "default": None,
                    "description": "Instructions for the driver.",
                },
            },
            "required": ["when"],
        },
    ),
    (
        future.lookup,
        "Look up cached data.",
        {
            "type": "object",
            "properties": {
                "key": {"type": "string", "description": "Cache key."},
                "ttl": {
                    "type": "integer",
                    "default": 60,
                    "minimum": 0,
                    "description": "Seconds to keep the entry.",
                },
            },
            "required": ["key"],
        },
    ),
    (
        future.tally,
        "Total the counts.",
        {
            **OBJECT,
            "properties": {
                "counts": {
                    "type": "object",
                    "additionalProperties": {"type": "integer"},
                    "description": "Count per label.",
                },
                "labels": {
                    "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
                    "default": None,
                    "description": "Only these labels.",
                },
            },
            "required": ["counts"],
        },
    ),
]


def _walk_keys(node: Any) -> set[str]:
    """Every key of every dict in a JSON document (property names included)."""
    if isinstance(node, dict):
        return set(node).union(*(_walk_keys(value) for value in node.values()))
    if isinstance(node, list):
        return set().union(*(_walk_keys(value) for value in node))
    return set()


@pytest.mark.parametrize(("fn", "description", "expected"), CORPUS, ids=[fn.__name__ for fn, _, _ in CORPUS])
def test_corpus_schema(fn: Callable[..., Any], description: str, expected: dict[str, Any]) -> None:
    schema = function_schema(fn)
    assert schema.name == fn.__name__
    assert schema.description == description
    assert schema.parameters == expected
    assert not {"$ref", "$defs", "definitions"} & _walk_keys(schema.parameters)


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 25


@pytest.mark.parametrize(
    ("fn", "context_param"),
    [
        (search_docs, "ctx"),
        (context_by_annotation, "context"),
        (context_by_name, "tool_context"),
        (optional_context, "session"),
        (future.ship, "ctx"),
        (future.schedule, "context"),
        (future.lookup, "tool_context"),
        (google_style, None),
    ],
)
def test_context_param(fn: Callable[..., Any], context_param: str | None) -> None:
    assert function_schema(fn).context_param == context_param


def test_the_real_tool_context() -> None:
    context = pytest.importorskip("adk_notebook.core.context")

    def find(query: str, session: context.ToolContext) -> str:  # type: ignore[name-defined]  # imported at run time
        return query

    assert function_schema(find).context_param == "session"


def test_context_imported_only_for_type_checking() -> None:
    """`ToolContext` imported under `if TYPE_CHECKING:` still resolves."""
    pytest.importorskip("adk_notebook.core.context")
    namespace: dict[str, Any] = {}
    exec("def find(query: str, session: 'ToolContext') -> str:\n    return query", namespace)  # noqa: S102  # a function whose annotation is a string
    assert function_schema(namespace["find"]).context_param == "session"


def test_name_and_description_overrides() -> None:
    schema = function_schema(google_style, name="weather_forecast-v2", description="Forecast.")
    assert (schema.name, schema.description) == ("weather_forecast-v2", "Forecast.")


# --- validate() -------------------------------------------------------------------------------


def _errors(schema: FunctionSchema, args: Any) -> list[str]:
    with pytest.raises(ToolArgumentsError) as info:
        schema.validate(args)
    assert info.value.message == "; ".join(info.value.errors)
    return info.value.errors


def test_validate_coerces_and_fills_defaults() -> None:
    schema = function_schema(google_style)
    assert schema.validate({"city": "Paris", "days": "5"}) == {
        "city": "Paris",
        "days": 5,
        "metric": True,
    }
    assert function_schema(numpy_style).validate({"a": "1.5", "b": 2}) == {
        "a": 1.5,
        "b": 2.0,
        "precision": 2,
    }


def test_validate_returns_real_python_types() -> None:
    kwargs = function_schema(nested_models).validate(
        {"order": {"customer": {"name": "Ada"}, "items": [{"sku": "A1", "quantity": "2"}]}}
    )
    order = kwargs["order"]
    assert isinstance(order, Order) and isinstance(order.customer, Customer)
    assert order.items == [LineItem("A1", 2)] and kwargs["notify"] is False

    assert function_schema(enums).validate({"unit": "celsius", "color": 2}) == {
        "unit": Unit.CELSIUS,
        "color": Color.GREEN,
    }
    assert function_schema(tuples_and_sets).validate({"point": [1, 2], "ids": [3, 3, 4]}) == {
        "point": (1.0, 2.0),
        "ids": {3, 4},
        "rest": (),
    }
    assert function_schema(typed_dict).validate({"address": {"city": "Oslo"}}) == {"address": {"city": "Oslo"}}
    kwargs = function_schema(future.schedule).validate({"when": "2025-03-01"})
    assert kwargs == {"when": datetime.date(2025, 3, 1), "note": None}
    assert future.schedule(**kwargs, context=future.ToolContext()) == "pickup on 2025-03-01"


def test_validate_keeps_awkward_names() -> None:
    kwargs = function_schema(awkward_names).validate({"title": "t", "_id": "x", "model_config": "m"})
    assert kwargs == {"title": "t", "json": 0, "_id": "x", "model_config": "m"}


def test_validate_unannotated_accepts_anything() -> None:
    assert function_schema(unannotated).validate({"x": [1, {"a": None}], "y": "4"}) == {
        "x": [1, {"a": None}],
        "y": 4,
        "z": "a",
        "w": None,
        "f": 1.5,
    }


def test_validate_seed_style_passes_the_model() -> None:
    schema = function_schema(get_weather)
    assert schema.validate({"city": "Tokyo"}) == {"args": WeatherArgs(city="Tokyo")}
    assert _errors(schema, {"unit": "celsius"}) == ["'city' is required"]
    ctx_schema = function_schema(future.lookup)
    assert ctx_schema.validate({"key": "k"}) == {"args": future.LookupArgs(key="k", ttl=60)}
    assert _errors(ctx_schema, {"key": "k", "ttl": -1}) == ["'ttl' must be greater than or equal to 0 (got -1)"]


def test_validate_excludes_and_rejects_the_context() -> None:
    schema = function_schema(context_by_annotation)
    assert schema.validate({"query": "q"}) == {"query": "q"}
    assert _errors(schema, {"query": "q", "context": {}}) == ["unexpected argument 'context'"]


def test_missing_and_unexpected_arguments() -> None:
    schema = function_schema(annotated_constraints)
    assert _errors(schema, {"days": 10, "foo": 1}) == [
        "'days' must be less than or equal to 7 (got 10)",
        "unexpected argument 'foo'",
    ]
    assert _errors(schema, {"foo": 1}) == ["'days' is required", "unexpected argument 'foo'"]
    assert _exc(schema, {"ratio": 0.5}).message == "'days' is required"


def _exc(schema: FunctionSchema, args: Any) -> ToolArgumentsError:
    with pytest.raises(ToolArgumentsError) as info:
        schema.validate(args)
    return info.value


@pytest.mark.parametrize(
    ("fn", "args", "errors"),
    [
        (annotated_constraints, {"days": 0}, ["'days' must be greater than or equal to 1 (got 0)"]),
        (annotated_constraints, {"days": 2, "ratio": 1}, ["'ratio' must be less than 1 (got 1)"]),
        (annotated_constraints, {"days": 2, "ratio": 0}, ["'ratio' must be greater than 0 (got 0)"]),
        (
            annotated_constraints,
            {"days": "two"},
            ["'days' must be a valid integer, unable to parse string as an integer (got \"two\")"],
        ),
        (string_constraints, {"code": "A"}, ["'code' must have at least 2 characters (got \"A\")"]),
        (
            string_constraints,
            {"code": "ABCD"},
            ["'code' must have at most 3 characters (got \"ABCD\")"],
        ),
        (
            string_constraints,
            {"code": "ab"},
            ["'code' must match pattern '^[A-Z]+$' (got \"ab\")"],
        ),
        (
            string_constraints,
            {"code": "AB", "tags": ["t"] * 6},
            ['\'tags\' must have at most 5 items after validation, not 6 (got ["t", "t", "t", "t", "t", "t"])'],
        ),
        (literals, {"mode": "medium"}, ["'mode' must be 'fast' or 'slow' (got \"medium\")"]),
        (literals, {"mode": "fast", "level": 4}, ["'level' must be 1, 2 or 3 (got 4)"]),
        (enums, {"unit": "kelvin"}, ["'unit' must be 'celsius' or 'fahrenheit' (got \"kelvin\")"]),
        (collections, {"tags": "a", "scores": {}}, ["'tags' must be a valid list (got \"a\")"]),
        (
            collections,
            {"tags": [], "scores": {"a": "high"}},
            ["'scores.a' must be a valid number, unable to parse string as a number (got \"high\")"],
        ),
        (
            nested_models,
            {"order": {"customer": {"name": "Ada"}, "items": [{"sku": "A1", "quantity": "x"}]}},
            ["'order.items[0].quantity' must be a valid integer, unable to parse string as an integer (got \"x\")"],
        ),
        (nested_models, {"order": "big"}, ["'order' must be an object (got \"big\")"]),
        (dataclass_param, {"item": 5}, ["'item' must be an object (got 5)"]),
        (
            nested_models,
            {"order": {"customer": {}, "items": []}},
            ["'order.customer.name' is required"],
        ),
        (google_style, ["Paris"], ['the arguments must be an object (got ["Paris"])']),
        (
            google_style,
            {"city": "x" * 50, "days": "y" * 50},
            ["'days' must be a valid integer, unable to parse string as an integer"],
        ),
    ],
)
def test_constraint_violations_name_the_parameter(fn: Callable[..., Any], args: Any, errors: list[str]) -> None:
    assert _errors(function_schema(fn), args) == errors


def test_arguments_error_is_a_value_error() -> None:
    assert isinstance(_exc(function_schema(google_style), {}), ValueError)


def test_arguments_error_from_any_validation_error() -> None:
    with pytest.raises(ValidationError) as info:
        Customer.model_validate({"email": 3})
    error = ToolArgumentsError.from_validation_error(info.value)
    assert error.errors == ["'name' is required", "'email' must be a valid string (got 3)"]


# --- decoration-time errors -------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["<lambda>", "has space", "1st", "x" * 65, "semi;colon", "", "trailing\n", "dotted.name"]
)
def test_bad_names(name: str) -> None:
    with pytest.raises(AdkError, match="must start with a letter or underscore"):
        function_schema(google_style, name=name)


def test_lambda_needs_a_name() -> None:
    with pytest.raises(AdkError, match=r"'<lambda>'.*pass name="):
        function_schema(lambda x: x)
    assert function_schema(lambda x: x, name="identity").parameters["required"] == ["x"]


def test_longest_name_is_accepted() -> None:
    assert function_schema(google_style, name="a" * 64).name == "a" * 64


def test_star_args_are_rejected() -> None:
    def many(*values: int) -> int:
        return sum(values)

    def options(city: str, **extra: str) -> str:
        return city

    with pytest.raises(TypeError, match=r"many\(\*values\).*replace \*values with a list"):
        function_schema(many)
    with pytest.raises(TypeError, match=r"options\(\*\*extra\).*named parameters"):
        function_schema(options)


def test_positional_only_is_rejected() -> None:
    def divide(a: float, b: float, /) -> float:
        return a / b

    with pytest.raises(TypeError, match="'a' is positional-only"):
        function_schema(divide)


def test_unresolvable_annotation() -> None:
    def broken(x: "Missing") -> None:  # type: ignore[name-defined]  # noqa: F821  # unresolvable on purpose
        pass

    with pytest.raises(TypeError, match="cannot resolve the type hints of .*broken.*Missing"):
        function_schema(broken)


# --- typing.TypedDict (pydantic reads it only from Python 3.12 on) -----------------------------
class PlainAddress(typing.TypedDict, total=False):
    """A postal address."""

    street: str
    city: str


class PlainLine(typing.TypedDict):
    """One line of an order."""

    sku: str
    quantity: typing.NotRequired[int]


class PlainOrder(typing.TypedDict, total=False):
    lines: typing.Required[list[PlainLine]]
    ship_to: PlainAddress


def test_typing_typed_dict_gives_the_same_schema_as_typing_extensions() -> None:
    def typed_dict(address: PlainAddress):
        """Use a TypedDict.

        Args:
            address: Where to deliver.
        """

    expected = next(schema for fn, _, schema in CORPUS if fn.__name__ == "typed_dict")
    assert function_schema(typed_dict).parameters == expected


def test_typing_typed_dict_nested_optional_and_in_collections() -> None:
    def place(
        order: PlainOrder,
        extra: list[PlainLine] | None = None,
        by_sku: Annotated[dict[str, PlainLine], Field(description="Lines by SKU.")] = {},  # noqa: B006  # the default under test
    ):
        """Place an order."""

    schema = function_schema(place)
    line = {
        "type": "object",
        "additionalProperties": False,
        "description": "One line of an order.",
        "properties": {"sku": {"type": "string"}, "quantity": {"type": "integer"}},
        "required": ["sku"],
    }
    order = schema.parameters["properties"]["order"]
    assert order["required"] == ["lines"] and order["properties"]["lines"] == {"type": "array", "items": line}
    assert order["properties"]["ship_to"]["properties"] == {"street": {"type": "string"}, "city": {"type": "string"}}
    assert schema.parameters["properties"]["extra"]["anyOf"] == [{"type": "array", "items": line}, {"type": "null"}]
    assert schema.parameters["properties"]["by_sku"]["additionalProperties"] == line
    args = schema.validate({"order": {"lines": [{"sku": "a", "quantity": "2"}]}, "by_sku": {"b": {"sku": "b"}}})
    assert args == {"order": {"lines": [{"sku": "a", "quantity": 2}]}, "extra": None, "by_sku": {"b": {"sku": "b"}}}
    assert type(args["order"]) is dict
    with pytest.raises(ToolArgumentsError, match=r"'order.lines\[0\].sku' is required"):
        schema.validate({"order": {"lines": [{}]}})


def test_typing_typed_dict_where_it_cannot_be_converted_is_one_clear_line() -> None:
    @dataclass
    class Parcel:
        to: PlainAddress

    def send(parcel: Parcel):
        """Send a parcel."""

    if sys.version_info >= (3, 12):
        assert function_schema(send).parameters["properties"]["parcel"]["properties"]["to"]["type"] == "object"
        return
    with pytest.raises(
        TypeError, match=r"^send: .*typing\.TypedDict.* write `from typing_extensions import TypedDict`$"
    ):
        function_schema(send)


# --- model_json_schema and inline_refs --------------------------------------------------------


def test_model_json_schema_of_a_model() -> None:
    assert model_json_schema(Customer) == {
        "type": "object",
        "description": "Who placed the order.",
        "properties": {
            "name": {"type": "string"},
            "email": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        },
        "required": ["name"],
    }


def test_model_json_schema_rejects_other_values() -> None:
    with pytest.raises(TypeError, match="pydantic model class or a JSON schema dict"):
        model_json_schema(Customer(name="x"))  # type: ignore[arg-type]  # the wrong kind, on purpose


def test_inline_refs_nested() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Order",
        "type": "object",
        "properties": {
            "title": {"type": "string", "title": "Title"},
            "billing": {"$ref": "#/$defs/Address", "description": "Billing address."},
            "lines": {"type": "array", "items": {"$ref": "#/$defs/Line"}},
            "legacy": {"allOf": [{"$ref": "#/definitions/Old"}], "default": None},
        },
        "$defs": {
            "Address": {
                "title": "Address",
                "description": "An address.",
                "type": "object",
                "properties": {"city": {"type": "string"}},
            },
            "Line": {
                "type": "object",
                "properties": {"sku": {"type": "string"}, "ship_to": {"$ref": "#/$defs/Address"}},
            },
        },
        "definitions": {"Old": {"type": "string"}},
    }
    address = {
        "title": "Address",
        "description": "An address.",
        "type": "object",
        "properties": {"city": {"type": "string"}},
    }
    assert inline_refs(schema) == {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Order",
        "type": "object",
        "properties": {
            "title": {"type": "string", "title": "Title"},
            "billing": {**address, "description": "Billing address."},
            "lines": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"sku": {"type": "string"}, "ship_to": address},
                },
            },
            "legacy": {"type": "string", "default": None},
        },
    }
    without_titles = model_json_schema(schema)
    assert without_titles["properties"]["title"] == {"type": "string"}
    assert "title" not in without_titles and "title" not in without_titles["properties"]["billing"]


def test_inline_refs_top_level_ref() -> None:
    schema = {"$ref": "#/$defs/A", "$defs": {"A": {"type": "integer"}}}
    assert inline_refs(schema) == {"type": "integer"}


def test_inline_refs_reports_bad_references() -> None:
    with pytest.raises(ValueError, match="only local references"):
        inline_refs({"$ref": "https://example.com/schema.json"})
    with pytest.raises(ValueError, match="no such definition"):
        inline_refs({"$ref": "#/$defs/Nope"})


def test_recursive_model_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="'Node' refers to itself"):
        model_json_schema(Node)

    def walk(tree: Node, depth: int = 1) -> int:
        return depth

    with pytest.raises(ValueError, match="'Node' refers to itself"):
        function_schema(walk)


def test_mutually_recursive_definitions() -> None:
    schema = {
        "$ref": "#/$defs/A",
        "$defs": {
            "A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}},
            "B": {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}},
        },
    }
    with pytest.raises(ValueError, match="'A' refers to itself"):
        inline_refs(schema)
    with pytest.raises(ValueError, match="refers to itself"):
        inline_refs({"type": "object", "properties": {"again": {"$ref": "#"}}})


# --- gemini_schema ----------------------------------------------------------------------------


def test_gemini_schema_of_a_function() -> None:
    assert gemini_schema(function_schema(future.ship).parameters) == {
        "type": "object",
        "properties": {
            "parcel": {
                "type": "object",
                "description": "What to ship.",
                "properties": {
                    "weight_kg": {"type": "number"},
                    "fragile": {"type": "boolean", "default": False},
                },
                "required": ["weight_kg"],
            },
            "destination": {
                "type": "object",
                "description": "Where to ship it.",
                "properties": {
                    "city": {"type": "string", "description": "Destination city."},
                    "postcode": {"type": "string", "nullable": True, "default": None},
                },
                "required": ["city"],
            },
            "size": {
                "type": "object",
                "nullable": True,
                "default": None,
                "description": "Box size, if known.",
                "properties": {"width": {"type": "number"}, "height": {"type": "number"}},
                "required": ["width", "height"],
            },
            "speed": {
                "type": "string",
                "enum": ["standard", "express"],
                "default": "standard",
                "description": "Delivery speed.",
            },
        },
        "required": ["parcel", "destination"],
    }


def test_gemini_schema_conversions() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Everything",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "title": {"type": "string", "title": "Title", "examples": ["a"]},
            "only": {"const": "x", "type": "string"},
            "level": {"enum": [1, 2, 3], "type": "integer", "description": "Level."},
            "color": {"enum": [1, 2], "type": "integer"},
            "url": {"type": "string", "format": "uri"},
            "when": {"type": "string", "format": "date-time"},
            "big": {"type": "integer", "format": "int64", "exclusiveMinimum": 0},
            "maybe": {"type": ["integer", "null"]},
            "pet": {"oneOf": [{"$ref": "#/$defs/Cat"}, {"type": "string"}], "discriminator": {}},
            "pair": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}]},
            "mixed": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "string"}]},
            "either": {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]},
            "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
        },
        "$defs": {"Cat": {"type": "object", "properties": {"meows": {"type": "boolean"}}}},
    }
    assert gemini_schema(schema) == {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "only": {"enum": ["x"], "type": "string"},
            "level": {"type": "integer", "description": "Level. One of: 1, 2, 3."},
            "color": {"type": "integer", "description": "One of: 1, 2."},
            "url": {"type": "string"},
            "when": {"type": "string", "format": "date-time"},
            "big": {"type": "integer", "format": "int64"},
            "maybe": {"type": "integer", "nullable": True},
            "pet": {
                "anyOf": [
                    {"type": "object", "properties": {"meows": {"type": "boolean"}}},
                    {"type": "string"},
                ]
            },
            "pair": {"type": "array", "items": {"type": "number"}},
            "mixed": {"type": "array", "items": {"anyOf": [{"type": "number"}, {"type": "string"}]}},
            "either": {"anyOf": [{"type": "integer"}, {"type": "string"}], "nullable": True},
            "counts": {"type": "object"},
        },
    }


def test_gemini_schema_keeps_nested_nullable_descriptions() -> None:
    parameters = function_schema(future.tally).parameters
    assert gemini_schema(parameters)["properties"]["labels"] == {
        "type": "array",
        "items": {"type": "string"},
        "nullable": True,
        "default": None,
        "description": "Only these labels.",
    }


# --- parse_docstring --------------------------------------------------------------------------


def test_parse_docstring_google() -> None:
    assert parse_docstring(google_style.__doc__) == Docstring(
        summary="Forecast the weather.",
        description="Forecast the weather.\n\nLooks the city up first, then asks\nthe weather service.",
        params={
            "city": 'The city to look up, e.g. "Paris".',
            "days": "How many days ahead.",
            "metric": "Use metric units.",
        },
        returns="dict: The forecast.",
    )


def test_parse_docstring_numpy_and_sphinx_returns() -> None:
    assert parse_docstring(numpy_style.__doc__).returns == "The quotient."
    assert parse_docstring(sphinx_style.__doc__).returns == "The hits."
    assert parse_docstring(future.tally.__doc__).returns == "The total."


def test_parse_docstring_edge_cases() -> None:
    assert parse_docstring(None) == Docstring()
    assert parse_docstring("   ") == Docstring()
    wrapped = parse_docstring("A summary that\n    wraps.\n\n    Body.")
    assert (wrapped.summary, wrapped.description) == (
        "A summary that wraps.",
        "A summary that\nwraps.\n\nBody.",
    )
    numpy = parse_docstring("Add.\n\nParameters\n----------\nx, y : int\n    Terms.\n*rest : int\n    More.")
    assert numpy.params == {"x": "Terms.", "y": "Terms.", "rest": "More."}
    google = parse_docstring("Do it.\n\nArgs:\n    **opts (dict): Options.\n\nRaises:\n    ValueError: never.")
    assert google.params == {"opts": "Options."}
