"""The parts of the 1.x import that read Agent Zero's files: its memory pickle, read
without running it, and its model configuration (tests/support/agent_zero_v1.py
writes both in Agent Zero's formats)."""

from __future__ import annotations

import json
import pickle

import pytest

from store.agent_zero.common import Report
from store.agent_zero.memory_pickle import read_texts
from store.agent_zero.model_config import CONFIG, read_model_config
from tests.support import agent_zero_v1 as v1


def test_the_texts_and_metadata_of_a_docstore_are_read(tmp_path):
    path = tmp_path / "index.pkl"
    path.write_bytes(v1.docstore_pickle([("a1", "Remember the milk.", {"area": "fragments"})]))

    [text] = read_texts(path)

    assert (text.id, text.text, text.metadata) == ("a1", "Remember the milk.",
                                                    {"area": "fragments"})  # fmt: skip


def test_a_pickle_naming_a_callable_is_refused_and_nothing_runs(tmp_path):
    marker = tmp_path / "ran"
    path = tmp_path / "index.pkl"
    path.write_bytes(v1.hostile_pickle(marker))

    with pytest.raises(ValueError, match="posix.system"):
        read_texts(path)
    assert not marker.exists()


@pytest.mark.parametrize(
    "content",
    [b"", b"\x80\x04not a pickle", pickle.dumps(({"_dict": {}}, {})), pickle.dumps([1, 2])],
    ids=["empty", "garbage", "plain-dict", "list"],
)
def test_a_damaged_or_foreign_file_is_a_clear_error(tmp_path, content):
    path = tmp_path / "index.pkl"
    path.write_bytes(content)

    with pytest.raises(ValueError, match="not a memory index"):
        read_texts(path)


def test_a_truncated_docstore_is_a_clear_error(tmp_path):
    whole = v1.docstore_pickle([("a1", "Remember the milk.", {})])
    path = tmp_path / "index.pkl"
    path.write_bytes(whole[: len(whole) // 2])

    with pytest.raises(ValueError, match="not a memory index"):
        read_texts(path)


def test_the_model_configuration_reads_as_the_older_settings_fields(tmp_path):
    (tmp_path / CONFIG).parent.mkdir(parents=True)
    (tmp_path / CONFIG).write_text(json.dumps(v1.MODEL_CONFIG))

    flat = read_model_config(tmp_path, Report())

    assert flat["chat_model_provider"] == "openrouter"
    assert flat["util_model_api_base"] == "http://host.docker.internal:11434"
    assert flat["embed_model_provider"] == "huggingface"


def test_a_damaged_model_configuration_is_reported_not_raised(tmp_path):
    (tmp_path / CONFIG).parent.mkdir(parents=True)
    (tmp_path / CONFIG).write_text('{"chat_model": ')
    report = Report()

    assert read_model_config(tmp_path, report) == {}
    assert any("config.json" in line and "damaged" in line for line in report.skipped)
