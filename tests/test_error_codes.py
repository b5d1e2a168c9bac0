"""Every error code the package can produce is an `ErrorCode`, documented in docs/errors.md.

The codes are found in the source with `ast`: `code=` keywords, `"code":` keys of error dicts,
defaults and assignments of a variable named `code`, and positional codes passed to AdkError,
its subclasses and the package's helpers that take a `code` parameter.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from adk_notebook import AdkError
from adk_notebook.core.error_codes import HTTP_STATUS_PREFIX, ErrorCode

PACKAGE = Path(__file__).parent.parent / "adk_notebook"
DOCS = Path(__file__).parent.parent / "docs" / "errors.md"
CODE = re.compile(r"^[a-z][a-z0-9_]*$")
# Codes computed at run time, each from a known set: forwarded codes (a parameter or attribute
# that already holds one), a status (http_<status>), Anthropic's error types.
COMPUTED = {
    "code",
    "exc.code",
    "self.code",
    "error['code']",
    "f'http_{status}'",
    "kind",  # models/anthropic.py: its error type when it is one of _ERROR_CATEGORIES' keys
    "str(reply.get('code') or 'local_model_error')",  # the code the local worker sent
}
# Anthropic's error types: produced as `kind` above, so no literal names them.
ANTHROPIC_TYPES = {
    "invalid_request_error",
    "request_too_large",
    "authentication_error",
    "permission_error",
    "billing_error",
    "not_found_error",
    "rate_limit_error",
    "timeout_error",
    "overloaded_error",
    "api_error",
}


class Found:
    def __init__(self) -> None:
        self.codes: dict[str, list[str]] = {}
        self.computed: dict[str, list[str]] = {}

    def add(self, node: ast.expr, where: str, *, literal_only: bool = False) -> None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and CODE.match(node.value):
            self.codes.setdefault(node.value, []).append(where)
        elif isinstance(node, ast.IfExp):
            self.add(node.body, where, literal_only=literal_only)
            self.add(node.orelse, where, literal_only=literal_only)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "ErrorCode":
            self.codes.setdefault(ErrorCode[node.attr].value, []).append(where)
        elif not literal_only:
            self.computed.setdefault(ast.unparse(node), []).append(where)


def code_index(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int | None:
    """Where `code` sits among a function's positional parameters (self / cls not counted)."""
    names = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    if "code" not in names:
        return None
    return names.index("code") - (1 if names[0] in ("self", "cls") else 0)


@cache
def scan() -> Found:
    trees = {path: ast.parse(path.read_text(), str(path)) for path in sorted(PACKAGE.rglob("*.py"))}
    helpers: dict[str, int] = {}  # function or method name -> positional index of `code`
    classes: dict[str, int] = {"AdkError": 2}  # class -> index of `code` in its constructor
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name != "__init__":
                index = code_index(node)
                if index is not None:
                    helpers[node.name] = index
            elif isinstance(node, ast.ClassDef):
                init = next(
                    (n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"),
                    None,
                )
                index = code_index(init) if init is not None else None
                if index is not None:
                    classes[node.name] = index
    # subclasses of AdkError without a constructor of their own
    for tree in trees.values():
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef) or node.name in classes:
                continue
            if any(isinstance(b, ast.Name) and b.id in classes for b in node.bases):
                classes[node.name] = 2
    found = Found()
    for path, tree in trees.items():
        for cls, node in _nodes(tree):
            where = f"{path.relative_to(PACKAGE.parent)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Call):
                for keyword in node.keywords:
                    if keyword.arg == "code":
                        found.add(keyword.value, where)
                index = _positional_index(node, cls, helpers, classes)
                if index is not None and len(node.args) > index:
                    found.add(node.args[index], where, literal_only=True)
            elif isinstance(node, ast.Dict):
                # {"error": ..., "code": ...} (or "message"); not a JSON schema's property named
                # "code", nor the code a provider ran ({"code": ..., "language": ...})
                names = {key.value for key in node.keys if isinstance(key, ast.Constant)}
                if not names & {"error", "message"}:
                    continue
                for key, value in zip(node.keys, node.values, strict=True):
                    if isinstance(key, ast.Constant) and key.value == "code" and not isinstance(value, ast.Dict):
                        found.add(value, where)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args
                positional = args.posonlyargs + args.args
                pairs = [
                    *zip(
                        positional[len(positional) - len(args.defaults) :],
                        args.defaults,
                        strict=True,
                    ),
                    *zip(args.kwonlyargs, args.kw_defaults, strict=True),
                ]
                for arg, default in pairs:
                    if arg.arg == "code" and default is not None:
                        found.add(default, where)
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id == "code":
                        found.add(node.value, where, literal_only=True)
                    elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                        for name, value in zip(target.elts, node.value.elts, strict=False):
                            if isinstance(name, ast.Name) and name.id == "code":
                                found.add(value, where, literal_only=True)
    return found


def _nodes(tree: ast.AST, cls: ast.ClassDef | None = None) -> Iterator[tuple[ast.ClassDef | None, ast.AST]]:
    """Every node, with the class it is in (for `super().__init__`)."""
    for child in ast.iter_child_nodes(tree):
        yield cls, child
        yield from _nodes(child, child if isinstance(child, ast.ClassDef) else cls)


def _positional_index(
    node: ast.Call,
    cls: ast.ClassDef | None,
    helpers: dict[str, int],
    classes: dict[str, int],
) -> int | None:
    func = node.func
    if isinstance(func, ast.Name):
        return classes.get(func.id, helpers.get(func.id))
    if not isinstance(func, ast.Attribute):
        return None
    if func.attr == "__init__":
        is_super = (
            isinstance(func.value, ast.Call) and isinstance(func.value.func, ast.Name) and func.value.func.id == "super"
        )
        bases = [base.id for base in cls.bases if isinstance(base, ast.Name)] if cls is not None else []
        return next((classes[base] for base in bases if base in classes), None) if is_super else None
    return helpers.get(func.attr)


def test_every_code_the_package_produces_is_listed() -> None:
    found = scan()
    known = {code.value for code in ErrorCode}
    unlisted = {
        code: where
        for code, where in found.codes.items()
        if code not in known and not re.fullmatch(rf"{HTTP_STATUS_PREFIX}\d{{3}}", code)
    }
    assert not unlisted, f"add these to adk_notebook/core/error_codes.py (and docs/errors.md): {unlisted}"
    unknown = {expression: where for expression, where in found.computed.items() if expression not in COMPUTED}
    assert not unknown, f"codes computed at run time that this test cannot check; use an ErrorCode: {unknown}"


def test_every_listed_code_is_produced_somewhere() -> None:
    stale = {code.value for code in ErrorCode} - set(scan().codes) - ANTHROPIC_TYPES
    assert not stale, f"no code produces these any more; remove them from ErrorCode: {sorted(stale)}"


def test_the_scan_sees_each_way_a_code_is_written() -> None:
    found = scan().codes
    assert "invalid_arguments" in found  # super().__init__ of ToolArgumentsError, and error dicts
    assert "run_time_limit" in found  # AdkError(component, category, code, message)
    assert "connect_failed" in found  # category, code, what = ..., "connect_failed", ...
    assert "tool_error" in found  # the default of AdkError.tool(code=...)
    assert "invalid_response" in found  # payload.error(category, code, message)


def test_docs_list_every_code_with_its_doc() -> None:
    rows = [f"| `{code.value}` | {code.doc} |" for code in ErrorCode]
    text = DOCS.read_text()
    missing = [row for row in rows if row not in text]
    assert not missing, "docs/errors.md lacks (or words differently) these rows:\n" + "\n".join(missing)
    listed = re.findall(r"^\| `([a-z0-9_]+)` \|", text, flags=re.MULTILINE)
    assert sorted(listed) == sorted(code.value for code in ErrorCode), "docs/errors.md lists a code ErrorCode does not"


def test_an_error_code_is_a_plain_string_on_the_error() -> None:
    error = AdkError.tool("The disk is full.")
    assert error.code == ErrorCode.TOOL_ERROR and type(error.code) is str
    assert repr(error) == "AdkError('tool', 'internal', 'tool_error', 'The disk is full.')"
    assert error.to_dict()["code"] == "tool_error"
