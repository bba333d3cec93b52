"""Who may call whom, through the loop: the prompt, the repairable error, a project's rule."""

from __future__ import annotations

import json

from core.agent_types import UserMessage
from core.chat import Chat
from initialize import agent_config
from tests.support.agents import answer, make_profile, reply
from tests.support.fake_llm import Reply

AGENT0 = "title: Agent 0\nsubordinate: false\n"


def delegate(message: str, profile: str = "") -> Reply:
    args = {"message": message, "reset": True, **({"profile": profile} if profile else {})}
    return Reply(reply("call_subordinate", headline="Delegating", **args))


def listed(request) -> set[str]:
    """The profiles the call_subordinate section of a request's system prompt offers."""
    system = request.messages[0]["content"]
    lines = system.split("Available profiles:", 1)[1].strip("\n").splitlines()
    indent = lines[0][: len(lines[0]) - len(lines[0].lstrip())]  # under a tool's line: two
    found = set()
    for line in lines:
        if not line.startswith(indent + "- `"):  # the list ends (the next tool, its manual)
            break
        found.add(line.split("`")[1])
    return found


def last(request) -> str:
    """The last message of a request: the warning about the call before, if any."""
    return str(request.messages[-1]["content"])


def test_a_call_outside_the_list_is_repaired_to_an_allowed_one(make_context, llm, usr_dir):
    make_profile(usr_dir, "agent0", yaml=AGENT0 + "subordinates: [researcher]\n")
    llm.script(
        delegate("Write the parser.", "developer"),  # not allowed for agent0
        delegate("Find how parsers are tested."),  # no profile: the default is not allowed
        delegate("Find how parsers are tested.", "researcher"),
        Reply(answer("With golden files.")),  # A1, the researcher
        Reply(answer("Test it with golden files.")),  # A0
    )
    context = make_context()
    final = context.communicate(UserMessage("How do I test my parser?")).result(30)
    assert final == "Test it with golden files."
    requests = llm.chat_requests()
    assert listed(requests[0]) == {"researcher"}
    assert last(requests[1]).endswith(
        "An agent of profile 'agent0' may not call profile 'developer'. "
        "Use one of the profiles it may call: researcher (Researcher)."
    )
    assert "may not call profile 'default'" in last(requests[2])
    assert context.agent0.subordinate.config.profile == "researcher"
    # Nothing of the refused calls made a subordinate: only the researcher ran.
    assert [a.config.profile for a in context.agents()] == ["agent0", "researcher"]
    # The researcher has no list: it is offered every profile.
    assert listed(requests[3]) == {"default", "developer", "panel", "researcher"}


def test_a_project_narrows_what_agent_yaml_allows(llm, runtime, usr_dir):
    make_profile(usr_dir, "agent0", yaml=AGENT0 + "subordinates: [researcher, developer]\n")
    project = usr_dir / "projects" / "lab"
    project.mkdir(parents=True)
    (project / "settings.json").write_text(json.dumps({"subordinates": {"agent0": ["developer"]}}))
    llm.script(
        delegate("Research X.", "researcher"),
        delegate("Write X.", "developer"),
        Reply(answer("x = 1")),
        Reply(answer("Done: x = 1")),
    )
    context = Chat(agent_config(), runtime, project="lab")
    assert context.communicate(UserMessage("Make X.")).result(30) == "Done: x = 1"
    requests = llm.chat_requests()
    assert listed(requests[0]) == {"developer"}
    assert "Use one of the profiles it may call: developer (Developer)." in last(requests[1])


def test_a_profile_that_may_call_nobody_is_told_so(make_context, llm, usr_dir):
    make_profile(usr_dir, "agent0", yaml=AGENT0 + "subordinates: []\n")
    llm.script(delegate("Do it."), Reply(answer("I did it myself.")))
    context = make_context()
    assert context.communicate(UserMessage("Do it.")).result(30) == "I did it myself."
    first, second = llm.chat_requests()
    assert "Your profile may call no subordinates" in first.messages[0]["content"]
    assert "Available profiles:" not in first.messages[0]["content"]
    assert last(second).endswith(
        "An agent of profile 'agent0' may not call profile 'default'. "
        "Use one of the profiles it may call: none."
    )


def test_the_graph_route_answers_who_may_call_whom(http, usr_dir):
    make_profile(usr_dir, "agent0", yaml=AGENT0 + "subordinates: [researcher, developer]\n")
    project = usr_dir / "projects" / "lab"
    project.mkdir(parents=True)
    (project / "settings.json").write_text(json.dumps({"subordinates": {"agent0": ["developer"]}}))
    graph = http.get("/api/profiles/graph").json
    calls = {p["name"]: p["calls"] for p in graph["profiles"]}
    assert graph["project"] is None
    assert calls["agent0"] == ["developer", "researcher"]
    assert calls["researcher"] == ["default", "developer", "panel", "researcher"]
    agent0 = next(p for p in graph["profiles"] if p["name"] == "agent0")
    assert agent0 == {"name": "agent0", "title": "Agent 0", "subordinate": False,
                      "calls": ["developer", "researcher"], "workflow": None}  # fmt: skip
    # A workflow profile runs its steps: it calls those, not whoever it may call.
    panel = next(p for p in graph["profiles"] if p["name"] == "panel")
    assert panel["calls"] == ["researcher", "default"]
    assert panel["workflow"] == {
        "kind": "parallel", "steps": ["researcher", "default"], "aggregate": "default"
    }  # fmt: skip
    in_lab = http.get("/api/profiles/graph?project=lab").json
    assert {p["name"]: p["calls"] for p in in_lab["profiles"]}["agent0"] == ["developer"]
    refused = http.get("/api/profiles/graph?project=../x")
    assert refused.status_code == 400 and "invalid project name" in refused.json["error"]
