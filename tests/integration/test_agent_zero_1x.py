"""Agent Zero 1.x code in Cadre: its tools (`from helpers.tool import ...`) and its
extensions (`usr/extensions/<point>/`), driven through the real loop and the fake model.

The files are written here in Agent Zero 1.x's formats (read in its repository, not
copied): a tool subclasses `helpers.tool.Tool` and implements `async def execute(self,
**kwargs)`; an extension subclasses `helpers.extension.Extension` and implements `async
def execute(self, **kwargs)`, in a file under the point's folder, run in file-name order.
"""

from __future__ import annotations

import logging
import sys
import textwrap
from pathlib import Path

from core.agent_types import UserMessage
from core.tooling.agent_zero.extension_points import extension_status
from tests.support.agents import answer, reply, wait_for
from tests.support.fake_llm import Reply, model_is

TOOL_1X = """
from helpers.tool import Tool, Response
from helpers.print_style import PrintStyle
from helpers.errors import RepairableException


class CountWords(Tool):
    async def execute(self, text="", **kwargs):
        if not text:
            raise RepairableException("count_words needs a text.")
        PrintStyle(font_color="#85C1E9", bold=True).print(f"{self.agent.agent_name}: counting")
        PrintStyle.info("counted", len(text.split()))
        return Response(message=f"The text has {len(text.split())} words.", break_loop=False)
"""

UNOFFERED_TOOL_1X = """
from helpers.tool import Tool, Response
from helpers.files import get_abs_path


class ReadFile(Tool):
    async def execute(self, **kwargs):
        return Response(message=get_abs_path("x"), break_loop=False)
"""

RECORDING = """
from helpers.extension import Extension


class {name}(Extension):
    async def execute(self, **kwargs):
        self.agent.data.setdefault("a0_order", []).append("{point}")
{body}
"""

BEFORE_CALL = """\
        loop_data = kwargs["loop_data"]
        loop_data.extras_temporary["a0_note"] = "A0-EXTENSION-NOTE: the sky is green today."
"""

AFTER_TOOL = """\
        if kwargs["tool_name"] == "count_words":
            kwargs["response"].message += " (checked by an Agent Zero extension)"
"""

BROKEN = """
from helpers.extension import Extension


class Broken(Extension):
    async def execute(self, **kwargs):
        raise ValueError("the extension is broken on purpose")
"""


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())


def write_profile(usr: Path) -> Path:
    """`smith1x`: a profile holding Agent Zero 1.x tools, as Agent Zero keeps them."""
    root = usr / "agents" / "smith1x"
    _write(root / "agent.yaml", "title: Smith\ndescription: Tools of 1.x.\ncontext: Tools.\n")
    _write(root / "tools" / "count_words.py", TOOL_1X)
    _write(root / "tools" / "read_file.py", UNOFFERED_TOOL_1X)
    for tool in ("count_words", "read_file"):
        _write(root / "prompts" / f"agent.system.tool.{tool}.md", f"### {tool}:\nuse it\n")
    return root


def write_extension(usr: Path, point: str, name: str, body: str = "", cls: str = "") -> None:
    text = RECORDING.format(name=cls or "Recorder", point=point, body=body)
    _write(usr / "extensions" / point / name, text)


def chat_calls(llm) -> list:
    return [r for r in llm.chat_requests() if r.body.get("model") == "chat-model"]


HELPERS = Path(__file__).resolve().parents[2] / "helpers"


def helpers_modules() -> dict[str, object]:
    return {n: m for n, m in sys.modules.items() if n == "helpers" or n.startswith("helpers.")}


def test_a_1x_tool_runs_and_cadres_helpers_stay_the_same(make_context, llm, usr_dir):
    import helpers

    before = helpers_modules()
    package_names = set(vars(helpers))
    write_profile(usr_dir)
    llm.script(
        Reply(reply("count_words", text="one two three four")),
        Reply(answer("Four words.")),
    )
    context = make_context(agent_profile="smith1x")
    assert context.communicate(UserMessage("Count.")).result(30) == "Four words."
    assert "The text has 4 words." in chat_calls(llm)[1].messages[-1]["content"]
    after = helpers_modules()
    assert all(after[name] is module for name, module in before.items())
    assert "helpers.tool" not in sys.modules and "helpers.print_style" not in sys.modules
    # Nothing added to Cadre's package but its own modules a tool imported meanwhile
    # (tools/a2a_call.py's helpers.a2a_remote), each the file of that name.
    added = set(vars(helpers)) - package_names
    assert all(Path(getattr(helpers, n).__file__) == HELPERS / f"{n}.py" for n in added), added


def test_a_1x_tool_importing_an_unoffered_helper_is_a_repairable_error(make_context, llm, usr_dir):
    write_profile(usr_dir)
    llm.script(Reply(reply("read_file", path="x")), Reply(answer("I cannot read it.")))
    context = make_context(agent_profile="smith1x")
    assert context.communicate(UserMessage("Read.")).result(30) == "I cannot read it."
    told = chat_calls(llm)[1].messages[-1]["content"]
    assert "read_file" in told and "'helpers.files' is not part of Cadre" in told
    assert "helpers.tool (Tool, Response)" in told
    assert not [item for item in context.log.items if item.type == "error"]


def test_extensions_run_in_order_and_change_the_call_and_the_result(make_context, llm, usr_dir):
    write_profile(usr_dir)
    write_extension(usr_dir, "monologue_start", "_10_start.py")
    write_extension(usr_dir, "before_main_llm_call", "_10_note.py", BEFORE_CALL)
    write_extension(usr_dir, "tool_execute_after", "_10_checked.py", AFTER_TOOL)
    write_extension(usr_dir, "monologue_end", "_10_end.py")
    # Agent Zero 1.x's own layout (usr/extensions/python/<point>/) is read too.
    (usr_dir / "extensions" / "python" / "monologue_end").mkdir(parents=True)
    write_extension(usr_dir, "python/monologue_end", "_20_end_too.py")
    llm.script(
        Reply(reply("count_words", text="one two three")),
        Reply(answer("Three words.")),
    )
    context = make_context(agent_profile="smith1x")
    assert context.communicate(UserMessage("Count.")).result(30) == "Three words."
    calls = chat_calls(llm)
    assert "A0-EXTENSION-NOTE: the sky is green today." in calls[0].messages[-1]["content"]
    second = calls[1].messages[-1]["content"]
    assert "The text has 3 words. (checked by an Agent Zero extension)" in second
    assert context.agent0.data["a0_order"] == [
        "monologue_start",
        "before_main_llm_call",
        "tool_execute_after",
        "before_main_llm_call",
        "tool_execute_after",  # the response tool's: a tool as any other, as in Agent Zero
        "monologue_end",
        "python/monologue_end",
    ]


def test_an_extension_that_raises_is_shown_and_the_run_goes_on(make_context, llm, usr_dir, caplog):
    _write(usr_dir / "extensions" / "monologue_start" / "_05_broken.py", BROKEN)
    write_extension(usr_dir, "monologue_start", "_10_start.py")
    write_extension(usr_dir, "monologue_end", "_10_end.py")
    # A point Cadre has no meaning for: its extension is reported, never run.
    write_extension(usr_dir, "response_stream_chunk", "_10_chunk.py")
    llm.script(Reply(answer("Hello.")))
    context = make_context()
    with caplog.at_level(logging.WARNING, logger="core.tooling.agent_zero.extension_points"):
        assert context.communicate(UserMessage("Hi")).result(30) == "Hello."
    not_run = [r.getMessage() for r in caplog.records if "is not run" in r.getMessage()]
    assert len(not_run) == 1 and "_10_chunk.py" in not_run[0]
    assert extension_status("")[-1]["state"].startswith("not run: Cadre streams")
    warnings = [item for item in context.log.items if item.type == "warning"]
    assert any(
        "_05_broken.py" in item.content and "the extension is broken on purpose" in item.content
        for item in warnings
    )
    assert context.agent0.data["a0_order"] == ["monologue_start", "monologue_end"]


MORE_POINTS = {
    "message_loop_start": """\
        kwargs["loop_data"].params_persistent.setdefault("iterations", []).append(
            kwargs["loop_data"].iteration
        )
""",
    "system_prompt": """\
        kwargs["system_prompt"].append("A0-SYSTEM-PART: answer in haiku.")
""",
    "tool_execute_before": """\
        if kwargs["tool_name"] == "count_words":
            kwargs["tool_args"]["text"] += " five"
""",
    "message_loop_end": "",
    "process_chain_end": "",
}

HIST_RESULT = """
from helpers.extension import Extension


class Tagged(Extension):
    def execute(self, data, **kwargs):
        if data["tool_name"] == "count_words":
            data["tool_result"] = "[tagged] " + data["tool_result"]
"""

OLD_LAYOUT = """
from python.helpers.extension import Extension


class Old(Extension):
    async def execute(self, **kwargs):
        self.agent.data.setdefault("a0_order", []).append("old layout")
"""


def test_the_other_points_change_the_prompt_the_arguments_and_history(make_context, llm, usr_dir):
    root = write_profile(usr_dir)
    for point, body in MORE_POINTS.items():
        write_extension(usr_dir, point, "_10_more.py", body)
    # A profile's extensions/<point>/, and a file in the older layout's import names.
    _write(root / "extensions" / "hist_add_tool_result" / "_10_tag.py", HIST_RESULT)
    _write(root / "extensions" / "agent_init" / "_10_old.py", OLD_LAYOUT)
    llm.script(
        Reply(reply("count_words", text="one two three four")),
        Reply(answer("Five words.")),
    )
    context = make_context(agent_profile="smith1x")
    assert context.communicate(UserMessage("Count.")).result(30) == "Five words."
    calls = chat_calls(llm)
    assert calls[0].messages[0]["content"].endswith("A0-SYSTEM-PART: answer in haiku.")
    assert "[tagged] The text has 5 words." in calls[1].messages[-1]["content"]
    # process_chain_end runs on RunEnded, after the answer was given (as the run's saving).
    wait_for(lambda: context.runner.ended is not None and context.runner.ended.done())
    order = context.agent0.data["a0_order"]
    assert order[:2] == ["old layout", "message_loop_start"]
    assert order.count("message_loop_start") == order.count("message_loop_end") == 2
    assert order[-1] == "process_chain_end"


def test_an_agent_zero_plugins_extension_runs_while_the_plugin_is_on(make_context, llm, usr_dir):
    """An Agent Zero plugin keeps its extensions in `extensions/python/<point>/`: they run
    for the agents it is switched on for, and not once it is switched off."""
    from profiles.plugin_switches import switch

    plugin = usr_dir / "plugins" / "sky_note"
    (plugin / "extensions" / "python").mkdir(parents=True)
    _write(plugin / "plugin.yaml", "name: sky_note\ntitle: Sky note\ndescription: A note.\n"
                                   "version: 1.0.0\n")  # fmt: skip
    note = RECORDING.format(name="Note", point="before_main_llm_call", body=BEFORE_CALL)
    _write(plugin / "extensions" / "python" / "before_main_llm_call" / "_10_note.py", note)
    llm.script(Reply(answer("Noted.")), Reply(answer("Plain.")))
    context = make_context()
    assert context.communicate(UserMessage("Hi")).result(30) == "Noted."
    assert "A0-EXTENSION-NOTE" in chat_calls(llm)[-1].messages[-1]["content"]
    switch("sky_note", False)
    assert context.communicate(UserMessage("Again")).result(30) == "Plain."
    assert "A0-EXTENSION-NOTE" not in chat_calls(llm)[-1].messages[-1]["content"]


NOTE = textwrap.dedent("""
    from helpers.extension import Extension

    class Note(Extension):
        async def execute(self, **kwargs):
            self.agent.data["noted"] = self.agent.data.get("noted", 0) + 1
""")


def test_a_utility_call_between_runs_finds_the_extensions_as_they_are(
    make_context, llm, usr_dir, runtime
):
    # A step's points share one look at the files; a call between runs looks anew.
    path = usr_dir / "extensions" / "util_model_call_before" / "_10_note.py"
    path.parent.mkdir(parents=True)
    path.write_text(NOTE)
    llm.add_rule(model_is("util-model"), Reply("ok"))
    llm.script(Reply(answer("Hello.")))
    context = make_context()
    assert context.communicate(UserMessage("Hi")).result(30) == "Hello."
    path.unlink()  # the admin removes it between two runs
    runtime.submit(context.agent0.ctx.call_utility_model("sys", "msg")).result(30)
    assert [i.content for i in context.log.items if i.type == "warning"] == []


def test_a_broken_extension_is_listed_as_not_run_with_why(usr_dir):
    path = usr_dir / "extensions" / "monologue_start" / "_05_broken.py"
    path.parent.mkdir(parents=True)
    path.write_text("this is not python (\n")
    [entry] = extension_status("")
    assert entry["state"].startswith("not run: extension file") and "SyntaxError" in entry["state"]
