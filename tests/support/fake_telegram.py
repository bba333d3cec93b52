"""A fake Telegram Bot API server for tests: real HTTP on 127.0.0.1, speaking the methods the
bridge uses, recording what it was sent.

Methods (`POST /bot<token>/<method>`, form-encoded or multipart, as python-telegram-bot
sends them): getMe, getUpdates (a long poll: it waits up to `timeout` seconds for an update
at or past `offset`, and forgets those before it, as Telegram confirms them), sendMessage,
sendChatAction, sendDocument (the file's name and bytes kept), getFile and the file's
download (`GET /file/bot<token>/<path>`), answerCallbackQuery, editMessageReplyMarkup and
editMessageText. Another token is answered 401, as Telegram answers a wrong one.

The test plays Telegram's users: `text`, `photo` and `press` (a button of a sent message)
queue updates from a user in a chat; `sent(chat)` and `wait_sent` read what the bot sent.
`stop` ends the server and cuts the long polls in flight (the Bot API gone away); `start`
serves again on the same port, with what it had.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import default
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

BOT_ID = 777000
BOT_NAME = "cadre_test_bot"


@dataclass
class Sent:
    """A call the bot made: its method and parameters (a document's bytes in `file`)."""

    method: str
    params: dict[str, Any]
    file: tuple[str, bytes] | None = None
    message_id: int = 0

    @property
    def chat(self) -> int:
        return int(self.params.get("chat_id", 0))

    @property
    def text(self) -> str:
        return str(self.params.get("text", ""))


@dataclass
class _State:
    updates: list[dict[str, Any]] = field(default_factory=list)
    sent: list[Sent] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)
    polls: int = 0


class FakeTelegram:
    """The fake Bot API for the bot `token`; `url` is what CADRE_TELEGRAM_API_BASE takes."""

    def __init__(self, token: str = "123456:TEST-token-abcdefghijklmnop") -> None:
        self.token = token
        self.state = _State()
        self.changed = threading.Condition()
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- the server's life -------------------------------------------------------------------

    def start(self) -> FakeTelegram:
        fake = self

        class Handler(_Handler):
            telegram = fake

        server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        self.port = server.server_address[1]
        self._server = server
        self._stopping = False
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                         name="fake-telegram", daemon=True).start()  # fmt: skip
        return self

    def stop(self) -> None:
        """Gone: no more connections, and the long polls in flight cut off unanswered."""
        server, self._server = self._server, None
        if server is None:
            return
        with self.changed:
            self._stopping = True
            self.changed.notify_all()
        server.shutdown()
        server.server_close()

    def restart(self) -> None:
        self.stop()
        self.start()

    # -- what Telegram's users do ------------------------------------------------------------

    def text(self, user: int, text: str, chat: int | None = None) -> None:
        self._message(user, chat, {"text": text, **_commands(text)})

    def photo(self, user: int, data: bytes, caption: str = "", chat: int | None = None) -> None:
        file_id = self.add_file(data, "photos/file_1.jpg")
        sizes = [{"file_id": file_id, "file_unique_id": f"u{file_id}", "width": 4, "height": 3,
                  "file_size": len(data)}]  # fmt: skip
        self._message(user, chat, {"photo": sizes, **({"caption": caption} if caption else {})})

    def voice(self, user: int, data: bytes, chat: int | None = None) -> None:
        file_id = self.add_file(data, "voice/file_2.oga")
        note = {"file_id": file_id, "file_unique_id": f"u{file_id}", "duration": 1,
                "mime_type": "audio/ogg", "file_size": len(data)}  # fmt: skip
        self._message(user, chat, {"voice": note})

    def press(self, user: int, sent: Sent, data: str) -> None:
        """`user` presses the button carrying `data` on the message `sent`."""
        query = {"id": str(next(self._ids)), "from": _user(user), "chat_instance": "1",
                 "data": data, "message": self._message_of(sent)}  # fmt: skip
        self._queue({"callback_query": query})

    def add_file(self, data: bytes, path: str) -> str:
        file_id = f"file{next(self._ids)}"
        self.state.files[file_id] = data
        self.state.files[path] = data
        self.state.files[f"path:{file_id}"] = path.encode()
        return file_id

    # -- what the bot did --------------------------------------------------------------------

    def sent(self, chat: int | None = None, method: str | None = None) -> list[Sent]:
        with self.changed:
            return [
                s
                for s in self.state.sent
                if (chat is None or s.chat == chat) and (method is None or s.method == method)
            ]

    def wait_sent(self, check: Callable[[list[Sent]], Any], timeout: float = 60.0,
                  what: str = "the bot's messages") -> Any:  # fmt: skip
        """Wait until `check(every call the bot made)` is true (returned), else fail."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                found = check(list(self.state.sent))
                if found:
                    return found
                left = deadline - time.monotonic()
                if left <= 0:
                    shown = [
                        (s.method, s.params.get("text", "")[:80]) for s in self.state.sent[-8:]
                    ]
                    raise AssertionError(f"timed out waiting for {what}; last sent: {shown}")
                self.changed.wait(left)

    def messages(self, chat: int) -> list[str]:
        return [s.text for s in self.sent(chat, "sendMessage")]

    # -- inside ------------------------------------------------------------------------------

    def _message(self, user: int, chat: int | None, content: dict[str, Any]) -> None:
        chat_id = chat if chat is not None else user
        message = {"message_id": next(self._ids), "date": int(time.time()), "from": _user(user),
                   "chat": {"id": chat_id, "type": "private"}, **content}  # fmt: skip
        self._queue({"message": message})

    def _queue(self, update: dict[str, Any]) -> None:
        with self.changed:
            update["update_id"] = next(self._ids)
            self.state.updates.append(update)
            self.changed.notify_all()

    def _message_of(self, sent: Sent) -> dict[str, Any]:
        return {"message_id": sent.message_id, "date": int(time.time()), "text": sent.text,
                "chat": {"id": sent.chat, "type": "private"}, "from": _bot()}  # fmt: skip

    def call(self, method: str, params: dict[str, Any],
             file: tuple[str, bytes] | None) -> Any:  # fmt: skip
        """The result of one Bot API method (None: cut the connection)."""
        if method == "getMe":
            return _bot()
        if method == "getUpdates":
            return self._updates(params)
        if method == "getFile":
            file_id = str(params["file_id"])
            path = self.state.files[f"path:{file_id}"].decode()
            return {"file_id": file_id, "file_unique_id": f"u{file_id}",
                    "file_size": len(self.state.files[file_id]), "file_path": path}  # fmt: skip
        with self.changed:
            sent = Sent(method, params, file, next(self._ids))
            self.state.sent.append(sent)
            self.changed.notify_all()
        if method in ("sendMessage", "sendDocument", "editMessageText"):
            result = self._message_of(sent)
            if file is not None:
                result["document"] = {"file_id": "doc", "file_unique_id": "doc",
                                      "file_name": file[0]}  # fmt: skip
            return result
        return True

    def _updates(self, params: dict[str, Any]) -> list[dict[str, Any]] | None:
        offset = int(params.get("offset") or 0)
        deadline = time.monotonic() + float(params.get("timeout") or 0)
        with self.changed:
            self.state.polls += 1
            self.changed.notify_all()  # a test may wait for the bot's first poll
            self.state.updates = [u for u in self.state.updates if u["update_id"] >= offset]
            while not self.state.updates and not self._stopping:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.changed.wait(left)
            if self._stopping:
                return None
            return list(self.state.updates)


class _Handler(BaseHTTPRequestHandler):
    telegram: FakeTelegram
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        pass  # quiet: the test reads what was sent, not the access log

    def _gone(self) -> bool:
        """Whether this server was stopped: a connection kept alive from before answers
        nothing (a stopped Bot API answers nobody), and is closed."""
        if self.server is self.telegram._server:  # noqa: SLF001 - its own fake
            return False
        self.close_connection = True
        return True

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self._gone():
            return
        prefix = f"/file/bot{self.telegram.token}/"
        path = urllib.parse.unquote(self.path)  # httpx quotes the token's colon
        data = self.telegram.state.files.get(path.removeprefix(prefix))
        if not path.startswith(prefix) or data is None:
            self._reply(404, b'{"ok":false,"error_code":404,"description":"Not Found"}')
            return
        self._reply(200, data, "application/octet-stream")

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        if self._gone():
            return
        token, _, method = urllib.parse.unquote(self.path).removeprefix("/bot").partition("/")
        params, file = self._params()
        if token != self.telegram.token:
            self._reply(401, b'{"ok":false,"error_code":401,"description":"Unauthorized"}')
            return
        result = self.telegram.call(method, params, file)
        if result is None:  # the server goes away mid-poll: no answer at all
            self.close_connection = True
            return
        self._reply(200, json.dumps({"ok": True, "result": result}).encode())

    def _params(self) -> tuple[dict[str, Any], tuple[str, bytes] | None]:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        kind = self.headers.get("Content-Type", "")
        params: dict[str, Any] = {}
        file = None
        if kind.startswith("multipart/form-data"):
            whole = f"Content-Type: {kind}\r\n\r\n".encode() + body
            for part in BytesParser(policy=default).parsebytes(whole).iter_parts():
                name = part.get_param("name", header="content-disposition")
                payload = part.get_payload(decode=True) or b""
                if part.get_filename():
                    file = (str(part.get_filename()), payload)
                else:
                    params[str(name)] = payload.decode()
        elif kind.startswith("application/json"):
            params = json.loads(body or b"{}")
        else:
            params = dict(urllib.parse.parse_qsl(body.decode()))
        return {k: _decoded(v) for k, v in params.items()}, file

    def _reply(self, status: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _decoded(value: Any) -> Any:
    """A parameter as python-telegram-bot meant it: JSON where it encoded one."""
    if isinstance(value, bytes):
        value = value.decode()
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _commands(text: str) -> dict[str, Any]:
    if not text.startswith("/"):
        return {}
    length = len(text.split()[0])
    return {"entities": [{"type": "bot_command", "offset": 0, "length": length}]}


def _user(user: int) -> dict[str, Any]:
    return {"id": user, "is_bot": False, "first_name": f"User{user}"}


def _bot() -> dict[str, Any]:
    return {"id": BOT_ID, "is_bot": True, "first_name": "Cadre", "username": BOT_NAME,
            "can_join_groups": True, "can_read_all_group_messages": False,
            "supports_inline_queries": False}  # fmt: skip
