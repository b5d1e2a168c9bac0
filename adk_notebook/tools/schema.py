"""JSON schemas for tools, built from plain Python functions, and argument validation.

`function_schema` reads a function once, at decoration time: its signature, type hints and
docstring become one pydantic model. The model gives the JSON schema the LLM sees and a
compiled validator that every tool call goes through, so a call costs one validator run.
Schemas are self-contained (no `$ref`) because several providers do not resolve references;
the provider dialects (`gemini_schema`, ...) are in `tools.dialects`.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import inspect
import json
import re
import sys
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, PydanticUserError, TypeAdapter, ValidationError, create_model
from pydantic.fields import FieldInfo
from pydantic_core import SchemaValidator

from ..core.context import ToolContext
from ..core.error_codes import ErrorCode
from ..core.errors import AdkError
from .dialects import drop_titles, gemini_schema, inline_refs
from .docstrings import parse_docstring
from .names import check_tool_name
from .schema_check import JsonSchemaCheck

if typing.TYPE_CHECKING:
    from pydantic.plugin._schema_validator import PluggableSchemaValidator  # what __pydantic_validator__ may be

__all__ = [
    "FunctionSchema",
    "ToolArgumentsError",
    "args_validator",
    "function_schema",
    "gemini_schema",  # re-exported: tools.dialects has the provider dialects
    "inline_refs",
    "model_json_schema",
]

_CONTEXT_NAMES = frozenset({"ctx", "tool_context"})
_CONTEXT_TYPES = frozenset({"ToolContext", "CallbackContext"})
_DEFAULT_TYPES = (str, int, float, bool, list, dict)
_FORBID_EXTRA = ConfigDict(extra="forbid")


class ToolArgumentsError(AdkError, ValueError):
    """The arguments an LLM sent do not fit the tool's schema.

    `message` is written for the model to read and correct its call; `errors` holds one
    line per problem.
    """

    def __init__(self, errors: list[str]) -> None:
        super().__init__("tool", "invalid_input", ErrorCode.INVALID_ARGUMENTS, "; ".join(errors))
        self.errors = errors

    @classmethod
    def from_validation_error(cls, exc: ValidationError) -> ToolArgumentsError:
        """Pydantic's errors rewritten as short sentences that name each parameter."""
        return cls([_describe(error) for error in exc.errors(include_url=False)])


@dataclass(frozen=True, slots=True)
class FunctionSchema:
    """What a provider needs to declare a tool, and the validator for its calls."""

    name: str
    description: str
    parameters: dict[str, Any]
    context_param: str | None
    _validator: SchemaValidator | PluggableSchemaValidator = field(repr=False, compare=False)
    # (model field, parameter) pairs; empty when the one parameter is itself the model.
    _fields: tuple[tuple[str, str], ...] = field(repr=False, compare=False)
    _model_param: str | None = field(repr=False, compare=False)

    def validate(self, args: dict[str, Any]) -> dict[str, Any]:
        """Check and coerce the model's arguments into keyword arguments for the function.

        Raises:
            ToolArgumentsError: naming each wrong, missing or unexpected argument.
        """
        try:
            model = self._validator.validate_python(args)
        except ValidationError as exc:
            raise ToolArgumentsError.from_validation_error(exc) from None
        if self._model_param is not None:
            return {self._model_param: model}
        values = model.__dict__
        return {param: values[name] for name, param in self._fields}


def function_schema(
    fn: Callable[..., Any], *, name: str | None = None, description: str | None = None
) -> FunctionSchema:
    """Build the schema and validator of a tool function from its signature and docstring.

    Raises:
        AdkError: the name is not one providers accept.
        TypeError: the function takes `*args`/`**kwargs` or positional-only parameters, or a
            parameter of a type with no JSON schema (a callable, a plain class).
    """
    name = check_tool_name(fn.__name__ if name is None else name)
    doc = parse_docstring(fn.__doc__)
    hints = _type_hints(fn)
    context_param: str | None = None
    params: list[inspect.Parameter] = []
    for param in inspect.signature(fn).parameters.values():
        _check_kind(fn, param)
        if param.name in _CONTEXT_NAMES or _is_context_type(hints.get(param.name)):
            context_param = param.name
        else:
            params.append(param)
    model_param = _model_param(params, hints)
    try:
        if model_param is not None:
            model: type[BaseModel] = hints[model_param]
            pairs: tuple[tuple[str, str], ...] = ()
        else:
            model, pairs = _build_model(name, params, hints, doc.params)
        parameters = _schema_of(model)
    except PydanticUserError as exc:
        hinted = {p.name: hints.get(p.name, _type_of_default(p.default)) for p in params}
        raise _unsendable(fn.__qualname__, "parameter", hinted, exc) from None
    return FunctionSchema(
        name=name,
        description=doc.description if description is None else description,
        parameters=parameters,
        context_param=context_param,
        _validator=model.__pydantic_validator__,
        _fields=pairs,
        _model_param=model_param,
    )


def args_validator(
    schema: type[BaseModel] | dict[str, Any], json_schema: dict[str, Any]
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The check `FunctionTool.with_parameters_schema` runs before its handler.

    A pydantic model validates (and fills defaults); a JSON-schema dict is checked with
    jsonschema (`tools.schema_check`). Either way a rejected call raises `ToolArgumentsError`
    for the model.

    Raises:
        AdkError: `invalid_schema`, the JSON-schema dict is not valid JSON Schema.
    """
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        model = schema

        def validate_model(args: dict[str, Any]) -> dict[str, Any]:
            try:
                return model.model_validate(args).model_dump()
            except ValidationError as exc:
                raise ToolArgumentsError.from_validation_error(exc) from None

        return validate_model

    check = JsonSchemaCheck(json_schema)

    def validate_dict(args: dict[str, Any]) -> dict[str, Any]:
        problems = check.problems(args)
        if problems:
            raise ToolArgumentsError(problems)
        return args

    return validate_dict


def model_json_schema(model: type[BaseModel] | dict[str, Any]) -> dict[str, Any]:
    """A self-contained JSON schema (references inlined, titles dropped) of a model or schema."""
    if isinstance(model, dict):
        schema = model
    elif isinstance(model, type) and issubclass(model, BaseModel):
        try:
            return _schema_of(model)
        except PydanticUserError as exc:
            fields = {name: info.annotation for name, info in model.model_fields.items()}
            raise _unsendable(model.__qualname__, "field", fields, exc) from None
    else:
        raise TypeError(f"expected a pydantic model class or a JSON schema dict, got {model!r}")
    return drop_titles(inline_refs(schema))


def _schema_of(model: type[BaseModel]) -> dict[str, Any]:
    return drop_titles(inline_refs(model.model_json_schema()))


def _type_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """Resolved annotations; `ToolContext` resolves even when imported under TYPE_CHECKING."""
    try:
        return typing.get_type_hints(fn, localns={"ToolContext": ToolContext}, include_extras=True)
    except NameError as exc:
        raise TypeError(f"cannot resolve the type hints of {fn.__qualname__}: {exc}") from exc


def _check_kind(fn: Callable[..., Any], param: inspect.Parameter) -> None:
    if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
        stars = "*" if param.kind is param.VAR_POSITIONAL else "**"
        raise TypeError(
            f"{fn.__qualname__}({stars}{param.name}): tools need named parameters the model can "
            f"fill; replace {stars}{param.name} with a list or dict parameter"
        )
    if param.kind is param.POSITIONAL_ONLY:
        raise TypeError(
            f"{fn.__qualname__}: parameter {param.name!r} is positional-only, but tools are "
            "called with keyword arguments; remove the '/'"
        )


def _unsendable(owner: str, what: str, hints: dict[str, Any], exc: PydanticUserError) -> TypeError:
    """One line for a parameter (or model field) whose type has no JSON schema, so no model can fill it.

    Pydantic's own error is many lines naming its internals (a 220-line traceback in a notebook);
    this names the parameter, the part of its type at fault, and what to use instead.
    """
    for name, hint in hints.items():
        culprit = _without_json_schema(hint)
        if culprit is not None:
            typed = _type_text(hint) + ("" if culprit is hint else f" (with {_type_text(culprit)} in it)")
            return TypeError(
                f"{owner}({name}): {what} {name!r} is typed {typed}, which a model cannot send "
                f"as JSON; use str, int, float, bool, list, dict, a pydantic model, a dataclass, a TypedDict, "
                "an Enum or a Literal (keep objects such as clients or locks outside the tool's parameters)"
            )
    return TypeError(f"{owner}: its {what}s have no JSON schema: {str(exc).splitlines()[0]}")


def _without_json_schema(hint: Any, seen: tuple[Any, ...] = ()) -> Any:
    """The innermost part of `hint` pydantic cannot give a JSON schema for; None when it can.

    `seen`: the types it is inside, so a model that contains itself is looked into once.
    """
    try:
        TypeAdapter(_pydantic_ready(hint)).json_schema()
        return None
    except PydanticUserError:
        pass
    if isinstance(hint, type) and issubclass(hint, BaseModel):
        parts: list[Any] = [info.annotation for info in hint.model_fields.values()]
    elif isinstance(hint, type) and dataclasses.is_dataclass(hint):
        parts = list(typing.get_type_hints(hint).values())
    elif typing.get_origin(hint) is collections.abc.Callable:
        return hint
    else:
        parts = [arg for arg in typing.get_args(hint) if not isinstance(arg, list)]
    inside = (*seen, hint)
    fresh = [part for part in parts if not any(part is outer for outer in inside)]
    culprit = next((c for part in fresh if (c := _without_json_schema(part, inside)) is not None), None)
    if culprit is None and len(fresh) == len(parts):  # no part alone is at fault: the whole is
        return hint
    return culprit


def _type_text(hint: Any) -> str:
    if isinstance(hint, type):
        return hint.__qualname__
    if inspect.isroutine(hint):  # e.g. threading.Lock before Python 3.13
        return f"{hint.__module__}.{hint.__qualname__} (a function, not a type)"
    return re.sub(r"\b(?:\w+\.)+(?=\w)", "", repr(hint))  # list[__main__.Plain] -> list[Plain]


def _is_context_type(hint: Any) -> bool:
    """`ToolContext`, a subclass, or either inside `Optional[...]` / `Annotated[...]`."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType, Annotated):
        return any(_is_context_type(arg) for arg in typing.get_args(hint))
    return isinstance(hint, type) and any(cls.__name__ in _CONTEXT_TYPES for cls in hint.__mro__)


def _model_param(params: list[inspect.Parameter], hints: dict[str, Any]) -> str | None:
    """The seed style: a single parameter typed with a pydantic model is the whole schema."""
    if len(params) != 1:
        return None
    hint = hints.get(params[0].name)
    is_model = isinstance(hint, type) and issubclass(hint, BaseModel)
    return params[0].name if is_model else None


def _build_model(
    name: str, params: list[inspect.Parameter], hints: dict[str, Any], docs: dict[str, str]
) -> tuple[type[BaseModel], tuple[tuple[str, str], ...]]:
    """One model with a field per parameter.

    Fields get neutral names (`p0`, `p1`, ...) and the parameter name as alias, so parameters
    such as `_id`, `json` or `model_config` cannot clash with pydantic's own attributes.
    """
    fields: dict[str, Any] = {}
    for index, param in enumerate(params):
        annotation = _pydantic_ready(hints.get(param.name, _type_of_default(param.default)))
        options: dict[str, Any] = {"alias": param.name}
        if param.default is not param.empty:
            options["default"] = param.default
        if docs.get(param.name) and not _has_description(annotation):
            options["description"] = docs[param.name]
        fields[f"p{index}"] = (annotation, Field(**options))
    try:
        model = create_model(name, __config__=_FORBID_EXTRA, **fields)
    except PydanticUserError as exc:
        if exc.code != "typed-dict-version":
            raise
        raise TypeError(
            f"{name}: pydantic reads typing.TypedDict only from Python 3.12 on, and this one cannot be converted "
            "(it is in a dataclass or model field, or contains itself); write `from typing_extensions import TypedDict`"
        ) from None
    return model, tuple((f"p{index}", param.name) for index, param in enumerate(params))


def _pydantic_ready(annotation: Any) -> Any:
    """`annotation` with each `typing.TypedDict` in it rebuilt as a `typing_extensions` one.

    Pydantic reads `typing.TypedDict` only from Python 3.12 on (on 3.11 it lacks what pydantic
    needs to see which keys are required), so there it gets an equivalent class: same name,
    docstring, keys and required keys. The function still receives a plain dict.
    """
    if sys.version_info >= (3, 12):
        return annotation
    return _rebuild_typed_dicts(annotation, {})


def _rebuild_typed_dicts(hint: Any, made: dict[Any, Any]) -> Any:
    if isinstance(hint, type) and typing.is_typeddict(hint) and type(hint).__module__ == "typing":
        if hint not in made:
            made[hint] = hint  # a TypedDict that contains itself stays as it is (inline_refs refuses it)
            made[hint] = _typing_extensions_twin(hint, made)
        return made[hint]
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is None or not args or origin is typing.Literal:
        return hint
    new = tuple(_rebuild_typed_dicts(arg, made) for arg in args)
    if all(a is b for a, b in zip(new, args, strict=True)):
        return hint
    if origin is Annotated:
        return Annotated[(new[0], *hint.__metadata__)]
    if origin in (typing.Union, types.UnionType):
        return typing.Union[new]  # noqa: UP007  # a tuple of types, not an `X | Y` expression
    return origin[new if len(new) > 1 else new[0]]


def _typing_extensions_twin(typed_dict: Any, made: dict[Any, Any]) -> Any:
    import typing_extensions

    fields = {}
    for key, hint in typing.get_type_hints(typed_dict, include_extras=True).items():
        # A Required/NotRequired written as a string annotation is missed by 3.11's __required_keys__.
        wrap = typing.get_origin(hint)
        if wrap in (typing.Required, typing.NotRequired):
            hint = typing.get_args(hint)[0]
        else:
            wrap = typing.Required if key in typed_dict.__required_keys__ else typing.NotRequired
        fields[key] = wrap[_rebuild_typed_dicts(hint, made)]
    make: Any = typing_extensions.TypedDict  # called with a name known only at run time
    twin = make(typed_dict.__name__, fields)
    twin.__doc__, twin.__module__, twin.__qualname__ = (
        typed_dict.__doc__,
        typed_dict.__module__,
        typed_dict.__qualname__,
    )
    if hasattr(typed_dict, "__pydantic_config__"):
        twin.__pydantic_config__ = typed_dict.__pydantic_config__
    return twin


def _type_of_default(default: Any) -> Any:
    """An unannotated parameter takes the type of a plain default, else accepts anything."""
    return type(default) if type(default) in _DEFAULT_TYPES else Any


def _has_description(annotation: Any) -> bool:
    """Whether `Annotated[..., Field(description=...)]` already describes the parameter."""
    if typing.get_origin(annotation) is not Annotated:
        return False
    return any(isinstance(m, FieldInfo) and m.description for m in annotation.__metadata__)


def _describe(error: Any) -> str:
    """One pydantic error as a short sentence naming the parameter, for the model to act on."""
    path = _path(error["loc"])
    kind = error["type"]
    if kind == "missing":
        return f"{path!r} is required"
    if kind in ("extra_forbidden", "unexpected_keyword_argument"):
        return f"unexpected argument {path!r}"
    subject = repr(path) if path else "the arguments"
    if kind in ("model_type", "model_attributes_type", "dataclass_type", "dict_type"):
        sentence = f"{subject} must be an object"
    else:
        message = re.sub(r"^(Value error|Assertion failed), ", "", error["msg"])
        problem, plain = re.subn(r"^\w+ should\b", "must", message)
        sentence = f"{subject} {problem}" if plain else f"{subject}: {message}"
    got = _short(error["input"])
    return sentence if got is None else f"{sentence} (got {got})"


def _path(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}" if path else str(part)
    return path


def _short(value: Any) -> str | None:
    """The received value, if it is short enough to quote back."""
    if isinstance(value, enum.Enum):
        value = value.value
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):  # RecursionError: hostile nesting
        return None
    return text if len(text) <= 40 else None
