#!/usr/bin/env python3
"""Set up what is missing, then start Cadre or run its tests.

    python3 cadre.py start [run_ui.py options]   # the app
    python3 cadre.py test  [pytest options]      # every test
    python3 cadre.py lock                        # refresh the locks (on purpose, own commit)
    python3 cadre.py import-agent-zero <usr> [--overwrite]  # an Agent Zero user moves in
    python3 cadre.py backup [path] [--parts ...] [--secrets]  # usr/ into a zip
    python3 cadre.py restore <zip> [--parts ...] [--secrets] [--preview] [--yes]
    python3 cadre.py replay CHAT_ID [--tools recorded] [--on-difference live]
    python3 cadre.py eval SUITE --profile P [--model M] [--repeat N] [--against OLD.json]

Needs only Python 3.11+ and the package registries: it makes `.venv/`,
installs the exact versions the lock files name (again only when a lock
changes), and for the tests Debian's Chromium, bubblewrap and redis-server
when they are missing and this user may install them. Standard library only: it
runs before anything is installed.

The locks: `requirements.lock` (what `start` needs) and
`requirements-test.lock` (that and the test tools) pin every package, the
dependencies' dependencies too, to one version and the sha256 of the file
CI installed, so a newcomer next month gets what was tested, not what was
published that morning. They are made for one platform (named in their first
line); elsewhere the same versions are installed without the hash check.
`pyproject.toml` keeps the ranges Cadre works with; `lock` resolves them anew.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
STAMP = VENV / ".cadre-setup-stamp"
CHROMIUM = Path("/usr/bin/chromium")
LOCKS = {False: ROOT / "requirements.lock", True: ROOT / "requirements-test.lock"}


def say(message: str) -> None:
    print(f"[cadre] {message}", flush=True)


def venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def requirements(with_tests: bool) -> list[str]:
    import tomllib  # 3.11+; imported late so older Pythons reach the version message

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"])
    if with_tests:
        wanted += project["optional-dependencies"]["test"]
    return wanted


def apt_install(*packages: str) -> bool:
    """Install Debian packages when this user may; False when that is not possible here."""
    if not (shutil.which("apt-get") and hasattr(os, "geteuid") and os.geteuid() == 0):
        return False
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-q"], check=True, env=env)
    return subprocess.run(["apt-get", "install", "-y", "-q", *packages], env=env).returncode == 0


def pip_install() -> list[str]:
    """`pip install` of the virtualenv, quiet."""
    return [str(venv_python()), "-m", "pip", "install", "--disable-pip-version-check", "-q"]


def create_venv() -> None:
    say("creating .venv")
    made = subprocess.run([sys.executable, "-m", "venv", str(VENV)])
    if made.returncode == 0 and venv_python().exists():
        return
    # Debian and Ubuntu ship venv's pip support (ensurepip) in a separate package.
    shutil.rmtree(VENV, ignore_errors=True)
    versioned = f"python{sys.version_info.major}.{sys.version_info.minor}-venv"
    if apt_install(versioned) or apt_install("python3-venv"):
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        return
    say(f"cannot create a virtualenv: install {versioned} (or python3-venv), then run me again")
    raise SystemExit(2)


def platform_tag() -> str:
    """What a lock's hashes fit: the interpreter, its version, the OS and the machine."""
    version = f"{sys.implementation.name}{sys.version_info.major}{sys.version_info.minor}"
    return f"{version}-{sys.platform}-{platform.machine().lower()}"


def lock_header(lines: list[str]) -> str:
    return f"# for: {platform_tag()}\n# made by `python3 cadre.py lock` from pyproject.toml\n" + (
        "\n".join(lines) + "\n"
    )


def locked_for_here(lock: Path) -> bool:
    first = lock.read_text().splitlines()[0] if lock.exists() else ""
    return first == f"# for: {platform_tag()}"


def pins_only(lock: Path, target: Path) -> Path:
    """The lock's exact versions without their hashes (for another platform)."""
    # Without the extras: the pins serve as constraints too, and those may name none.
    pins = [  # the pin and its marker, if any, without the extras (`httpx[http2]` -> httpx)
        re.sub(r"\[[^\]]*\]", "", line.split(" --hash")[0], count=1)
        for line in lock.read_text().splitlines()
        if "==" in line
    ]
    pins = list(dict.fromkeys(pins))  # a package locked with extras is locked plainly too
    target.write_text("\n".join(pins) + "\n")
    return target


def installed_stamps() -> list[str]:
    return STAMP.read_text().split() if STAMP.exists() else []


def stamp_of(lock: Path) -> str:
    return hashlib.sha256(lock.read_bytes()).hexdigest()


def needs_install(with_tests: bool, stamps: list[str]) -> bool:
    """True unless this lock (or the test lock, which holds it) was installed already."""
    wanted = {stamp_of(LOCKS[with_tests])}
    if not with_tests:
        wanted.add(stamp_of(LOCKS[True]))  # the test lock pins the app's packages too
    return not wanted & set(stamps)


def ensure_venv(with_tests: bool) -> None:
    if not venv_python().exists():
        create_venv()
    stamps = installed_stamps()
    if not needs_install(with_tests, stamps):
        return
    lock = LOCKS[with_tests]
    say("installing dependencies (this takes a few minutes once)")
    pip = pip_install()
    with tempfile.TemporaryDirectory() as scratch:
        if locked_for_here(lock):
            subprocess.run([*pip, "--require-hashes", "-r", str(lock)], check=True)
        else:
            say(f"the locks are made for another platform than {platform_tag()}: "
                "installing their versions without the hash check")  # fmt: skip
            subprocess.run([*pip, "-r", str(pins_only(lock, Path(scratch) / "p.txt"))], check=True)
    STAMP.write_text("\n".join([*stamps, stamp_of(lock)]) + "\n")


def resolve(wanted: list[str], constraints: Path | None) -> list[str]:
    """Pinned lines with hashes for `wanted`, as pip resolves them today."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        command = [
            *pip_install(), "--dry-run", "--ignore-installed", "--report", str(report), *wanted,
        ]  # fmt: skip
        if constraints is not None:
            command += ["-c", str(constraints)]
        subprocess.run(command, check=True)
        chosen = json.loads(report.read_text())["install"]
    extras, markers = extras_asked(chosen), markers_of(wanted)
    lines = []
    for item in sorted(chosen, key=lambda i: i["metadata"]["name"].lower()):
        meta, archive = item["metadata"], item["download_info"].get("archive_info", {})
        digest = archive.get("hashes", {}).get("sha256") or archive.get("hash", "").split("=")[-1]
        asked = extras.get(canonical(meta["name"]))
        # A wish of pyproject's for some platforms keeps its marker: elsewhere it is skipped.
        marker = markers.get(canonical(meta["name"]))
        pin = f"=={meta['version']}{f' ; {marker}' if marker else ''} --hash=sha256:{digest}"
        # With its extras, and plainly too: pip's hash mode calls a plain wish for it "not
        # pinned" when met before the pin with extras while the index has a newer release.
        if asked:
            lines.append(f"{meta['name']}[{','.join(sorted(asked))}]{pin}")
        lines.append(f"{meta['name']}{pin}")
    return lines


def markers_of(wanted: list[str]) -> dict[str, str]:
    """{package: its environment marker} of the wishes that have one, quoted as pip writes
    them ("gunicorn>=25.0; sys_platform != 'win32'": sys_platform != "win32")."""
    found = {}
    for wish in wanted:
        head, _, marker = wish.partition(";")
        if marker.strip():
            name = re.match(r"\s*([A-Za-z0-9._-]+)", head)
            if name:
                found[canonical(name.group(1))] = marker.strip().replace("'", '"')
    return found


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def extras_asked(chosen: list[dict]) -> dict[str, set[str]]:
    """{package: extras asked of it} (litellm wants `httpx[http2]`), from pip's report.

    pip's hash mode calls such a wish "not pinned" unless the lock names the extra on the
    pin. A wish counts where its marker holds here, for the asking package as installed
    (with the extras asked of it in turn: a wish under an extra counts once that extra is
    asked). Markers are read by the packaging library pip carries, in the virtualenv."""
    items = [
        {
            "name": item["metadata"]["name"],
            "requires": item["metadata"].get("requires_dist", []),
            "requested": item.get("requested_extras", []),
        }
        for item in chosen
    ]
    found = subprocess.run(
        [str(venv_python()), "-c", EXTRAS_SCRIPT],
        input=json.dumps(items), capture_output=True, text=True, check=True,
    )  # fmt: skip
    return {name: set(extras) for name, extras in json.loads(found.stdout).items()}


#: Run by the virtualenv's Python: extras asked of each package, until none is added.
EXTRAS_SCRIPT = """
import json, sys
from pip._vendor.packaging.requirements import Requirement
from pip._vendor.packaging.utils import canonicalize_name as canonical
items = json.load(sys.stdin)
asked = {canonical(item["name"]): set(item["requested"]) for item in items}
grown = True
while grown:
    grown = False
    for item in items:
        own = asked[canonical(item["name"])] | {""}
        for wish in map(Requirement, item["requires"]):
            target = canonical(wish.name)
            if not wish.extras or target not in asked or wish.extras <= asked[target]:
                continue
            if wish.marker is None or any(wish.marker.evaluate({"extra": e}) for e in own):
                asked[target] |= wish.extras
                grown = True
print(json.dumps({name: sorted(extras) for name, extras in asked.items() if extras}))
"""


def write_locks() -> None:
    """Resolve pyproject.toml anew into both locks (the test lock holds the app's pins)."""
    if not venv_python().exists():
        create_venv()
    app = resolve(requirements(with_tests=False), None)
    LOCKS[False].write_text(lock_header(app))
    with tempfile.TemporaryDirectory() as scratch:
        pins = pins_only(LOCKS[False], Path(scratch) / "pins.txt")
        test = resolve(requirements(with_tests=True), pins)
    LOCKS[True].write_text(lock_header(test))
    say(f"wrote {LOCKS[False].name} ({len(app)} packages) and {LOCKS[True].name} ({len(test)})")


def run(target: list[str]) -> int:
    """Run the app or the tests; Ctrl-C is theirs to handle (the terminal sends it to both)."""
    if os.name != "posix":
        child = subprocess.Popen(target)
        while True:
            try:
                return child.wait()
            except KeyboardInterrupt:
                continue  # the child got the same Ctrl-C: wait for it to save and end
    # Ignored here from before the child starts (it may be running, and the Ctrl-C come,
    # before Popen returns: a traceback here), back to the default in the child.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return subprocess.Popen(target, preexec_fn=_ctrl_c_default).wait()
    finally:
        signal.signal(signal.SIGINT, previous)


def _ctrl_c_default() -> None:
    """In the child, before its program starts: Ctrl-C as a program expects it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


#: Debian packages the tests use: the program each gives, and what is lost without it.
TEST_PACKAGES = {
    "chromium": (str(CHROMIUM), "browser tests will be skipped"),
    "bubblewrap": ("bwrap", "sandbox tests will be skipped"),  # the code sandbox too
    # Cluster mode's tests start real Redis servers (tests/support/redis_server.py).
    "redis-server": ("redis-server", "cluster tests will be skipped"),
    # Plugins install from git repositories (profiles/plugin_install.py): local ones in tests.
    "git": ("git", "tests of plugins from git repositories will be skipped"),
}


def ensure_test_packages() -> None:
    """Debian's Chromium (Playwright cannot download one here), bubblewrap, Redis and git,
    installed together when missing (one `apt-get update`)."""
    missing = [name for name, (program, _) in TEST_PACKAGES.items() if not shutil.which(program)]
    if not missing:
        return
    say(f"installing Debian {' and '.join(missing)} for the tests")
    if not apt_install(*missing):
        for name in missing:
            say(f"{name} is missing and cannot be installed here: {TEST_PACKAGES[name][1]}")


def allow_builtin_model_download() -> None:
    """Let the app fetch the built-in model's parts (1.1 GB, once) when it needs them.

    The app does it in the background, so the page works meanwhile and shows how
    far it is; only `start` allows it (the tests never download it).
    """
    from models.builtin_model import BUILTIN, DOWNLOAD_ENV, model_file

    os.environ[DOWNLOAD_ENV] = "1"
    usr = Path(os.environ.get("CADRE_USR_DIR") or ROOT / "usr")
    if not model_file(usr).exists():
        say(f"the built-in model ({BUILTIN.size / 1e9:.1f} GB) is downloaded on first use, in "
            "the background: the page works meanwhile and shows how far it is")  # fmt: skip


def test_processes(rest: list[str]) -> list[str]:
    """pytest-xdist's options: a test process per core and one more (at most 4), a module's
    tests kept together in one (they share a server); none when the command chose its own.
    The one more because much of a test's time is a wait (a server starting, a browser, a
    subprocess): on 2 cores, 3 processes ran the suite in 504 s where 2 took 704 s (both
    beside other work). Modules are handed out in the suite's own order (tests/conftest.py:
    the longest first), not xdist's (most tests first), which left the longest modules,
    of few tests, to start last."""
    chosen = ("-n", "--numprocesses", "--dist")
    own = any(arg.startswith(chosen) or arg.endswith("no:xdist") for arg in rest)  # -pno:xdist too
    cores = os.cpu_count() or 1
    workers = min(cores + 1, 4)
    return [] if own or cores < 2 else [
        "-n", str(workers), "--dist", "loadfile", "--no-loadscope-reorder",
    ]  # fmt: skip


def main(argv: list[str]) -> int:
    if sys.version_info < (3, 11):  # noqa: UP036 - a clear message on an old Python
        say("Cadre needs Python 3.11 or newer")
        return 2
    command, rest = (argv[0], argv[1:]) if argv else ("start", [])
    if command == "start":
        ensure_venv(with_tests=False)
        allow_builtin_model_download()
        target = [str(venv_python()), str(ROOT / "run_ui.py"), *rest]
    elif command == "test":
        ensure_venv(with_tests=True)
        ensure_test_packages()
        target = [str(venv_python()), "-m", "pytest", *test_processes(rest), *rest]
    elif command == "lock":
        write_locks()
        return 0
    elif command == "import-agent-zero":  # store/agent_zero/usr.py
        ensure_venv(with_tests=False)
        target = [str(venv_python()), "-m", "scheduler.agent_zero", *rest]
    elif command in ("backup", "restore"):  # store/backup/cli.py
        ensure_venv(with_tests=False)
        # Run from where the user is: the paths they give are theirs, not Cadre's folder's.
        os.environ["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])
        )
        return run([str(venv_python()), "-m", "store.backup.cli", command, *rest])
    elif command == "replay":  # server/replay_cli.py: a saved chat replayed into a new one
        ensure_venv(with_tests=False)
        os.chdir(ROOT)
        return run([str(venv_python()), "-m", "server.replay_cli", *rest])
    elif command == "eval":  # evals/cli.py
        ensure_venv(with_tests=False)
        # Run from where the user is: the suite's path is theirs, not Cadre's folder's.
        os.environ["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])
        )
        return run([str(venv_python()), "-m", "evals.cli", *rest])
    else:
        say(f"unknown command {command!r}: use 'start', 'test', 'lock', 'import-agent-zero',"
            " 'backup', 'restore', 'replay' or 'eval'")  # fmt: skip
        return 2
    os.chdir(ROOT)
    return run(target)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
