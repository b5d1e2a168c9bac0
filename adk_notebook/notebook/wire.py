"""What a model receives: the request an agent would send next, and that request in each
provider's wire format (`%adk request`).

Nothing is sent and nothing is stored: the request is built on a copy of the session, with the
next user message appended. A provider model's body builder needs no key (the key is only
needed to send), so a model string whose key is not set still shows its provider's body, and
each other provider's body comes from a model made with a provider that has no key. A model
that cannot be built here (an extra not installed) does not stop the request from being shown;
it stands in by its name.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import asdict
from typing import Any

from ..agents.llm_agent import LlmAgent
from ..core.content import Content
from ..core.context import InvocationContext
from ..core.errors import AdkError
from ..core.events import Event
from ..core.session import Session
from ..models.base import LlmRequest
from ..models.registry import AUTO_DEFAULTS, model_id, resolve_model
from .display import model_label

__all__ = ["next_request", "request_json", "wire_bodies"]


class _NamedModel:
    """Stands in for a model that cannot be built here (no key, no provider): its name is enough."""

    def __init__(self, name: str) -> None:
        self.name = name


async def next_request(
    agent: LlmAgent, found: Session | None, user: str, session_id: str, message: str
) -> tuple[LlmRequest, Any]:
    """The request `agent` would build now, with `message` as the next user message (nothing is stored)."""
    session = Session(
        session_id,
        agent.name,
        user,
        state=dict(found.state) if found else {},
        events=list(found.events) if found else [],
    )
    ctx = InvocationContext(session=session, agent_name=agent.name, user_content=Content.user(message))
    session.events.append(Event("user", ctx.user_content, ctx.invocation_id))
    try:
        model: Any = agent.resolve_model()
    except (AdkError, ImportError):  # the request can be shown without the model
        model = _unsent_model(agent.model)
    return await agent.build_request(ctx, model_name=model.name), model


def _unsent_model(model: Any) -> Any:
    """The model a model string names, made even when its key is not set (it builds bodies, never sends)."""
    try:
        return resolve_model(model, require_key=False) if isinstance(model, str) else _NamedModel(model_label(model))
    except (AdkError, ImportError):
        return _NamedModel(model_label(model))


def request_json(request: LlmRequest) -> dict[str, Any]:
    """The request in our own, provider-neutral form, as JSON-ready data."""
    return {
        "model": request.model,
        "system_instruction": request.system_instruction,
        "contents": [c.to_dict() for c in request.contents],
        "tools": [{"name": d.name, "description": d.description, "parameters": d.parameters} for d in request.tools]
        + [{"builtin": f"{type(t).__name__}()", "runs_at": t.offered_by} for t in request.builtin_tools],
        "config": {k: v for k, v in asdict(request.config).items() if v is not None},
    }


# -- provider wire formats --------------------------------------------------------------------
_PROVIDERS = {
    # key: (module, model class, provider class, label)
    "openai": (
        ".models.openai",
        "OpenAIModel",
        "OpenAIProvider",
        "OpenAI Chat Completions body (POST /chat/completions)",
    ),
    "gemini": (
        ".models.gemini",
        "GeminiModel",
        "GeminiProvider",
        "Gemini body (POST /models/MODEL:streamGenerateContent)",
    ),
    "anthropic": (
        ".models.anthropic",
        "AnthropicModel",
        "AnthropicProvider",
        "Anthropic Messages body (POST /v1/messages)",
    ),
}


def _body_of(model: Any, request: LlmRequest) -> dict[str, Any] | None:
    """A provider model's JSON body for `request`; None for a model without one (offline, local)."""
    build = getattr(model, "build_body", None)
    if build is None or isinstance(model, _NamedModel):
        return None
    return build(request, stream=True)  # runs stream by default


def wire_bodies(model: Any, request: LlmRequest, provider: str | None = None) -> list[tuple[str, Any]]:
    """[(label, body)]: the agent's own provider when it has one, else (or with `provider`) each one."""
    own = _body_of(model, request)
    if own is not None and provider is None:
        return [(f"As {type(model).__name__} sends it ({model_id(model)})", own)]
    keys = list(_PROVIDERS) if provider in (None, "all") else [provider]
    bodies: list[tuple[str, Any]] = []
    for key in keys:
        module_name, class_name, provider_name, label = _PROVIDERS[key]
        cls = getattr(importlib.import_module(module_name, "adk_notebook"), class_name)
        provider_cls = getattr(importlib.import_module(".models.providers", "adk_notebook"), provider_name)
        try:
            default = inspect.signature(cls).parameters["model"].default
            name = default if isinstance(default, str) else AUTO_DEFAULTS.get(key, request.model)
            body = _body_of(cls(name, provider=provider_cls()), request)  # a provider without a key: nothing is sent
        except Exception as exc:  # noqa: BLE001 - one provider's failure is a note, not an error
            bodies.append((f"{label}: could not be built", f"{type(exc).__name__}: {exc}"))
            continue
        if body is not None:
            bodies.append((label, body))
    return bodies
