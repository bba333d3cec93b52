"""Fallback models on the wire: both clients (litellm and the lean OpenAI-SDK one) against
the scripted server. A failure retrying will not fix moves the call to the next model,
which answers; the notices, the server log and the usage name the model that answered; a
call whose output had begun does not move; a failed model is passed over for its
cool-down, then tried first again."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from helpers.errors import ProviderError
from models import fallback
from models.llm import ModelConfig, MoveNotice, Usage
from models.model import for_config
from tests.support.agents import wait_for
from tests.support.fake_llm import CutStream, Fail, Reply, model_is

USER = [{"role": "user", "content": "Hello there, model"}]
#: Two models litellm's price map knows, priced apart: the usage must name the right one.
MAIN, BACKUP = "openai/gpt-4.1", "openai/gpt-4.1-mini"
#: A port nothing listens on (the discard port): connections are refused.
NOWHERE = "http://127.0.0.1:9/v1"
QUOTA = "You exceeded your current quota, please check your plan and billing details."


@pytest.fixture(params=["litellm", "openai"])
def client(request) -> str:
    return str(request.param)


@pytest.fixture(autouse=True)
def _no_cooling():
    fallback.COOLING.clear()
    yield
    fallback.COOLING.clear()


def models(llm, client: str, **main_changes) -> ModelConfig:
    def one(name: str) -> ModelConfig:
        return ModelConfig(
            name, api_base=llm.base_url, api_key="k", retries=1, retry_delay=0.01, client=client
        )

    main = dataclasses.replace(one(MAIN), fallbacks=(one(BACKUP),), **main_changes)
    return main


class Heard:
    """What a call told its caller: chunks, usage, notices."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.usage: list[Usage] = []
        self.notices: list[object] = []

    async def on_chunk(self, text: str, reasoning: str) -> bool:
        self.text.append(text)
        return False

    def stream(self, config: ModelConfig) -> str:
        model = for_config(config)
        reply = asyncio.run(
            model.stream(USER, self.on_chunk, self.usage.append, on_retry=self.notices.append)
        )
        return reply.text

    @property
    def moves(self) -> list[MoveNotice]:
        return [n for n in self.notices if isinstance(n, MoveNotice)]


@pytest.mark.parametrize(
    ("failure", "tries", "kind", "reason"),
    [
        (
            Fail(status=429, message="slow down", times=1),
            2,
            "rate",
            "rate limited beyond the retries",
        ),
        (Fail(status=401, message="invalid api key"), 1, "key", "the API key was refused"),
        (Fail(status=402, message="insufficient credit"), 1, "quota", "no credit or quota left"),
        (Fail(status=429, message=QUOTA), 1, "quota", "no credit or quota left"),
    ],
    ids=["429-beyond-retries", "401", "402", "429-quota"],
)
def test_a_failure_retrying_cannot_fix_moves_to_the_fallback(
    llm, client, caplog, failure, tries, kind, reason
):
    llm.add_rule(model_is("gpt-4.1"), failure)  # every request for the main model fails
    llm.add_rule(model_is("gpt-4.1-mini"), Reply("The backup answers.", usage=(10, 5)))
    heard = Heard()
    with caplog.at_level(logging.WARNING, logger="models.fallback"):
        assert heard.stream(models(llm, client)) == "The backup answers."

    assert len(llm.chat_requests(model="gpt-4.1")) == tries  # a quota or a key: no retry
    assert len(llm.chat_requests(model="gpt-4.1-mini")) == 1
    # The caller heard of the move, then that the fallback answered, before its words.
    [moving, answered] = heard.moves
    assert (moving.failed, moving.instead, moving.answered) == (MAIN, BACKUP, False)
    assert moving.fault.kind == kind and answered.answered
    assert answered.text == f"{MAIN} refused: {reason}; {BACKUP} answered"
    assert any(answered.text in r.getMessage() for r in caplog.records)  # the server log
    # Usage and cost are the backup's: priced at gpt-4.1-mini's rates, and named so.
    [spent] = heard.usage
    assert spent.model == BACKUP
    assert spent.cost == pytest.approx(10 * 0.4e-6 + 5 * 1.6e-6)
    total = Usage()
    total.add(spent)
    assert set(total.models) == {BACKUP} and total.to_dict()["models"][BACKUP]["calls"] == 1


def test_a_provider_that_does_not_answer_moves_after_its_retries(llm, client):
    llm.add_rule(model_is("gpt-4.1-mini"), Reply("The backup answers."))
    heard = Heard()
    assert heard.stream(models(llm, client, api_base=NOWHERE)) == "The backup answers."
    [moving, _] = heard.moves
    assert moving.fault.kind == "unreachable"
    assert "did not answer: no server at its address" in moving.text
    assert [u.model for u in heard.usage] == [BACKUP]


def test_a_request_the_provider_refuses_for_its_content_does_not_move(llm, client):
    llm.add_rule(model_is("gpt-4.1"), Fail(status=400, message="bad parameter"))
    with pytest.raises(ProviderError, match="bad parameter"):
        Heard().stream(models(llm, client))
    assert llm.chat_requests(model="gpt-4.1-mini") == []


def test_output_the_caller_was_given_is_never_followed_by_another_models(llm, client):
    llm.add_rule(model_is("gpt-4.1"), CutStream("The main model began, then"))
    heard = Heard()
    with pytest.raises(ProviderError):
        heard.stream(models(llm, client))
    assert "".join(heard.text).startswith("The main model began")
    assert llm.chat_requests(model="gpt-4.1-mini") == [] and heard.moves == []


def test_every_model_failing_says_so_in_the_first_ones_words(llm, client):
    llm.add_rule(model_is("gpt-4.1"), Fail(status=401, message="invalid api key"))
    llm.add_rule(model_is("gpt-4.1-mini"), Fail(status=402, message="insufficient credit"))
    with pytest.raises(ProviderError) as caught:
        Heard().stream(models(llm, client))
    fault = caught.value.fault
    assert fault is not None and fault.kind == "key"
    assert "The fallback models failed too (openai/gpt-4.1-mini:" in fault.headline


def test_a_failed_model_is_passed_over_for_its_cool_down_then_tried_again(llm, client):
    refused = llm.add_rule(model_is("gpt-4.1"), Fail(status=401, message="invalid api key"))
    llm.add_rule(model_is("gpt-4.1-mini"), Reply("The backup answers."))
    config = models(llm, client, cooldown=0.3)
    assert Heard().stream(config) == "The backup answers."
    assert len(llm.chat_requests(model="gpt-4.1")) == 1
    in_use = fallback.in_use(config)
    assert in_use is not None and (in_use.model, in_use.instead) == (MAIN, BACKUP)

    # The next call goes to the fallback first: the main model is not asked meanwhile.
    heard = Heard()
    assert heard.stream(config) == "The backup answers."
    assert len(llm.chat_requests(model="gpt-4.1")) == 1 and heard.moves == []

    # Once its cool-down is over, the main model is tried first again (and now answers).
    llm.remove_rule(refused)
    llm.add_rule(model_is("gpt-4.1"), Reply("The main model is back."))
    wait_for(lambda: fallback.in_use(config) is None, what="the cool-down to end")
    assert Heard().stream(config) == "The main model is back."
    assert len(llm.chat_requests(model="gpt-4.1")) == 2


def test_a_conversation_too_long_for_a_model_moves_without_passing_the_model_over(llm, client):
    # Too long is this conversation's fault, not the model's: other calls (other chats, a
    # shorter prompt) still go to the model first.
    too_long = "This model's maximum context length is 8192 tokens."
    refused = llm.add_rule(model_is("gpt-4.1"), Fail(status=400, message=too_long))
    llm.add_rule(model_is("gpt-4.1-mini"), Reply("The backup answers."))
    config = models(llm, client)
    heard = Heard()
    assert heard.stream(config) == "The backup answers."
    assert heard.moves[0].fault.kind == "context"
    assert fallback.in_use(config) is None
    llm.remove_rule(refused)
    llm.add_rule(model_is("gpt-4.1"), Reply("The main model answers."))
    assert Heard().stream(config) == "The main model answers."


def test_an_embedding_model_back_again_is_asked_first_at_once(llm, client):
    # A fallback's vectors are of another space: memory refuses them (memory/memories.py),
    # so an embedding model passed over for its cool-down left memory on keyword search
    # alone for minutes after it was back, paying for vectors no one used.
    with socket.socket() as probe:  # a port nobody listens on yet: refused, then served
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    class Embeddings(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            return None

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            asked = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            texts = asked["input"] if isinstance(asked["input"], list) else [asked["input"]]
            body = json.dumps({
                "object": "list", "model": asked["model"],
                "data": [{"object": "embedding", "index": i, "embedding": [1.0, 0.0]}
                         for i, _ in enumerate(texts)],
                "usage": {"prompt_tokens": 1, "total_tokens": 1},
            }).encode()  # fmt: skip
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    main = dataclasses.replace(
        models(llm, client), model="openai/text-embedding-3-small",
        api_base=f"http://127.0.0.1:{port}/v1",
    )  # fmt: skip

    def embed() -> str:
        model = for_config(main)
        asyncio.run(model.embed(["lamps"]))
        return model.answered_by

    assert embed() == BACKUP  # the main model's address does not answer yet
    server = ThreadingHTTPServer(("127.0.0.1", port), Embeddings)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert embed() == "openai/text-embedding-3-small"
    finally:
        server.shutdown()
        server.server_close()


def test_when_every_model_failed_the_chat_is_not_told_a_model_answers_for_itself(llm, client):
    llm.add_rule(model_is("gpt-4.1"), Fail(status=401, message="invalid api key"))
    llm.add_rule(model_is("gpt-4.1-mini"), Fail(status=402, message="insufficient credit"))
    config = models(llm, client)
    with pytest.raises(ProviderError):
        Heard().stream(config)
    # Both cool down: the model itself is tried first again, no fallback "instead" of it.
    assert fallback.in_use(config) is None
