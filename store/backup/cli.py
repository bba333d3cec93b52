"""`python3 cadre.py backup [path]` and `python3 cadre.py restore <zip>`.

    backup [path] [--parts chats,settings,...] [--secrets]
    restore <zip> [--parts ...] [--secrets] [--preview] [--yes]

A backup goes to `path` (a zip, or a folder to put `cadre-backup-<time>.zip`
in; default: the current folder). A restore shows what the backup holds and
what it would replace, asks (unless `--yes`), then restores; it refuses
while Cadre runs on the same `usr/`.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path
from typing import TextIO

from helpers.errors import UserError
from helpers.files import usr_dir
from store.backup import swap
from store.backup.make import make_backup
from store.backup.parts import PARTS, SECRETS, default_parts
from store.backup.restore import Preview, preview, restore_backup

SECRETS_WARNING = (
    "WARNING: with --secrets the zip holds your API keys, the login password's hash and your"
    " secrets in clear: keep it as safe as a password."
)


def _files(count: int) -> str:
    return f"{count} file{'' if count == 1 else 's'}"


def _size(count: int) -> str:
    return f"{count / 2**20:.1f} MB" if count >= 2**20 else f"{count / 1024:.1f} KB"


def _parts(raw: str | None, secrets: bool) -> list[str] | None:
    names = [name.strip() for name in raw.split(",") if name.strip()] if raw else None
    if secrets:
        names = [*(names or default_parts()), SECRETS]
    return names


def default_target(path: Path | None) -> Path:
    name = f"cadre-backup-{time.strftime('%Y%m%d-%H%M%S')}.zip"
    if path is None:
        return Path.cwd() / name
    return path / name if path.is_dir() else path


def show(found: Preview, out: TextIO) -> None:
    made = time.strftime("%Y-%m-%d %H:%M", time.localtime(found.created_at))
    out.write(f"Backup made {made}{', with secrets' if found.secrets else ''}.\n")
    for row in found.parts:
        chats = f" ({row.backup_chats} chats)" if row.name == "chats" else ""
        now = f" ({row.current_chats} chats)" if row.name == "chats" else ""
        out.write(
            f"  {row.label}: {_files(row.backup_files)}, {_size(row.backup_bytes)}{chats};"
            f" replaces {_files(row.current_files)}, {_size(row.current_bytes)}{now}\n"
        )


def _backup(args: argparse.Namespace, out: TextIO) -> int:
    parts = _parts(args.parts, args.secrets) or default_parts()
    if SECRETS in parts:
        out.write(SECRETS_WARNING + "\n")
    target = default_target(args.path)
    try:
        result = make_backup(target, parts)
    except OSError as exc:  # a folder that is a file, no room, no right to write there
        raise UserError(f"cannot make the backup {target}: {exc}") from None
    out.write(f"Backed up {', '.join(result.parts)} of {usr_dir()}: {_files(result.files)},"
              f" {_size(result.bytes)} to {result.path}\n")  # fmt: skip
    for skipped in result.skipped:
        out.write(f"  left out (a link or special file): {skipped}\n")
    return 0


def _restore(args: argparse.Namespace, out: TextIO) -> int:
    swap.recover()
    found = preview(args.zip)
    show(found, out)
    if args.preview:
        return 0
    parts = _parts(args.parts, args.secrets)
    if parts and SECRETS in parts:
        out.write("The secrets of the backup replace this Cadre's API keys, password and"
                  " secrets.\n")  # fmt: skip
    if not args.yes:
        out.write(f"Replace these parts of {usr_dir()}? [y/N] ")
        out.flush()
        if sys.stdin.readline().strip().lower() not in ("y", "yes"):
            out.write("Nothing was changed.\n")
            return 1
    result = restore_backup(args.zip, parts)
    out.write(f"Restored {', '.join(result.parts)} into {usr_dir()}: {_files(result.files)}.\n")
    return 0


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="cadre.py", description="Back up or restore usr/")
    commands = parser.add_subparsers(dest="command", required=True)
    names = ", ".join(part.name for part in PARTS if part.name != SECRETS)
    backup = commands.add_parser("backup", help="write a zip of usr/")
    backup.add_argument("path", nargs="?", type=Path, help="the zip, or a folder for it")
    restore = commands.add_parser("restore", help="restore usr/ from a backup zip")
    restore.add_argument("zip", type=Path)
    restore.add_argument("--preview", action="store_true", help="only show what it holds")
    restore.add_argument("--yes", action="store_true", help="do not ask before restoring")
    for command in (backup, restore):
        command.add_argument("--parts", help=f"comma-separated, of: {names} (default: all)")
        command.add_argument("--secrets", action="store_true",
                             help="include the secrets (API keys, password, secrets)")  # fmt: skip
    return parser.parse_args(argv)


def main(argv: list[str] | None = None, out: TextIO = sys.stdout) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = parse(sys.argv[1:] if argv is None else argv)
    try:
        return _backup(args, out) if args.command == "backup" else _restore(args, out)
    except UserError as exc:
        sys.stderr.write(f"{exc}\n")
        return 2


if __name__ == "__main__":
    sys.exit(main())
