"""One error type for everything the runtime raises.

```
AdkError(component, category, code, message)
    category: invalid_input | unauthorized | forbidden | not_found | rate_limited
              | timeout | unavailable | cancelled | internal | unsupported
```
Users write ``except AdkError``; ``category`` says what happened, ``code`` which case it was,
``component`` where (agent, tool, model, session, ...). ``is_retryable()`` is the one rule of
what is worth another attempt: the HTTP transport and tool retry budgets both ask it. Every
code is listed, with when it happens and what to do, in `core.error_codes.ErrorCode`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from .error_codes import ErrorCode

__all__ = ["RETRYABLE_STATUSES", "AdkError", "ErrorCategory"]


class ErrorCategory(StrEnum):
    INVALID_INPUT = "invalid_input"
    UNAUTHORIZED = "unauthorized"
    FORBIDDEN = "forbidden"
    NOT_FOUND = "not_found"
    RATE_LIMITED = "rate_limited"
    TIMEOUT = "timeout"
    UNAVAILABLE = "unavailable"
    CANCELLED = "cancelled"
    INTERNAL = "internal"
    UNSUPPORTED = "unsupported"


_RETRYABLE = frozenset({ErrorCategory.RATE_LIMITED, ErrorCategory.TIMEOUT, ErrorCategory.UNAVAILABLE})
#: The HTTP statuses worth another attempt: rate limits and transient server trouble. Not 408
#: (the server gave up on a request it already had), 501 or 505 (it cannot serve this at all).
#: 529 is Anthropic's "overloaded" (its docs: retry later), transient like 503.
RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504, 529})


class AdkError(Exception):
    """An error from the runtime, a tool, a model or a service.

    Args:
        component: Where it happened: "agent", "tool", "model", "session", "artifact", "config"...
        category: What kind of failure it is (an `ErrorCategory` or its string value).
        code: A stable machine-readable code, e.g. "max_iterations_exceeded" (an `ErrorCode`).
        message: What went wrong and, where possible, what to do about it.
        retry_after: Seconds a server asked us to wait before retrying.
        details: Extra JSON-serialisable facts (never secrets).
    """

    def __init__(
        self,
        component: str,
        category: ErrorCategory | str,
        code: ErrorCode | str,
        message: str,
        *,
        retry_after: float | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        self.component = component
        self.category = ErrorCategory(category)
        self.code = str(code)  # a plain string: reprs and saved events stay as they were
        self.message = message
        self.retry_after = retry_after
        self.details = details or {}
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"{self.component}.{self.category.value}: {self.message}"

    def __repr__(self) -> str:
        return f"AdkError({self.component!r}, {self.category.value!r}, {self.code!r}, {self.message!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _rebuild,
            (self.component, self.category.value, self.code, self.message, self.retry_after, self.details),
        )

    def is_retryable(self) -> bool:
        """Whether the same call may succeed if tried again.

        An error that carries an HTTP status (``details["status"]``) is retryable when the status
        is in `RETRYABLE_STATUSES`; any other by its category (rate_limited, timeout, unavailable).
        """
        status = self.details.get("status")
        if type(status) is int:
            return status in RETRYABLE_STATUSES
        return self.category in _RETRYABLE

    def to_dict(self) -> dict[str, Any]:
        """The JSON a model (or a saved event) sees: message, code and category."""
        data: dict[str, Any] = {"error": self.message, "code": self.code, "category": self.category.value}
        if self.retry_after is not None:
            data["retry_after"] = self.retry_after
        return data

    # Short forms, one per component, as in adk-rust's `AdkError::Tool(...)`.
    @classmethod
    def agent(
        cls, message: str, *, code: ErrorCode | str = ErrorCode.AGENT_ERROR, category: ErrorCategory | str = "internal"
    ) -> AdkError:
        return cls("agent", category, code, message)

    @classmethod
    def tool(
        cls, message: str, *, code: ErrorCode | str = ErrorCode.TOOL_ERROR, category: ErrorCategory | str = "internal"
    ) -> AdkError:
        return cls("tool", category, code, message)

    @classmethod
    def model(
        cls, message: str, *, code: ErrorCode | str = ErrorCode.MODEL_ERROR, category: ErrorCategory | str = "internal"
    ) -> AdkError:
        return cls("model", category, code, message)

    @classmethod
    def session(
        cls,
        message: str,
        *,
        code: ErrorCode | str = ErrorCode.SESSION_ERROR,
        category: ErrorCategory | str = "internal",
    ) -> AdkError:
        return cls("session", category, code, message)

    @classmethod
    def artifact(
        cls,
        message: str,
        *,
        code: ErrorCode | str = ErrorCode.ARTIFACT_ERROR,
        category: ErrorCategory | str = "internal",
    ) -> AdkError:
        return cls("artifact", category, code, message)

    @classmethod
    def config(
        cls,
        message: str,
        *,
        code: ErrorCode | str = ErrorCode.CONFIG_ERROR,
        category: ErrorCategory | str = "invalid_input",
    ) -> AdkError:
        return cls("config", category, code, message)


def _rebuild(
    component: str, category: str, code: str, message: str, retry_after: float | None, details: dict[str, Any]
) -> AdkError:
    return AdkError(component, category, code, message, retry_after=retry_after, details=details)
