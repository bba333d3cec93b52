"""Traces of runs over OpenTelemetry, read back as a collector reads them.

A real run (the loop, real litellm against the scripted model server, real delegation)
with tracing on exports over OTLP/HTTP to a receiver the test runs
(tests/support/otlp_receiver.py, decoding with the opentelemetry-proto package): the span
tree follows the delegation (Agent 0, its subordinate under the call that made it, that
one's two siblings under theirs), model calls carry the GenAI attributes, a secret in a
tool's arguments or in the text leaves masked. Off, nothing is exported and no
OpenTelemetry SDK module is even imported.
"""

from __future__ import annotations

import json
import logging
import socket

import pytest

from core import tracing
from core.agent_types import UserMessage
from core.events import ModelCalled, ToolStarted
from tests.support.agents import answer, reply, wait_for
from tests.support.fake_llm import Reply, model_is
from tests.support.fresh_python import run_script
from tests.support.otlp_receiver import ReceivedSpan, start_otlp_receiver
from tests.support.server_process import ServerProcess, call_api, server_env

TOKEN = "tok-9f8e7d6c5b4a"
OTEL_VARIABLES = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_TRACES_SAMPLER",
    "OTEL_SERVICE_NAME",
)


@pytest.fixture(scope="module")
def receiver():
    server = start_otlp_receiver()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _clean(receiver, monkeypatch):
    """No outside OTEL_* variable, a secret to mask, an empty receiver; the tracer of a
    test stopped after it (the next test's destination is its own)."""
    for name in OTEL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CADRE_SECRETS", json.dumps({"SERVICE_TOKEN": TOKEN}))
    receiver.clear()
    yield
    tracing.shutdown()


def task_is(fragment: str):
    """Requests of the agent whose task (its first user message) holds `fragment`."""

    def predicate(body: dict) -> bool:
        users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
        return bool(users) and fragment in str(users[0].get("content"))

    return predicate


def script_team(llm) -> None:
    """Agent 0 hands a task (with a secret in it) to A1, which runs two siblings at once."""
    llm.add_rule(model_is("util-model"), Reply("A note"))
    llm.add_rule(task_is("Task ONE"), Reply(answer("apple, pear")))
    llm.add_rule(task_is("Task TWO"), Reply(answer("oak, elm")))
    tasks = [{"message": "Task ONE: list fruits."}, {"message": "Task TWO: list trees."}]
    llm.script(
        Reply(reply("call_subordinate", message=f"Make two lists; the key is {TOKEN}.")),
        Reply(reply("call_subordinates", headline="Both at once", tasks=tasks)),
        Reply(answer("Both lists are made.")),
        Reply(answer("All done.")),
    )


def spans_of(receiver, count: int) -> list[ReceivedSpan]:
    assert tracing.flush()
    return wait_for(lambda: len(got := receiver.received()) >= count and got, what="spans")


def test_a_run_with_a_subordinate_and_two_siblings_is_one_trace_shaped_like_the_team(
    make_context, llm, receiver
):
    script_team(llm)
    context = make_context(tracing=True, tracing_endpoint=receiver.base_url, trace_content=True)
    said = f"Check the service; the key is {TOKEN}."
    assert context.communicate(UserMessage(said)).result(60) == "All done."

    # The run, 4 agents, 6 model calls, 6 tool calls (2 delegations, 4 answers).
    spans = spans_of(receiver, 1 + 4 + 6 + 6)
    assert len({s.trace_id for s in spans}) == 1
    by_id = {s.span_id: s for s in spans}

    def parent(span: ReceivedSpan) -> str:
        return by_id[span.parent_id].name if span.parent_id else ""

    (run,) = [s for s in spans if s.name == "cadre.run"]
    assert run.parent_id == "" and run.attributes["cadre.run.outcome"] == "answer"
    assert run.resource["service.name"] == "cadre"
    agents = {s.attributes["gen_ai.agent.name"]: s for s in spans if s.name.startswith("invoke_")}
    names = [a.agent_name for a in context.agents()]
    assert sorted(agents) == sorted(names) and len(names) == 4
    a0, a1, (s1, s2) = agents["A0"], agents["A1"], [agents[n] for n in names[2:]]
    assert a0.parent_id == run.span_id
    # A subordinate under the tool call that made it, the siblings under theirs.
    assert parent(a1) == "execute_tool call_subordinate"
    assert by_id[a1.parent_id].parent_id == a0.span_id
    assert parent(s1) == parent(s2) == "execute_tool call_subordinates"
    assert s1.parent_id == s2.parent_id and by_id[s1.parent_id].parent_id == a1.span_id
    for agent in agents.values():
        assert agent.attributes["cadre.agent.outcome"] == "answer"
        assert agent.attributes["gen_ai.operation.name"] == "invoke_agent"

    # Model calls: under their agent, with the GenAI semantic conventions' attributes.
    calls = [s for s in spans if s.attributes.get("gen_ai.operation.name") == "chat"]
    per_agent = sorted(by_id[c.parent_id].attributes["gen_ai.agent.name"] for c in calls)
    assert per_agent == sorted(["A0", "A0", "A1", "A1", names[2], names[3]])
    for call in calls:
        found = call.attributes
        assert call.name == "chat chat-model" and call.kind == 3  # SPAN_KIND_CLIENT
        assert found["gen_ai.request.model"] == "chat-model"
        assert found["gen_ai.provider.name"] == found["gen_ai.system"] == "openai"
        assert found["gen_ai.usage.input_tokens"] > 0 and found["gen_ai.usage.output_tokens"] > 0
        assert found["gen_ai.response.finish_reasons"] == ("stop",)
        assert isinstance(found["cadre.usage.cost"], float)
        assert "gen_ai.input.messages" in found and "gen_ai.output.messages" in found
        assert call.start <= call.end

    # Tool calls: their name, arguments (masked), outcome and duration.
    tools = {s.name: s for s in spans if s.name.startswith("execute_tool")}
    handed = tools["execute_tool call_subordinate"]
    assert handed.attributes["gen_ai.tool.name"] == "call_subordinate"
    assert handed.attributes["cadre.tool.outcome"] == "done"
    arguments = json.loads(handed.attributes["gen_ai.tool.call.arguments"])
    assert arguments["message"] == "Make two lists; the key is ***."
    assert handed.start < a1.start and a1.end <= handed.end
    answers = [s for s in spans if s.name == "execute_tool response"]
    assert len(answers) == 4 and {s.attributes["cadre.tool.outcome"] for s in answers} == {"answer"}

    # The secret, in the user's text and in a tool's arguments, is nowhere in the trace.
    assert TOKEN not in repr([(s.attributes, s.events, s.status_message) for s in spans])
    first = min((c for c in calls if by_id[c.parent_id] is a0), key=lambda c: c.start)
    assert "Check the service; the key is ***." in first.attributes["gen_ai.input.messages"]


def test_without_the_content_setting_no_text_leaves_and_the_settings_headers_go(
    make_context, llm, receiver
):
    llm.script(Reply(answer("Hello there.")))
    headers = "authorization=Bearer%20trace-key-123"  # as OTEL_EXPORTER_OTLP_HEADERS has them
    context = make_context(
        tracing=True, tracing_endpoint=receiver.base_url, tracing_headers=headers
    )
    assert context.communicate(UserMessage("Hi")).result(30) == "Hello there."
    spans = spans_of(receiver, 4)  # run, A0, its model call, its answer
    assert {h.get("authorization") for h in receiver.headers} == {"Bearer trace-key-123"}
    kinds = {s.name.split()[0]: s.attributes["openinference.span.kind"] for s in spans}
    assert kinds == {"cadre.run": "CHAIN", "invoke_agent": "AGENT", "chat": "LLM",
                     "execute_tool": "TOOL"}  # fmt: skip
    (call,) = [s for s in spans if s.name.startswith("chat ")]
    assert "gen_ai.input.messages" not in call.attributes
    assert "gen_ai.output.messages" not in call.attributes
    (tool,) = [s for s in spans if s.name == "execute_tool response"]
    assert "gen_ai.tool.call.result" not in tool.attributes
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {"text": "Hello there."}


def test_a_lone_surrogate_in_the_model_s_words_does_not_lose_the_tool_s_arguments(
    make_context, llm, receiver
):
    """The model's JSON may escape half of a character pair ("\\ud800"): text that cannot
    be sent as UTF-8. It reaches a span's attributes (a tool's arguments, before Cadre
    cleans them for the tool) and the exporter drops an attribute it cannot encode (with
    a traceback in the log): the call's arguments must still be there, the half replaced."""
    llm.script(Reply(answer("Half \ud800 a pair.")))
    context = make_context(tracing=True, tracing_endpoint=receiver.base_url, trace_content=True)
    context.communicate(UserMessage("Hi")).result(30)
    spans = spans_of(receiver, 4)  # run, A0, its model call, its answer
    (tool,) = [s for s in spans if s.name == "execute_tool response"]
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"])["text"].startswith("Half ")


def test_the_standard_variables_turn_it_on_with_their_endpoint_and_headers(
    make_context, llm, receiver, monkeypatch
):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.base_url)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-team-key=abc123")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "cadre-test")
    llm.script(Reply(answer("Traced by the environment.")))
    context = make_context()  # the `tracing` setting is off
    assert context.communicate(UserMessage("Hi")).result(30) == "Traced by the environment."
    spans = spans_of(receiver, 4)
    assert {s.resource["service.name"] for s in spans} == {"cadre-test"}
    assert {h.get("x-team-key") for h in receiver.headers} == {"abc123"}


def test_off_nothing_is_exported(make_context, llm, receiver):
    llm.script(Reply(answer("Untraced.")))
    context = make_context(tracing_endpoint=receiver.base_url, trace_content=True)
    assert context.communicate(UserMessage("Hi")).result(30) == "Untraced."
    assert tracing.flush()
    assert receiver.requests == 0 and receiver.received() == []
    # Nobody listens to the step events: the loop builds none of them.
    assert not context.events.wants(ModelCalled) and not context.events.wants(ToolStarted)


def test_a_run_the_sampling_leaves_out_sends_nothing(make_context, llm, receiver):
    llm.script(Reply(answer("Not sampled.")))
    context = make_context(
        tracing=True, tracing_endpoint=receiver.base_url, tracing_sample_ratio=0.0
    )
    assert context.communicate(UserMessage("Hi")).result(30) == "Not sampled."
    assert tracing.flush()
    assert receiver.requests == 0


#: A run in a fresh interpreter with tracing off: which OpenTelemetry modules it imported.
UNTRACED_RUN = """
import json, sys
from core.agent_types import UserMessage
from core.events import ModelCalled, ToolStarted
from core.chat import Chat
from helpers.runtime import AgentRuntime
from initialize import agent_config
runtime = AgentRuntime().start()
chat = Chat(agent_config(), runtime)
answer = chat.communicate(UserMessage("Hi")).result(60)
runtime.stop()
print(json.dumps({"answer": answer,
                  "imported": sorted(m for m in sys.modules if m.startswith("opentelemetry")
                                     or m.startswith("core.tracing."))}))
"""


def test_off_no_opentelemetry_sdk_is_imported(llm, usr_dir):
    llm.script(Reply(answer("Nothing imported.")))
    settings = {}
    for role in ("CHAT", "UTIL", "EMBED"):  # the fake model server, as the `llm` fixture sets
        settings[f"CADRE_{role}_MODEL"] = f"openai/{role.lower()}-model"
        settings[f"CADRE_{role}_API_BASE"] = llm.base_url
        settings[f"CADRE_{role}_API_KEY"] = "test-key"
    seen = run_script(UNTRACED_RUN, CADRE_USR_DIR=str(usr_dir), **settings)
    assert seen["answer"] == "Nothing imported."
    # Not the SDK, not even the API: the switch (core/tracing/__init__.py) is all there is.
    assert seen["imported"] == []


def test_an_unreachable_collector_costs_the_run_nothing_and_is_told_once(
    make_context, llm, monkeypatch, caplog
):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "1")  # the exporter gives up soon
    llm.script(Reply(answer("First.")), Reply(answer("Second.")))
    context = make_context(tracing=True, tracing_endpoint=f"http://127.0.0.1:{port}")
    with caplog.at_level(logging.WARNING, logger="core.tracing.exporting"):
        assert context.communicate(UserMessage("One")).result(30) == "First."
        tracing.flush()
        assert context.communicate(UserMessage("Two")).result(30) == "Second."
        tracing.flush()
        told = wait_for(
            lambda: [r for r in caplog.records if "Traces could not be sent" in r.message],
            what="the log line",
        )
    assert len(told) == 1 and f"127.0.0.1:{port}/v1/traces" in told[0].message


def test_an_approval_and_an_intervention_are_events_of_their_spans(
    make_context, llm, receiver, monkeypatch, usr_dir
):
    monkeypatch.setenv(
        "CADRE_TOOL_RULES", json.dumps([{"tool": "text_editor:write", "rule": "ask"}])
    )
    llm.add_rule(model_is("util-model"), Reply("A note"))
    llm.script(
        Reply(reply("text_editor:write", path="a.txt", content="hello\n")),
        Reply(answer("one, " * 60), chunk_size=4, delay=0.03),  # streams for a while
        Reply(answer("Stopped counting.")),
    )
    context = make_context(tracing=True, tracing_endpoint=receiver.base_url)
    run = context.communicate(UserMessage("Write it, then count."))
    [call] = wait_for(lambda: context.runtime.call(context.approvals.held), what="a held call")
    context.approve(call.id, True)
    wait_for(lambda: any(i.type == "response" and i.content for i in context.log.items),
             what="the count streaming")  # fmt: skip
    context.communicate(UserMessage("Stop counting now."))
    assert run.result(30) == "Stopped counting."
    assert (usr_dir / "workdir" / "a.txt").read_text() == "hello\n"

    spans = spans_of(receiver, 1 + 1 + 3 + 2)  # run, A0, 3 model calls, write and answer
    (write,) = [s for s in spans if s.attributes.get("gen_ai.tool.name") == "text_editor:write"]
    states = [e[1]["cadre.approval.state"] for e in write.events if e[0] == "cadre.approval"]
    assert states == ["pending", "allowed"] and write.attributes["cadre.tool.outcome"] == "done"
    (a0,) = [s for s in spans if s.name == "invoke_agent A0"]
    (run_span,) = [s for s in spans if s.name == "cadre.run"]
    assert [e[0] for e in a0.events] == ["cadre.intervention"]
    assert run_span.events == [("cadre.intervention", {"cadre.intervention.to": ("A0",)})]
    # The reply the intervention cut short: its span says so, and is no error.
    outcomes = sorted(
        s.attributes["cadre.model.outcome"] for s in spans if s.name.startswith("chat ")
    )
    assert outcomes == ["done", "done", "interrupted"]
    assert all(s.status_code != 2 for s in spans)  # STATUS_CODE_ERROR


def test_a_server_sends_the_spans_still_waiting_when_it_stops(
    llm, usr_dir, receiver, tmp_path, monkeypatch
):
    """A real run_ui.py traced by the standard variables; the batch would wait ten
    minutes, so what reaches the receiver is what the stop sent (Cadre.end)."""
    monkeypatch.setenv("CADRE_API_KEY", "trace-api-key")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.base_url)
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "600000")
    llm.add_rule(model_is("util-model"), Reply("A note"))
    llm.script(Reply(answer("Traced by a server.")))
    server = ServerProcess(server_env(), tmp_path / "server.log").start(ready=True)
    try:
        sent = call_api(server, "POST", "/api/v1/message", {"message": "Hi", "wait": True},
                        key="trace-api-key")  # fmt: skip
        assert sent["response"] == "Traced by a server."
        assert receiver.received() == []  # still in the batch
    finally:
        server.stop()
    assert server.process is not None and server.process.returncode == 0
    names = sorted(s.name for s in receiver.received())
    assert names == ["cadre.run", "chat chat-model", "execute_tool response", "invoke_agent A0"]
