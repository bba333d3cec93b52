#!/usr/bin/env python3
"""Set up what is missing, then start Cadre or run its tests.

    python3 cadre.py start [run_ui.py options]   # the app
    python3 cadre.py test  [pytest options]      # every test

Needs only Python 3.11+ and the package registries: it makes `.venv/`,
installs the dependencies named in pyproject.toml (again only when that file
changes), and for the tests Debian's Chromium when it is missing and this
user may install it. Standard library only: it runs before anything is
installed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
STAMP = VENV / ".cadre-setup-stamp"
CHROMIUM = Path("/usr/bin/chromium")


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


def ensure_venv(with_tests: bool) -> None:
    if not venv_python().exists():
        create_venv()
    wanted = requirements(with_tests)
    digest = hashlib.sha256("\n".join(wanted).encode()).hexdigest()
    done = STAMP.read_text().split() if STAMP.exists() else []
    if digest in done:
        return
    say("installing dependencies (first run only)")
    pip = [str(venv_python()), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, *wanted], check=True)
    STAMP.write_text("\n".join([*done, digest]) + "\n")


def ensure_chromium() -> None:
    """Debian's Chromium for the browser tests (Playwright cannot download one here)."""
    if CHROMIUM.exists():
        return
    say("installing Debian chromium for the browser tests")
    if not apt_install("chromium"):
        say(f"{CHROMIUM} is missing and cannot be installed here: browser tests will be skipped")


def main(argv: list[str]) -> int:
    if sys.version_info < (3, 11):  # noqa: UP036 - a clear message on an old Python
        say("Cadre needs Python 3.11 or newer")
        return 2
    command, rest = (argv[0], argv[1:]) if argv else ("start", [])
    if command == "start":
        ensure_venv(with_tests=False)
        target = [str(venv_python()), str(ROOT / "run_ui.py"), *rest]
    elif command == "test":
        ensure_venv(with_tests=True)
        ensure_chromium()
        target = [str(venv_python()), "-m", "pytest", *rest]
    else:
        say(f"unknown command {command!r}: use 'start' or 'test'")
        return 2
    os.chdir(ROOT)
    return subprocess.run(target).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
