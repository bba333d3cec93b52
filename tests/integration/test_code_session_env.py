"""What a code session's environment holds: the basics, the setting's additions, no keys."""

from __future__ import annotations

from tests.integration.test_code_execution import body, code, run

#: What bash sets by itself in every shell.
BASH_OWN = {"PWD", "OLDPWD", "SHLVL", "_"}


def test_a_session_starts_with_a_minimal_environment(make_context, llm, monkeypatch):
    """Unconfined (the sandbox's environment: tests/integration/test_sandbox.py)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-leak")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-leak")
    monkeypatch.setenv("CADRE_X", "cadre-own-leak")
    monkeypatch.setenv("SOME_TOOL_CONFIG", "from-cadre-environment")
    monkeypatch.setenv("LC_TIME", "C")
    _, seen = run(
        make_context, llm,
        code("terminal", "env | sort"),
        code("python", "import os\nsorted(k for k in os.environ if 'KEY' in k or 'CADRE' in k)"),
        code_exec_env={"PROJECT_TOKEN": "granted", "PATH": "/opt/tools/bin:/usr/bin:/bin"},
        code_exec_sandbox="none",
    )  # fmt: skip
    shell, python = map(body, seen)
    variables = dict(line.split("=", 1) for line in shell.splitlines() if "=" in line)
    for leak in ("sk-openai-leak", "sk-ant-leak", "cadre-own-leak", "from-cadre-environment"):
        assert leak not in shell
    assert variables["PROJECT_TOKEN"] == "granted"
    assert variables["PATH"] == "/opt/tools/bin:/usr/bin:/bin"  # the setting has the last word
    assert variables["LC_TIME"] == "C" and variables["HOME"] and variables["PAGER"] == "cat"
    allowed = {
        "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TZ", "TMPDIR",
        "PAGER", "GIT_PAGER", "HISTFILE", "NO_COLOR", "PYTHONUNBUFFERED", "PYTHONIOENCODING",
        "CADRE_SESSION", "PROJECT_TOKEN",
    }  # fmt: skip
    unexpected = {n for n in variables if n not in allowed | BASH_OWN and not n.startswith("LC_")}
    assert unexpected == set()
    assert python == "['CADRE_SESSION']"  # the session's own marker only
