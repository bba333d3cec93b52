"""The page's voice for members (accounts on), against the shared server with accounts and
the fake model server's audio endpoints: a recording is an upload, held to the member's
own upload limit; each voice call is counted in the member's usage (calls), where the
admin's usage view and the daily limits see it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.test_accounts import Member, api
from tests.integration.test_user_limits import limit
from tests.support import shared_accounts
from tests.support.fake_llm import FakeLLMServer
from tests.support.fake_llm_audio import tone_wav
from tests.support.live_web import csrf_token
from tests.support.server_process import ServerProcess

MB = 1024 * 1024


@pytest.fixture(scope="module")
def cadre(
    accounts_server: ServerProcess, _fake_llm_server: FakeLLMServer
) -> Iterator[ServerProcess]:
    base = _fake_llm_server.base_url
    with shared_accounts.for_module(
        accounts_server, stt_model="openai/whisper-1", stt_api_base=base, stt_api_key="server-key"
    ) as server:
        yield server


def transcribe(cadre: ServerProcess, member: Member, recording: bytes):
    return member.browser.post(
        f"{cadre.url}/api/voice/transcribe",
        files={"audio": ("speech.wav", recording, "audio/wav")},
        headers={"X-CSRF-Token": csrf_token(member.browser, cadre)}, timeout=60,
    )  # fmt: skip


def test_a_members_upload_limit_holds_for_a_recording(cadre, _fake_llm_server):
    _fake_llm_server.reset()
    gus = Member(cadre)
    limit(cadre, gus, upload_mb=1)
    recording = tone_wav(0.1) + b"\0" * (3 * MB)  # over gus's 1 MB, under the route's 25 MB
    sent = transcribe(cadre, gus, recording)
    assert sent.status_code == 413, (sent.status_code, sent.text)
    assert "1 MB" in sent.json()["error"]
    assert _fake_llm_server.audio_requests() == []


def test_a_members_voice_calls_are_counted(cadre, _fake_llm_server):
    _fake_llm_server.reset()
    _fake_llm_server.audio.transcript = "counted"
    hal = Member(cadre)
    sent = transcribe(cadre, hal, tone_wav(0.1))
    assert sent.status_code == 200 and sent.json() == {"text": "counted"}, sent.text
    rows = {row["name"]: row for row in api(cadre, "GET", "/usage").json()["users"]}
    assert rows[hal.name]["today"]["calls"] == 1
