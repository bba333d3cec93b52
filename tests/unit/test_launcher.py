"""cadre.py, the launcher: locks true to pyproject.toml, no needless reinstall, a quiet Ctrl-C."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from importlib import metadata

import pytest
from packaging.requirements import Requirement

import cadre


def pins(lock):
    """{name: (version, hash)} of a lock file."""
    found = {}
    for line in lock.read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        pin, _, digest = line.partition(" --hash=sha256:")
        name, _, version = pin.partition(" ; ")[0].partition("==")  # its marker left out
        name = name.partition("[")[0]  # `httpx[http2]`: the extras a locked package asks for
        assert version and len(digest) == 64, f"not an exact pin with its hash: {line!r}"
        found[name.lower().replace("_", "-")] = (version, digest)
    return found


@pytest.mark.parametrize("with_tests", [False, True])
def test_every_requirement_is_pinned_within_its_range(with_tests):
    locked = pins(cadre.LOCKS[with_tests])
    for wanted in map(Requirement, cadre.requirements(with_tests)):
        name = wanted.name.lower().replace("_", "-")
        assert name in locked, f"{name} is missing from the lock: run `python3 cadre.py lock`"
        assert wanted.specifier.contains(locked[name][0]), f"{name} {locked[name][0]} vs {wanted}"


def test_the_test_lock_holds_the_apps_pins_unchanged():
    app, test = pins(cadre.LOCKS[False]), pins(cadre.LOCKS[True])
    assert {name: test.get(name) for name in app} == app


@pytest.mark.parametrize("with_tests", [False, True])
def test_an_extra_a_locked_package_asks_for_is_locked_with_it(with_tests):
    """pip's hash mode refuses `httpx[http2]` (litellm's wish) as "not pinned" unless the lock
    writes httpx with that extra; a fresh install failed so once a newer httpx was published.
    The lock names exactly the extras `cadre.extras_asked` finds in the installed packages,
    with those pyproject.toml asks for itself (`a2a-sdk[http-server]`)."""
    written = {}  # name: the extras its line names
    for line in cadre.LOCKS[with_tests].read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, extras = line.split("==")[0].partition("[")
            named = set(extras.rstrip("]").split(",")) - {""}
            written[cadre.canonical(name)] = written.get(cadre.canonical(name), set()) | named
    wishes = map(Requirement, cadre.requirements(with_tests))
    requested = {cadre.canonical(w.name): sorted(w.extras) for w in wishes}  # pyproject's
    installed = [
        {"metadata": {"name": name, "requires_dist": metadata.requires(name) or []},
         "requested_extras": requested.get(name, [])}
        for name in written
    ]  # fmt: skip
    asked = cadre.extras_asked(installed)
    assert {name: extras for name, extras in written.items() if extras} == asked


@pytest.mark.parametrize("with_tests", [False, True])
def test_a_package_locked_with_extras_is_locked_plainly_too(with_tests):
    """pip's hash mode also calls a plain wish for it ("httpx>=0.28.1", a2a-sdk's) "not
    pinned" when pip meets that wish before the pin with extras and the index has a newer
    release: CI's fresh install failed so on httpx 0.29.0. A plain pin beside it (same
    version, same file) holds the name itself to one version."""
    lines = [line for line in cadre.LOCKS[with_tests].read_text().splitlines()
             if line and not line.startswith("#")]  # fmt: skip
    for line in lines:
        pin, _, digest = line.partition(" --hash=")
        if "[" in pin:
            plain = re.sub(r"\[[^\]]*\]", "", pin)
            assert f"{plain} --hash={digest}" in lines, f"{pin} has no plain pin beside it"


def test_extras_follow_markers_and_extras_asked_in_turn():
    chosen = [
        {"metadata": {"name": "app", "requires_dist": ['b[x]', 'w[gui]; sys_platform == "win32"']},
         "requested_extras": ["fast"]},
        {"metadata": {"name": "b", "requires_dist": ['c[y]; extra == "x"', 'd[z]; extra == "q"']}},
        {"metadata": {"name": "app-fast", "requires_dist": []}},
        {"metadata": {"name": "c", "requires_dist": []}},
        {"metadata": {"name": "d", "requires_dist": []}},
        {"metadata": {"name": "w", "requires_dist": []}},
    ]  # fmt: skip
    # b's x is asked, so b's wish under x counts (c[y]); not d[z] (q is never asked), nor
    # w[gui] (not on this platform); app's own requested extra is named on its pin.
    assert cadre.extras_asked(chosen) == {"app": {"fast"}, "b": {"x"}, "c": {"y"}}


def test_locks_name_their_platform():
    for lock in cadre.LOCKS.values():
        assert lock.read_text().startswith("# for: cpython311-linux-x86_64\n")


def test_start_after_test_installs_nothing_again():
    """The test lock holds the app's pins: once it is installed, `start` has what it needs."""
    after_test = [cadre.stamp_of(cadre.LOCKS[True])]
    assert not cadre.needs_install(False, after_test)
    assert not cadre.needs_install(True, after_test)
    after_start = [cadre.stamp_of(cadre.LOCKS[False])]
    assert not cadre.needs_install(False, after_start)
    assert cadre.needs_install(True, after_start)
    assert cadre.needs_install(False, [])


def test_pins_only_keeps_versions_without_hashes(tmp_path):
    plain = cadre.pins_only(cadre.LOCKS[False], tmp_path / "pins.txt").read_text().splitlines()
    assert "--hash" not in " ".join(plain)
    versions = {
        pin.split("==")[0].lower().replace("_", "-"): pin.split("==")[1]
        for pin in (line.partition(" ; ")[0] for line in plain)
    }
    locked = pins(cadre.LOCKS[False])
    assert versions == {name: version.lower() for name, (version, _) in locked.items()}


def test_a_wish_for_some_platforms_keeps_its_marker_in_the_locks_and_the_pins(tmp_path):
    """moonshine_cpp has a wheel for Linux x86-64 only, gunicorn no Windows: elsewhere the
    locks' versions are installed without hashes (`pins_only`), and a pin that lost its
    marker would fail there."""
    assert cadre.markers_of(["gunicorn>=25.0; sys_platform != 'win32'", "flask>=3.0"]) == {
        "gunicorn": 'sys_platform != "win32"'
    }
    for with_tests in (False, True):
        lines = cadre.LOCKS[with_tests].read_text().splitlines()
        for wish in cadre.requirements(with_tests):
            if ";" in wish:
                name = cadre.canonical(Requirement(wish).name)
                [line] = [line for line in lines if cadre.canonical(line.split("==")[0]) == name]
                marker = str(Requirement(wish).marker)
                assert f" ; {marker} --hash=sha256:" in line, line
    plain = cadre.pins_only(cadre.LOCKS[False], tmp_path / "pins.txt").read_text().splitlines()
    assert any(p.startswith("gunicorn==") and p.endswith('; sys_platform != "win32"')
               for p in plain)  # fmt: skip
    assert any(p.startswith('moonshine_cpp==0.1.4 ; sys_platform == "linux"') for p in plain)


CHILD = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGINT, lambda *_: sys.exit(3))\n"
    "print('ready', flush=True)\n"
    "time.sleep(30)\n"
)


def test_ctrl_c_leaves_it_to_the_child_and_prints_no_traceback():
    """Ctrl-C reaches the launcher and the app alike (one process group); the app saves and
    ends with its own code, and the launcher waits for it instead of dying with a traceback."""
    launcher = f"import sys\nimport cadre\nsys.exit(cadre.run([sys.executable, '-c', {CHILD!r}]))\n"
    proc = subprocess.Popen(
        [sys.executable, "-c", launcher], cwd=cadre.ROOT, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        assert proc.stdout.readline().strip() == "ready"
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal does on Ctrl-C
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert proc.returncode == 3


#: Modules handed out whole, in the suite's order (the longest first: tests/conftest.py).
IN_ORDER = ["--dist", "loadfile", "--no-loadscope-reorder"]


@pytest.mark.parametrize(
    ("args", "added"),
    [
        ([], True),
        (["tests/unit", "-x"], True),
        (["-n", "0"], False),
        (["-n0"], False),
        (["--numprocesses=3"], False),
        (["-p", "no:xdist"], False),
        (["-pno:xdist"], False),
    ],
)
def test_the_tests_run_in_a_process_per_core_and_one_more_unless_the_command_says(
    args, added, monkeypatch
):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert cadre.test_processes(args) == (["-n", "3", *IN_ORDER] if added else [])


@pytest.mark.parametrize(("cores", "workers"), [(1, None), (2, "3"), (3, "4"), (16, "4")])
def test_the_test_processes_are_at_most_four_and_none_on_one_core(cores, workers, monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: cores)
    expected = [] if workers is None else ["-n", workers, *IN_ORDER]
    assert cadre.test_processes([]) == expected
