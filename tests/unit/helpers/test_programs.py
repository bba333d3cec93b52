"""The rule for programs the host runs (helpers/programs.py), on real files and links:
every step of the way to the program is checked, the PATH lookup included, and an MCP
server's folder, file arguments and loader variables."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from helpers.mcp_config import StdioServer
from helpers.programs import (
    ProgramRefused,
    check_mcp_server,
    check_model_file,
    check_program,
    check_settings,
    guarded_changes,
    mcp_problem,
    places,
    program_problem,
    refusal,
)
from helpers.settings import Settings


def executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def work(tmp_path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


@pytest.fixture
def writable(work) -> list[tuple[Path, str]]:
    return [(work.resolve(), "the work folder")]


def test_a_program_is_refused_in_the_place_or_through_a_link_there(tmp_path, work, writable):
    inside = executable(work / "tool")
    assert "lies in the work folder" in program_problem(str(inside), writable)
    outside = executable(tmp_path / "bin" / "tool")
    assert program_problem(str(outside), writable) == ""
    # A link outside to the work folder: where it leads counts.
    (tmp_path / "bin" / "to-work").symlink_to(inside)
    assert "leading to" in program_problem(str(tmp_path / "bin" / "to-work"), writable)
    # A link inside the work folder to a program outside: the link could be swapped.
    (work / "to-outside").symlink_to(outside)
    assert "is reached through" in program_problem(str(work / "to-outside"), writable)
    # A folder on the way that is a link through the work folder.
    (tmp_path / "via").symlink_to(work)
    assert program_problem(str(tmp_path / "via" / "tool"), writable)
    # '..' is taken after the link it follows, as the kernel does.
    (work / "up").symlink_to(tmp_path / "bin")
    assert program_problem(str(work / "up" / ".." / "bin" / "tool"), writable)
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    assert "cannot be followed" in program_problem(str(loop), writable)


def test_dot_dot_and_relative_links_are_followed_as_the_kernel_does(tmp_path, work, writable):
    """`..` climbs from where the path really is, into the work folder too; a relative link
    leads on from the link's own folder."""
    executable(work / "tool")
    (tmp_path / "other").mkdir()
    climbing = tmp_path / "other" / ".." / "work" / "tool"
    assert "lies in the work folder" in program_problem(str(climbing), writable)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "relative").symlink_to("../work/tool")
    assert "leading to" in program_problem(str(tmp_path / "bin" / "relative"), writable)


def test_a_path_may_pass_as_many_links_as_the_kernel_follows_and_no_more(tmp_path, writable):
    program = executable(tmp_path / "bin" / "tool")
    chain = [program]
    for number in range(41):  # link n leads to link n-1, the first to the program
        chain.append(tmp_path / f"link{number}")
        chain[-1].symlink_to(chain[-2])
    assert program_problem(str(chain[40]), writable) == ""  # 40 links on the way
    assert "more than 40 links" in program_problem(str(chain[41]), writable)


def test_a_program_named_without_a_folder_is_looked_up_in_cadres_path(usr_dir, monkeypatch):
    monkeypatch.setenv("PATH", f"{usr_dir / 'workdir'}:/usr/bin")
    with pytest.raises(ProgramRefused, match=r"workdir of PATH, where 'chromium' is looked for"):
        check_program("chromium", "browser_executable")


def test_the_path_lookup_counts_every_folder_tried_before_the_program(tmp_path, work, writable):
    bin_folder = tmp_path / "bin"
    executable(bin_folder / "tool")
    assert program_problem("tool", writable, f"{bin_folder}:/usr/bin") == ""
    # A work folder before the program's folder: an agent's file of that name would win.
    refused = program_problem("tool", writable, f"{work}:{bin_folder}")
    assert f"the folder {work} of PATH" in refused
    # Not found: a work folder on the PATH is where an agent could put it.
    assert program_problem("missing-tool", writable, f"/usr/bin:{work}")
    assert program_problem("missing-tool", writable, "/usr/bin") == ""  # missing: said later


def test_an_mcp_servers_folder_file_arguments_and_loader_variables(tmp_path, work, writable):
    script = work / "server.py"
    script.write_text("print()")
    system = "/bin/sh"

    def problem(**fields: object) -> str:
        return mcp_problem(StdioServer.model_validate({"command": system, **fields}), writable)

    assert problem(args=["-c", "exit 0", str(work)]) == ""  # a folder to serve: data, not code
    assert "its argument" in problem(args=[str(script)])
    assert "its argument" in problem(args=[f"--script={script}"])
    assert "its argument" in problem(args=["work/server.py"], cwd=str(tmp_path))
    assert "cwd" in problem(cwd=str(work))
    assert "PYTHONPATH" in problem(env={"PYTHONPATH": f"/usr/lib:{work}"})
    assert "LD_PRELOAD" in problem(env={"LD_PRELOAD": str(script)})
    assert "PATH" in problem(env={"PATH": f"/usr/bin:{work}"})
    assert problem(env={"MODE": str(script)}) == ""  # not a variable that loads code


def test_an_mcp_servers_command_is_looked_up_with_its_own_path_and_folder(
    tmp_path, work, writable, monkeypatch
):
    """The command itself: in a place of the agents', named from the server's folder
    (`cwd`), or found through the server's own PATH as a link there; and Cadre's PATH,
    which the server inherits when its `env` names none."""
    program = executable(work / "srv")
    bin_folder = tmp_path / "bin"
    bin_folder.mkdir()
    (bin_folder / "srv-link").symlink_to(program)

    def problem(command: str, **fields: object) -> str:
        return mcp_problem(StdioServer.model_validate({"command": command, **fields}), writable)

    assert f"{program} lies in the work folder" in problem(str(program))
    assert f"{program} lies in the work folder" in problem("work/srv", cwd=str(tmp_path))
    assert "leading to" in problem("srv-link", env={"PATH": str(bin_folder)})
    monkeypatch.setenv("HOME", str(tmp_path))  # a loader variable's `~` is a home's
    assert "~/work in its PYTHONPATH" in problem("/bin/sh", env={"PYTHONPATH": "~/work"})
    monkeypatch.setenv("PATH", f"/usr/bin:{work}")
    assert f"{work} in its PATH" in problem("/bin/sh")


def test_places_are_usr_the_work_folders_and_every_projects_named_folder(usr_dir, tmp_path):
    named = tmp_path / "named"
    (usr_dir / "projects" / "p").mkdir(parents=True)
    (usr_dir / "projects" / "p" / "settings.json").write_text(json.dumps({"work_dir": str(named)}))
    (usr_dir / "projects" / "broken").mkdir()
    (usr_dir / "projects" / "broken" / "settings.json").write_text("{")
    # Damaged ones sorted first (too large, a folder that is no text) hide no later project.
    (usr_dir / "projects" / "a-large").mkdir()
    (usr_dir / "projects" / "a-large" / "settings.json").write_text(" " * 256 * 1024 + "{}")
    (usr_dir / "projects" / "a-number").mkdir()
    (usr_dir / "projects" / "a-number" / "settings.json").write_text('{"work_dir": 5}')
    chat = tmp_path / "chat-work"
    found = dict(places(Settings(work_dir=str(chat))))
    assert found[usr_dir.resolve()] == "usr/"
    assert found[named.resolve()] == "project p's work folder"
    assert found[chat.resolve()] == f"the work folder {chat}"
    assert len(found) == 3


def test_a_refusal_names_the_variable_that_set_it(usr_dir, monkeypatch, caplog):
    program = executable(usr_dir / "workdir" / "bwrap")
    with pytest.raises(ProgramRefused) as refused:  # set in Settings: no variable to name
        check_program(str(program), "code_exec_bwrap")
    assert str(refused.value) == (
        f"code_exec_bwrap: {program} lies in usr/, a place where an agent could have written"
        " it, so the host never runs it; name one installed outside usr/ and every work"
        " folder (e.g. in /usr/bin)"
    )
    assert caplog.messages == [f"refused to run a program: {refused.value}"]
    monkeypatch.setenv("CADRE_CODE_EXEC_BWRAP", str(program))
    with pytest.raises(ProgramRefused, match="set by CADRE_CODE_EXEC_BWRAP") as refused:
        check_program(str(program), "code_exec_bwrap")
    assert refused.value.setting == "code_exec_bwrap"
    assert refused.value.for_form().startswith("code_exec_bwrap: ")


def test_the_guarded_changes_are_programs_the_sandbox_and_servers_that_would_start():
    before = Settings()
    server = json.dumps({"mcpServers": {"s": {"command": "sh", "args": ["-c", "exit"]}}})
    remote = json.dumps({"mcpServers": {"r": {"url": "http://127.0.0.1:9/mcp"}}})
    off = json.dumps({"mcpServers": {"s": {"command": "sh", "disabled": True}}})
    assert guarded_changes(before, Settings(budget_calls=3)) == []
    assert guarded_changes(before, Settings(code_exec_sandbox="none")) == ["code_exec_sandbox"]
    assert guarded_changes(before, Settings(mcp_servers=server)) == ["mcp_servers"]
    assert guarded_changes(before, Settings(mcp_servers=remote)) == []  # runs nothing here
    assert guarded_changes(before, Settings(mcp_servers=off)) == []
    assert guarded_changes(Settings(mcp_servers=server), before) == []  # taken out


def test_saved_settings_are_checked_program_by_program(usr_dir, tmp_path):
    """Each setting that names a program or a model file, and each MCP server started as a
    command (not a disabled one), is refused in usr/; the refusal names its setting."""
    program = executable(usr_dir / "workdir" / "tool")
    model = usr_dir / "workdir" / "model.gguf"
    model.write_bytes(b"GGUF")
    check_settings(Settings(browser_executable="/bin/sh", local_model_path=""))
    for field, value in (("code_exec_bwrap", str(program)), ("browser_executable", str(program)),
                         ("local_model_path", str(model))):  # fmt: skip
        with pytest.raises(ProgramRefused, match=f"^{field}: {value} lies in usr/") as refused:
            check_settings(Settings(**{field: value}))
        assert refused.value.setting == field
    server = {"mcpServers": {"s": {"command": str(program)}}}
    with pytest.raises(ProgramRefused, match="^the MCP server 's': .* lies in usr/") as refused:
        check_settings(Settings(mcp_servers=json.dumps(server)))
    assert refused.value.setting == "mcp_servers"
    server["mcpServers"]["s"]["disabled"] = True
    check_settings(Settings(mcp_servers=json.dumps(server)))  # starts nothing


def test_the_work_folder_being_left_counts_when_settings_are_saved(tmp_path):
    """Agents wrote in the old work folder until now: a program there is refused though the
    new settings name another work folder."""
    old, new = tmp_path / "old", tmp_path / "new"
    new.mkdir()
    program = executable(old / "tool")
    after = Settings(work_dir=str(new), browser_executable=str(program))
    check_settings(after)
    with pytest.raises(ProgramRefused, match=f"lies in the work folder {old}"):
        check_settings(after, Settings(work_dir=str(old)))


def test_the_checks_at_use_refuse_what_saving_would(usr_dir, tmp_path):
    """Where a program starts (the sandbox, the browser, the local model, an MCP server),
    the same rule: a setting may come from a restore, a hand or the environment."""
    program = executable(usr_dir / "workdir" / "tool")
    model = usr_dir / "workdir" / "model.gguf"
    model.write_bytes(b"GGUF")
    assert refusal(Settings(code_exec_bwrap=str(program)), "code_exec_bwrap").startswith(
        f"code_exec_bwrap: {program} lies in usr/"
    )
    assert refusal(Settings(code_exec_bwrap="/bin/sh"), "code_exec_bwrap") == ""
    with pytest.raises(ProgramRefused, match=f"^local_model_path: {model} lies in usr/"):
        check_model_file(str(model))
    check_model_file("")  # no file named: the built-in model
    check_model_file(str(tmp_path / "elsewhere.gguf"))
    config = StdioServer(command=str(program))
    with pytest.raises(ProgramRefused, match="^the MCP server 'tools': .* lies in usr/"):
        check_mcp_server("tools", config)
    check_mcp_server("tools", StdioServer(command="/bin/sh"))


def test_the_work_folder_of_the_settings_in_use_counts_at_use_and_when_saved(tmp_path):
    """A chat's or project's settings name their own work folder: a program or model file
    there is refused, though the settings saved for Cadre name another."""
    chat = tmp_path / "chat-work"
    program = executable(chat / "tool")
    model = chat / "model.gguf"
    model.write_bytes(b"GGUF")
    settings = Settings(work_dir=str(chat))
    assert "lies in the work folder" in refusal(
        settings.model_copy(update={"code_exec_bwrap": str(program)}), "code_exec_bwrap"
    )
    with pytest.raises(ProgramRefused, match="lies in the work folder") as refused:
        check_model_file(str(model), settings)
    assert refused.value.setting == "local_model_path"
    with pytest.raises(ProgramRefused, match="lies in the work folder") as refused:
        check_mcp_server("tools", StdioServer(command=str(program)), settings)
    assert refused.value.setting == "mcp_servers"
    with pytest.raises(ProgramRefused, match="lies in the work folder"):
        check_settings(settings.model_copy(update={"browser_executable": str(program)}))
