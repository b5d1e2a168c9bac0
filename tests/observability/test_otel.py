"""OpenTelemetryPlugin with the real OpenTelemetry SDK: span names, GenAI attributes, parentage,
errors, opt-in contents, and an OTLP/HTTP export decoded by a receiver on 127.0.0.1."""

from __future__ import annotations

import json

from loopback import LoopbackServer, Reply
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from adk_notebook import (
    AgentTool,
    Content,
    FunctionCall,
    LlmAgent,
    LlmResponse,
    OpenTelemetryPlugin,
    Part,
    ScriptedModel,
    Usage,
)


def get_weather(city: str) -> dict:
    """Get the weather for a city."""
    if city == "Atlantis":
        raise LookupError("no such city")
    return {"city": city, "condition": "sunny"}


def provider_with_memory() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def weather_agent() -> LlmAgent:
    call = Content("model", [Part(function_call=FunctionCall("get_weather", {"city": "Atlantis"}))])
    script = [
        LlmResponse(call, usage=Usage(12, 3, 15)),
        LlmResponse(Content.model("No such city."), usage=Usage(20, 4, 24)),
    ]
    return LlmAgent(
        name="weather",
        model=ScriptedModel(script, name="openai:gpt-4o-mini"),
        tools=[get_weather],
    )


def by_name(
    spans: tuple[ReadableSpan, ...] | list[ReadableSpan],
) -> dict[str, list[ReadableSpan]]:
    found: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        found.setdefault(span.name, []).append(span)
    return found


async def test_spans_have_genai_names_attributes_parentage_and_errors() -> None:
    provider, exporter = provider_with_memory()
    result = await weather_agent().run_async("Weather in Atlantis?", plugins=[OpenTelemetryPlugin(provider)])
    spans = by_name(exporter.get_finished_spans())
    assert sorted(spans) == [
        "chat gpt-4o-mini",
        "execute_tool get_weather",
        "invoke_agent weather",
        "run weather",
    ]
    (run,) = spans["run weather"]
    (agent,) = spans["invoke_agent weather"]
    chats = sorted(spans["chat gpt-4o-mini"], key=lambda s: s.start_time or 0)
    (tool,) = spans["execute_tool get_weather"]
    # One trace; tool and chats under the agent, the agent under the run.
    assert {s.context.trace_id for group in spans.values() for s in group} == {run.context.trace_id}
    assert run.parent is None
    assert agent.parent is not None and agent.parent.span_id == run.context.span_id
    for child in [*chats, tool]:
        assert child.parent is not None and child.parent.span_id == agent.context.span_id
    assert agent.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert agent.attributes["gen_ai.agent.name"] == "weather"
    assert run.attributes["gen_ai.conversation.id"] == result.session_id
    first = chats[0].attributes
    assert (
        first["gen_ai.operation.name"],
        first["gen_ai.request.model"],
        first["gen_ai.provider.name"],
    ) == ("chat", "gpt-4o-mini", "openai")
    assert (
        first["gen_ai.usage.input_tokens"],
        first["gen_ai.usage.output_tokens"],
    ) == (12, 3)
    assert (
        agent.attributes["gen_ai.usage.input_tokens"],
        agent.attributes["gen_ai.usage.output_tokens"],
    ) == (32, 7)
    call_id = next(c.id for e in result.events for c in e.function_calls())
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert (
        tool.attributes["gen_ai.tool.name"],
        tool.attributes["gen_ai.tool.call.id"],
    ) == ("get_weather", call_id)
    assert tool.attributes["error.type"] == "LookupError"
    assert tool.status.status_code is StatusCode.ERROR and not tool.status.description  # a message is content
    assert agent.status.status_code is not StatusCode.ERROR  # the model heard the error and answered
    # Times are the run's own, nested.
    assert run.start_time <= agent.start_time <= tool.start_time and tool.end_time <= agent.end_time <= run.end_time
    # No message contents unless asked for.
    assert not any(
        key.startswith(("gen_ai.tool.call.arg", "gen_ai.tool.call.res", "gen_ai.output"))
        for group in spans.values()
        for s in group
        for key in s.attributes
    )


async def test_contents_are_recorded_only_when_the_user_opts_in() -> None:
    provider, exporter = provider_with_memory()
    await weather_agent().run_async(
        "Weather in Atlantis?",
        plugins=[OpenTelemetryPlugin(provider, capture_content=True)],
    )
    spans = by_name(exporter.get_finished_spans())
    (tool,) = spans["execute_tool get_weather"]
    assert json.loads(str(tool.attributes["gen_ai.tool.call.arguments"])) == {"city": "Atlantis"}
    assert "no such city" in str(tool.attributes["gen_ai.tool.call.result"])
    assert tool.status.status_code is StatusCode.ERROR and "no such city" in (tool.status.description or "")
    answers = [
        str(s.attributes["gen_ai.output.messages"])
        for s in sorted(spans["chat gpt-4o-mini"], key=lambda s: s.start_time or 0)
    ]
    assert "get_weather" in answers[0] and "No such city." in answers[1]


async def test_a_failed_run_is_exported_with_its_error() -> None:
    provider, exporter = provider_with_memory()
    agent = LlmAgent(name="weather", model=ScriptedModel([TimeoutError("model took too long")]))
    try:
        await agent.run_async("Hi", plugins=[OpenTelemetryPlugin(provider)])
    except TimeoutError:
        pass
    spans = by_name(exporter.get_finished_spans())
    for name in ("run weather", "invoke_agent weather", "chat scripted"):
        (span,) = spans[name]
        assert span.attributes["error.type"] == "TimeoutError" and span.status.status_code is StatusCode.ERROR


async def test_an_agent_tool_nests_its_agent_under_the_call() -> None:
    provider, exporter = provider_with_memory()
    helper = LlmAgent(name="helper", model=ScriptedModel(["42."]), description="Knows numbers.")
    lead = LlmAgent(
        name="lead",
        model=ScriptedModel([FunctionCall("helper", {"request": "?"}), "42."]),
        tools=[AgentTool(helper)],
    )
    await lead.run_async("Go", plugins=[OpenTelemetryPlugin(provider)])
    spans = by_name(exporter.get_finished_spans())
    (call,) = spans["execute_tool helper"]
    (inner,) = spans["invoke_agent helper"]
    assert inner.parent is not None and inner.parent.span_id == call.context.span_id


async def test_otlp_http_export_reaches_a_receiver_as_protobuf() -> None:
    ok = Reply(200, b"", headers={"Content-Type": "application/x-protobuf"})  # an empty ExportTraceServiceResponse
    with LoopbackServer([ok] * 8) as receiver:  # one POST per span with a SimpleSpanProcessor
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{receiver.url}/v1/traces")))
        await weather_agent().run_async("Weather in Atlantis?", plugins=[OpenTelemetryPlugin(provider)])
        provider.shutdown()
    posts = [r for r in receiver.requests if r.path == "/v1/traces"]
    assert posts and all(r.headers["content-type"] == "application/x-protobuf" for r in posts)
    spans = []
    for post in posts:
        request = ExportTraceServiceRequest()
        request.ParseFromString(post.body)
        spans += [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
    named = {s.name: s for s in spans}
    assert set(named) == {
        "run weather",
        "invoke_agent weather",
        "chat gpt-4o-mini",
        "execute_tool get_weather",
    }
    tool = named["execute_tool get_weather"]
    attributes = {a.key: a.value for a in tool.attributes}
    assert attributes["gen_ai.tool.name"].string_value == "get_weather"
    assert attributes["error.type"].string_value == "LookupError"
    assert tool.parent_span_id == named["invoke_agent weather"].span_id
    assert named["invoke_agent weather"].parent_span_id == named["run weather"].span_id
    chat_attributes = {a.key: a.value for a in named["chat gpt-4o-mini"].attributes}
    assert chat_attributes["gen_ai.usage.input_tokens"].int_value in (12, 20)
