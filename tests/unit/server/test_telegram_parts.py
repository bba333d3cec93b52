"""The Telegram bridge's parts that need no server: an answer as Telegram messages, the files
an answer names, the chat map on disk, approval buttons, and the settings' checks."""

from __future__ import annotations

import logging
import os

import pytest
from pydantic import ValidationError

from helpers.settings import Settings
from server.apis.telegram.approval_buttons import approval_buttons, decision
from server.apis.telegram.chat_map import ChatMap
from server.apis.telegram.config import bot_config
from server.apis.telegram.formatting import LIMIT, messages, plain_parts, size
from server.apis.telegram.log_mask import mask_token
from server.apis.telegram.produced_files import named_files
from server.apis.telegram.watch import Waiting


def test_markdown_becomes_telegrams_html():
    (shown,) = messages("Use `a<b` & **care**:\n\n```sh\necho <hi>\n```\nDone.")
    code = '<pre><code class="language-sh">echo &lt;hi&gt;</code></pre>'
    assert shown == f"Use <code>a&lt;b</code> &amp; <b>care</b>:\n{code}\nDone."


def test_a_long_answer_is_cut_at_line_ends_and_never_past_the_limit():
    text = "\n".join(f"line {n} " + "é" * 40 for n in range(400))
    parts = messages(text)
    assert len(parts) > 1 and all(size(part) <= LIMIT for part in parts)
    assert "\n".join(parts) == text  # cut between lines, nothing lost


def test_a_code_block_too_long_for_one_message_goes_on_in_another_block():
    code = "\n".join(f"x = {n}  # ❤" for n in range(1000))
    parts = messages(f"```python\n{code}\n```")
    assert len(parts) > 1 and all(size(part) <= LIMIT for part in parts)
    assert all(p.startswith('<pre><code class="language-python">') for p in parts)
    assert all(p.endswith("</code></pre>") for p in parts)


def test_one_endless_word_is_cut_too():
    parts = plain_parts("😀" * 5000)  # two UTF-16 units each: Telegram's count
    assert [size(p) for p in parts] == [4096, 4096, 1808]


def test_files_an_answer_names_in_the_work_folder(tmp_path):
    work = tmp_path / "work"
    (work / "out").mkdir(parents=True)
    (work / "report.pdf").write_bytes(b"%PDF")
    (work / "out" / "chart.png").write_bytes(b"png")
    (work / "empty.txt").write_bytes(b"")
    (tmp_path / "secret.txt").write_text("no")
    os.symlink(tmp_path / "secret.txt", work / "link.txt")
    answer = (f"Saved report.pdf and `out/chart.png` ({work}/report.pdf again); also empty.txt,"
              f" ../secret.txt, {tmp_path}/secret.txt, link.txt and missing.csv.")  # fmt: skip
    assert named_files(answer, work) == [work / "report.pdf", work / "out" / "chart.png"]


def test_the_chat_map_keeps_each_telegram_chats_chats(tmp_path):
    path = tmp_path / "telegram" / "chats.json"
    chats = ChatMap(path)
    chats.use(5, "a")
    chats.use(5, "b")
    chats.use(7, "c")
    again = ChatMap(path)  # as after a restart
    assert (again.current(5), again.chats(5)) == ("b", ["a", "b"])
    assert again.telegram_chats_of("a") == [5] and again.current(6) is None
    again.forget("b")
    assert (again.current(5), again.chats(5)) == ("a", ["a"])
    assert path.stat().st_mode & 0o777 == 0o600


def test_an_approvals_buttons_carry_their_answer():
    waiting = Waiting("item12345678", "A0", "code_execution_tool", {"code": "ls"})
    allow, deny = approval_buttons("c" * 16, waiting).inline_keyboard[0]
    assert (allow.text, deny.text) == ("Allow", "Deny")
    assert len(str(allow.callback_data).encode()) <= 64  # Telegram's limit
    assert decision(str(allow.callback_data)) == decision(f"ok:{'c' * 16}:item12345678")
    assert decision(str(deny.callback_data)).allow is False  # type: ignore[union-attr]
    assert decision("use:abc") is None and decision("ok:") is None


def test_the_settings_take_user_ids_only_and_an_address():
    settings = Settings(telegram_bot_token=" t ", telegram_allowed_users=" 12, 34 ,",
                        telegram_api_base="http://127.0.0.1:8081/")  # fmt: skip
    config = bot_config(settings)
    assert config.enabled and config.token == "t" and config.allowed == {12, 34}
    assert config.base_url == "http://127.0.0.1:8081/bot"
    assert not bot_config(Settings()).enabled
    assert Settings().telegram_api_base == "https://api.telegram.org"
    with pytest.raises(ValidationError, match="not Telegram user ids: @me"):
        Settings(telegram_allowed_users="12,@me")
    with pytest.raises(ValidationError, match="not an address"):
        Settings(telegram_api_base="api.telegram.org")


def test_the_token_is_masked_in_the_http_clients_log(caplog):
    mask_token("123:secret-token")
    with caplog.at_level(logging.INFO, logger="httpx"):
        logging.getLogger("httpx").info(
            "HTTP Request: POST %s", "http://x/bot123:secret-token/getMe"
        )
    assert caplog.messages == ["HTTP Request: POST http://x/bot***/getMe"]
