"""Whose a task is, with real accounts (usr/users.json), the real chat store and runs on the
scripted model server: a task from before accounts is the first admin's, a run's chat is
its owner's (another's chat is never continued), a disabled or departed owner's task does
not run, and a leaving owner's tasks are handed over or deleted."""

from __future__ import annotations

import pytest

from accounts.users import Users
from helpers.errors import NotFound, UserError
from initialize import ChatFactory
from scheduler.service import Scheduler
from scheduler.store import TaskStore
from scheduler.tasks import Task, TaskSpec
from store.chats import ChatManager
from tests.support.agents import answer
from tests.support.fake_llm import Reply, model_is

ADHOC = TaskSpec(name="Errand", prompt="Do it.", kind="adhoc")


@pytest.fixture
def users(usr_dir) -> Users:
    found = Users()
    found.add("root", "admin")  # the first admin: what came before accounts is theirs
    found.add("ann", "member")
    found.add("bea", "member")
    return found


@pytest.fixture
def chats(llm, runtime, users):
    llm.add_rule(model_is("util-model"), Reply("A chat"))
    manager = ChatManager(runtime, ChatFactory(runtime))
    manager.legacy_owner = "root"  # as the server sets it from the accounts (server/app.py)
    manager.load_saved()
    yield manager
    manager.close_sessions()


def ran(scheduler: Scheduler, task_id: str, viewer: str) -> Task:
    scheduler.run_now(task_id, viewer)
    scheduler.wait(task_id, 30)
    return scheduler.task(task_id, viewer)


def test_a_task_from_before_accounts_is_the_first_admins(chats, llm):
    old = TaskStore().put(Task(name="Old", prompt="Go.", kind="adhoc"))  # no owner on record
    scheduler = Scheduler(TaskStore(), chats)
    assert [t.id for t in scheduler.tasks("root")] == [old.id]
    assert scheduler.tasks("ann") == []
    with pytest.raises(NotFound, match="no task"):
        scheduler.run_now(old.id, "ann")
    assert scheduler.view(old)["owner"] == "root"
    llm.script(Reply(answer("Done.")))
    done = ran(scheduler, old.id, "root")
    assert done.last_status == "success"
    assert chats.owner_of(chats.get(done.chat_id, "root")) == "root"
    with pytest.raises(NotFound):
        chats.get(done.chat_id, "ann")


def test_a_run_never_continues_a_chat_that_is_not_its_owners(chats, llm):
    scheduler = Scheduler(TaskStore(), chats)
    beas_chat = chats.new_chat(None, "bea")
    task = scheduler.create(ADHOC, owner="ann")
    # A task list edited by hand, or restored, naming another's chat as the task's own.
    scheduler.store.update(task.id, lambda t: t.model_copy(update={"chat_id": beas_chat.id}))
    llm.script(Reply(answer("Ann's answer.")))
    done = ran(scheduler, task.id, "ann")
    assert done.chat_id != beas_chat.id and chats.get(done.chat_id, "ann").owner == "ann"
    assert beas_chat.log.items == [] or all(
        "Ann's answer." not in item.content for item in beas_chat.log.items
    )


def test_a_disabled_or_departed_owners_task_does_not_run(chats, llm, users):
    scheduler = Scheduler(TaskStore(), chats)
    task = scheduler.create(ADHOC, owner="ann")
    users.update("ann", disabled=True)
    done = ran(scheduler, task.id, "ann")
    assert (done.last_status, done.chat_id) == ("error", "")
    assert "'ann' is disabled" in done.last_result
    users.remove("ann")
    done = ran(scheduler, task.id, "ann")
    assert "'ann' has no account any more" in done.last_result
    assert chats.ids_of("ann") == [] and llm.chat_requests("chat-model") == []


def test_a_leaving_owners_tasks_are_handed_over_or_deleted(chats):
    scheduler = Scheduler(TaskStore(), chats)
    anns = [scheduler.create(ADHOC, owner="ann") for _ in range(2)]
    beas = scheduler.create(ADHOC, owner="bea")
    assert scheduler.hand_over("ann", "root") == 2
    assert {t.id for t in scheduler.tasks("root")} == {t.id for t in anns}
    assert scheduler.hand_over("bea", None) == 1
    assert [t.id for t in TaskStore().all()] == [t.id for t in anns]  # on disk too
    with pytest.raises(NotFound):
        scheduler.task(beas.id)


def test_a_chat_from_before_accounts_sees_the_first_admins_tasks_from_the_start(users, server,
                                                                               llm):  # fmt: skip
    """Before any request has asked who the first admin is, a run (a task's, at start) in a
    chat from before accounts is still the first admin's: its agents see their tasks alone
    (once, everyone's)."""
    from core.agent_types import UserMessage
    from tests.support.agents import reply

    roots = server.scheduler.create(ADHOC, owner="root")
    anns = server.scheduler.create(ADHOC, owner="ann")
    chats = server.pusher.chats
    context = chats.new_chat()  # no owner on record: from before accounts
    llm.script(Reply(reply("scheduler:list")), Reply(answer("Listed.")))
    msg = UserMessage("What is planned?")
    assert context.runner.answer_for(msg, context.communicate(msg), 60) == "Listed."
    listing = str(llm.chat_requests("chat-model")[1].body["messages"])
    assert roots.id in listing and anns.id not in listing


def test_the_first_admins_chats_and_tasks_stay_theirs_when_their_login_is_renamed(
    chats, users, llm
):
    """Their things are kept as the install's own (no owner on record): renaming the login
    in Settings (the first admin's name) takes nothing from them."""
    scheduler = Scheduler(TaskStore(), chats)
    chat = chats.new_chat(None, "root")
    task = scheduler.create(ADHOC, owner="root")
    assert chat.owner is None and scheduler.store.get(task.id).owner is None
    users.rename("root", "boss")
    chats.legacy_owner = "boss"  # as identity.accounts() sets it at the next request
    assert chats.get(chat.id, "boss") is chat
    assert [t.id for t in scheduler.tasks("boss")] == [task.id]
    with pytest.raises(NotFound):
        chats.get(chat.id, "root")


def test_a_tasks_project_is_looked_for_in_its_owners_space(chats, usr_dir):
    (usr_dir / "users" / "ann" / "projects" / "trip").mkdir(parents=True)
    (usr_dir / "projects" / "ledger").mkdir(parents=True)  # the first admin's
    scheduler = Scheduler(TaskStore(), chats)
    anns = scheduler.create(ADHOC.model_copy(update={"project": "trip"}), owner="ann")
    assert anns.project == "trip"
    with pytest.raises(UserError, match="no project 'ledger'"):
        scheduler.create(ADHOC.model_copy(update={"project": "ledger"}), owner="ann")
    with pytest.raises(UserError, match="no project 'trip'"):
        scheduler.create(ADHOC.model_copy(update={"project": "trip"}), owner="root")
    assert scheduler.create(ADHOC.model_copy(update={"project": "ledger"}), owner="root")
