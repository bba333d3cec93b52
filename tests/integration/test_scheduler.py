"""The scheduler with real runs: the chat runner, the scripted model server, real files.

The service takes a clock, so a cron task is made due a couple of seconds from now
(the clock is set just before a minute starts) instead of waiting for a real minute.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from core.agent_types import UserMessage
from initialize import ChatFactory
from scheduler.service import Scheduler, TaskRunning
from scheduler.store import TaskStore
from scheduler.tasks import Task, TaskSpec
from scheduler.timing import zone
from store.chats import ChatManager
from tests.support.agents import answer, reply, wait_for
from tests.support.fake_llm import Fail, Reply, last_user_contains

KEY = {"X-API-Key": "api-secret"}


@pytest.fixture
def chats(llm, runtime):
    manager = ChatManager(runtime, ChatFactory(runtime))
    manager.load_saved()
    yield manager
    manager.close_sessions()


def shifted_clock(seconds_before_a_minute: float):
    """A clock that reads `seconds_before_a_minute` before the next whole minute now."""
    real = datetime.now(UTC)
    minute = (real + timedelta(minutes=1)).replace(second=0, microsecond=0)
    offset = minute - timedelta(seconds=seconds_before_a_minute) - real
    return lambda: datetime.now(UTC) + offset


def notices(context) -> list:
    return [item for item in context.log.items if item.type == "notify"]


def finished(scheduler: Scheduler, task_id: str):
    return lambda: scheduler.store.get(task_id).last_status


def test_a_cron_task_due_in_two_seconds_runs_once_and_keeps_its_answer(chats, llm):
    llm.script(Reply(answer("Backups are fine.")))
    clock = shifted_clock(2)
    rounds: list[datetime] = []  # the scheduler asks the time once a round, then looks

    def counting_clock() -> datetime:
        rounds.append(clock())
        return rounds[-1]

    scheduler = Scheduler(TaskStore(), chats, clock=counting_clock, tick=0.1)
    spec = TaskSpec(name="Check backups", prompt="Are the backups fine?", kind="scheduled",
                    cron="* * * * *", timezone="UTC")  # fmt: skip
    task = scheduler.create(spec)
    assert task.next_run is not None and task.next_run.second == 0
    scheduler.start()
    try:
        wait_for(finished(scheduler, task.id), timeout=30, what="the task's run")
        # Rounds go on after the run: none may start it again. The third round to ask the
        # time from now on comes after two whole rounds have looked at the task.
        seen = len(rounds)
        wait_for(lambda: len(rounds) >= seen + 3, timeout=30, what="two more rounds")
    finally:
        scheduler.stop()
    done = scheduler.store.get(task.id)
    assert (done.last_status, done.last_result) == ("success", "Backups are fine.")
    assert done.next_run == task.next_run + timedelta(minutes=1)
    assert done.last_run is not None and done.last_run >= task.next_run
    context = chats.get(done.chat_id)
    assert context.name == "Task: Check backups"
    [notice] = notices(context)
    assert notice.heading == "Task 'Check backups' finished"
    assert notice.content == "Backups are fine." and notice.kvps == {"type": "success",
                                                                     "task": task.id}  # fmt: skip
    asked = [r for r in llm.chat_requests() if "Are the backups fine?" in str(r.body)]
    assert len(asked) == 1 and llm.pending() == 0


def test_a_task_survives_a_restart_and_keeps_its_dedicated_chat(chats, llm, runtime):
    llm.script(Reply(answer("First.")), Reply(answer("Second.")))
    clock = shifted_clock(30)
    first = Scheduler(TaskStore(), chats, clock=clock)
    task = first.create(TaskSpec(name="Daily", prompt="Report.", kind="scheduled",
                                 cron="0 9 * * *", timezone="Europe/Paris"))  # fmt: skip
    first.run_now(task.id)
    first.wait(task.id, 30)
    before = first.store.get(task.id)
    chats.close_sessions()

    # A new process: the tasks file and the chats are read again from usr/.
    again = ChatManager(runtime, ChatFactory(runtime))
    again.load_saved()
    second = Scheduler(TaskStore(), again, clock=clock)
    assert second.store.get(task.id) == before
    second.run_now(task.id)
    second.wait(task.id, 30)
    after = second.store.get(task.id)
    assert (after.chat_id, after.last_result) == (before.chat_id, "Second.")
    context = again.get(after.chat_id)
    assert [n.content for n in notices(context)] == ["First.", "Second."]
    again.close_sessions()


def test_a_slow_run_is_not_started_twice(chats, llm):
    gate = threading.Event()
    llm.script(Reply(answer("Done at last."), gate=gate))
    clock = shifted_clock(30)
    scheduler = Scheduler(TaskStore(), chats, clock=clock)
    task = scheduler.create(TaskSpec(name="Slow", prompt="Take your time.", kind="scheduled",
                                     cron="* * * * *"))  # fmt: skip
    assert scheduler.tick(task.next_run) == [task.id]
    wait_for(lambda: llm.chat_requests(), what="the run's model call")
    # Due again while the first run waits on the model: skipped, and not by hand either.
    assert scheduler.tick(task.next_run + timedelta(minutes=1)) == []
    with pytest.raises(TaskRunning, match="running already"):
        scheduler.run_now(task.id)
    assert scheduler.view(scheduler.store.get(task.id))["running"] is True
    gate.set()
    scheduler.wait(task.id, 30)
    done = scheduler.store.get(task.id)
    assert done.last_result == "Done at last." and not scheduler.running(task.id)
    assert len(llm.chat_requests()) == 1
    assert done.next_run == task.next_run + timedelta(minutes=2)


@pytest.mark.parametrize("run_missed", [True, False])
def test_a_planned_run_missed_while_stopped_follows_its_setting(chats, llm, run_missed):
    now = datetime.now(UTC)
    planned = [(now + timedelta(hours=h)).isoformat() for h in (1, 2, 5)]
    stopped = Scheduler(TaskStore(), chats, clock=lambda: now)
    task = stopped.create(TaskSpec(name="Planned", prompt="Planned work.", kind="planned",
                                   at=planned, run_missed=run_missed))  # fmt: skip
    # Cadre was stopped for three hours: the runs at +1 h and +2 h were missed.
    later = now + timedelta(hours=3)
    if run_missed:
        llm.script(Reply(answer("Caught up.")))
    restarted = Scheduler(TaskStore(), chats, clock=lambda: later)
    started = restarted.catch_up(later)
    restarted.wait(task.id, 30)
    done = restarted.store.get(task.id)
    if run_missed:
        assert started == [task.id] and done.last_result == "Caught up."
        assert len(llm.chat_requests()) == 1  # once, not once per missed time
    else:
        assert started == [] and done.last_run is None and llm.chat_requests() == []
    assert done.next_run == datetime.fromisoformat(planned[2])


def test_a_task_without_a_dedicated_chat_starts_a_chat_per_run_with_its_profile(chats, llm):
    llm.script(Reply(answer("One.")), Reply(answer("Two.")))
    scheduler = Scheduler(TaskStore(), chats)
    task = scheduler.create(TaskSpec(name="Fresh", prompt="Go.", kind="adhoc",
                                     profile="researcher", dedicated_chat=False))  # fmt: skip
    made = []
    for _ in range(2):
        scheduler.run_now(task.id)
        scheduler.wait(task.id, 30)
        made.append(scheduler.store.get(task.id).chat_id)
    assert made[0] != made[1] and scheduler.store.get(task.id).last_result == "Two."
    assert [chats.get(c).agent0.config.profile for c in made] == ["researcher", "researcher"]


def test_a_failed_run_keeps_the_error_as_its_result(chats, llm):
    llm.script(*[Fail(400, "the model is gone")] * 5)
    scheduler = Scheduler(TaskStore(), chats)
    task = scheduler.create(TaskSpec(name="Doomed", prompt="Try.", kind="adhoc"))
    scheduler.run_now(task.id)
    scheduler.wait(task.id, 60)
    done = scheduler.store.get(task.id)
    assert done.last_status == "error" and "the model is gone" in done.last_result
    [notice] = notices(chats.get(done.chat_id))
    assert notice.kvps == {"type": "error", "task": task.id}
    assert notice.heading == "Task 'Doomed' failed"


def test_the_agents_scheduler_tool_creates_a_task(chats, llm, runtime):
    scheduler = runtime.provide(Scheduler(TaskStore(), chats))
    llm.script(
        Reply(reply("scheduler:create", name="Weekly report", prompt="Write the report.",
                    kind="scheduled", cron="0 8 * * MON", timezone="Europe/Berlin")),
        Reply(reply("scheduler:create", name="Broken", prompt="x", kind="scheduled",
                    cron="0 8 * *")),
        Reply(answer("Scheduled.")),
    )  # fmt: skip
    context = chats.new_chat()
    assert context.runner.answer_for(*_message(context, "Every Monday at 8, the report."), 60) \
        == "Scheduled."  # fmt: skip
    [task] = scheduler.store.all()
    assert (task.name, task.cron, task.timezone, task.dedicated_chat) == (
        "Weekly report", "0 8 * * MON", "Europe/Berlin", True)  # fmt: skip
    assert task.next_run is not None and task.next_run.astimezone(
        zone("Europe/Berlin")).strftime("%a %H:%M") == "Mon 08:00"  # fmt: skip
    # The bad call came back to the model as an error it can fix; nothing was made.
    repaired = str(llm.chat_requests()[2].body["messages"])
    assert "has 4 field(s); a cron expression has five" in repaired


def _message(context, text):
    msg = UserMessage(text)
    return msg, context.communicate(msg)


def test_the_api_creates_shows_changes_runs_and_deletes_a_task(http, server, llm, monkeypatch):
    monkeypatch.setenv("CADRE_API_KEY", "api-secret")
    assert http.get("/api/v1/tasks").status_code == 401
    made = http.post(
        "/api/v1/tasks",
        headers=KEY,
        json={"name": "Hello", "prompt": "Say hello.", "kind": "adhoc", "dedicated_chat": False},
    )
    assert made.status_code == 201, made.json
    task_id = made.json["id"]
    assert made.json["next_run"] is None and made.json["enabled"] is True
    assert {"last_run", "last_result", "chat_id", "running"} <= made.json.keys()
    assert [t["id"] for t in http.get("/api/v1/tasks", headers=KEY).json["tasks"]] == [task_id]

    changed = http.patch(
        f"/api/v1/tasks/{task_id}",
        headers=KEY,
        json={"kind": "scheduled", "cron": "30 6 * * *", "timezone": "UTC"},
    )
    assert changed.status_code == 200 and changed.json["next_run"].endswith("06:30:00Z")
    off = http.patch(f"/api/v1/tasks/{task_id}", headers=KEY, json={"enabled": False})
    assert off.json["enabled"] is False and off.json["next_run"] is None
    back = http.patch(f"/api/v1/tasks/{task_id}", headers=KEY, json={"kind": "adhoc"})
    assert back.status_code == 200 and (back.json["kind"], back.json["cron"]) == ("adhoc", "")
    bad = http.patch(f"/api/v1/tasks/{task_id}", headers=KEY, json={"timezone": "Nowhere/Land"})
    assert bad.status_code == 400 and "unknown time zone 'Nowhere/Land'" in bad.json["error"]
    assert http.get(f"/api/v1/tasks/{task_id}", headers=KEY).json["timezone"] == "UTC"

    llm.script(Reply(answer("Hello!")))
    ran = http.post(f"/api/v1/tasks/{task_id}/run", headers=KEY)
    assert ran.status_code == 202 and ran.json["running"] is True
    server.scheduler.wait(task_id, 30)
    shown = http.get(f"/api/v1/tasks/{task_id}", headers=KEY).json
    assert (shown["last_result"], shown["last_status"], shown["running"]) == (
        "Hello!", "success", False)  # fmt: skip
    assert shown["chat_id"] in [c["id"] for c in http.get("/api/v1/chats", headers=KEY).json[
        "chats"]]  # fmt: skip

    assert http.delete(f"/api/v1/tasks/{task_id}", headers=KEY).json == {"deleted": task_id}
    assert http.get(f"/api/v1/tasks/{task_id}", headers=KEY).status_code == 404
    assert server.scheduler.store.all() == []


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"cron": "0 25 * * *"}, "is not a valid cron expression"),
        ({"cron": "* * * * *", "timezone": "Europe/Atlantis"}, "unknown time zone"),
        ({"cron": "* * * * *", "colour": "red"}, "colour: Extra inputs are not permitted"),
        ({"kind": "weekly"}, "kind: Input should be 'scheduled', 'planned' or 'adhoc'"),
        ({"cron": "0 0 31 2 *"}, "cron '0 0 31 2 *' names no date that comes"),  # 31 February
        # The last hours of year 9999 in New York are past year 9999 in UTC.
        ({"kind": "planned", "at": ["9999-12-31T23:00:00-05:00"]}, "is out of range"),
        ({"kind": "planned", "at": ["0001-01-01T00:00+05:00"]}, "out of range"),
        (
            {"kind": "planned", "at": ["9999-12-31T23:59"], "timezone": "America/New_York"},
            "out of range",
        ),
    ],
)
def test_the_api_refuses_a_bad_task_and_keeps_nothing(http, server, monkeypatch, fields, words):
    monkeypatch.setenv("CADRE_API_KEY", "api-secret")
    sent = {"name": "Bad", "prompt": "p", "kind": "scheduled", **fields}
    refused = http.post("/api/v1/tasks", headers=KEY, json=sent)
    assert refused.status_code == 400 and words in refused.json["error"]
    assert server.scheduler.store.all() == []
    assert not (server.scheduler.store.path.exists())


def test_a_change_is_held_to_the_same_limits_as_a_new_task(http, server):
    """A PATCH once stored a prompt past the limit, and then every later change of the
    task failed (500) when the stored task was read back against those limits."""
    task_id = http.post("/api/tasks", json={"name": "x", "prompt": "p", "kind": "adhoc"}).json["id"]
    huge = http.patch(f"/api/tasks/{task_id}", json={"prompt": "x" * 100_001})
    assert huge.status_code == 400 and "prompt" in huge.json["error"]
    never = http.patch(f"/api/tasks/{task_id}", json={"kind": "scheduled", "cron": "0 0 30 2 *"})
    assert never.status_code == 400 and "names no date that comes" in never.json["error"]
    later = http.patch(f"/api/tasks/{task_id}", json={"name": "y"})
    assert later.status_code == 200 and (later.json["name"], later.json["prompt"]) == ("y", "p")


def test_the_panel_routes_need_the_pages_csrf_token(server, http):
    bare = server.app.test_client()
    assert bare.post("/api/tasks", json={"name": "x", "prompt": "p", "kind": "adhoc"}
                     ).status_code == 403  # fmt: skip
    made = http.post("/api/tasks", json={"name": "x", "prompt": "p", "kind": "adhoc"})
    assert made.status_code == 201 and http.get("/api/tasks").json["tasks"][0]["name"] == "x"


def test_a_change_past_a_fields_limit_is_refused_and_the_tasks_file_stays_readable(
    http, server, monkeypatch
):
    """A PATCH is held to the same limits as a new task: a name past 200 characters saved
    once made tasks.json unreadable at the next start, which set every task aside."""
    monkeypatch.setenv("CADRE_API_KEY", "api-secret")
    made = http.post("/api/v1/tasks", headers=KEY,
                     json={"name": "Short", "prompt": "p", "kind": "adhoc"})  # fmt: skip
    task_id = made.json["id"]
    long = http.patch(f"/api/v1/tasks/{task_id}", headers=KEY, json={"name": "n" * 201})
    assert long.status_code == 400 and "name" in long.json["error"], long.json
    assert [t.name for t in TaskStore().all()] == ["Short"]  # what a restart reads


def test_a_task_deleted_while_it_runs_leaves_its_chat_an_ordinary_chat(chats, llm):
    """The chat of a task deleted mid-run is no task's any more: its mark (which keeps the
    notification history from reporting its runs twice) goes, or the user's own runs
    there would never be reported again."""
    gate = threading.Event()
    llm.script(Reply(answer("Done, task or no task."), gate=gate))
    scheduler = Scheduler(TaskStore(), chats)
    task = scheduler.create(TaskSpec(name="Brief", prompt="Go.", kind="adhoc"))
    scheduler.run_now(task.id)
    wait_for(lambda: llm.chat_requests(), what="the run's model call")
    context = chats.get(scheduler.store.get(task.id).chat_id)
    scheduler.delete(task.id)
    gate.set()
    scheduler.wait(task.id, 30)
    assert not scheduler.running(task.id)
    wait_for(lambda: not context.running, what="the run's end")
    assert context.task_run is None


def test_a_planned_task_with_every_time_past_is_refused_made_or_switched_on(
    http, server, monkeypatch
):
    monkeypatch.setenv("CADRE_API_KEY", "api-secret")
    past = ["2020-01-01T09:00:00+00:00"]
    sent = {"name": "Old", "prompt": "p", "kind": "planned", "at": past}
    made = http.post("/api/v1/tasks", headers=KEY, json=sent)
    assert made.status_code == 400 and "every planned time has passed" in made.json["error"]
    off = http.post("/api/v1/tasks", headers=KEY, json={**sent, "enabled": False})
    assert off.status_code == 201 and off.json["next_run"] is None
    # Switched on (the panel's toggle sends only this): still nothing to run, so refused.
    on = http.patch(f"/api/v1/tasks/{off.json['id']}", headers=KEY, json={"enabled": True})
    assert on.status_code == 400 and "every planned time has passed" in on.json["error"]
    assert server.scheduler.store.get(off.json["id"]).enabled is False


def test_a_task_that_cannot_be_planned_stops_neither_the_start_nor_the_others(chats, llm):
    """A task whose cron or time zone no longer reads (tasks.json edited by hand, or brought
    by a backup from a machine with other time zones) is marked with the reason; Cadre
    still starts and the other due tasks still run."""
    from scheduler.tasks import Task

    past = datetime.now(UTC) - timedelta(hours=1)
    store = TaskStore()
    broken = store.put(Task(name="Broken", prompt="p", kind="scheduled", cron="61 * * * *",
                            timezone="UTC", next_run=past))  # fmt: skip
    fine = store.put(Task(name="Fine", prompt="Go.", kind="scheduled", cron="0 9 * * *",
                          timezone="UTC", next_run=past))  # fmt: skip
    llm.script(Reply(answer("Ran.")), Reply(answer("Ran again.")))
    scheduler = Scheduler(TaskStore(), chats)
    assert scheduler.catch_up(datetime.now(UTC)) == [fine.id]
    scheduler.wait(fine.id, 30)
    assert scheduler.store.get(fine.id).last_result == "Ran."
    marked = scheduler.store.get(broken.id)
    assert marked.next_run is None and marked.last_status == "error"
    assert "not a valid cron expression" in marked.last_result
    assert scheduler.tick(datetime.now(UTC) + timedelta(days=1)) == [fine.id]
    scheduler.wait(fine.id, 30)


def test_a_task_whose_timing_cannot_be_read_does_not_hold_up_the_others(chats, llm, usr_dir):
    """A task list from a backup or edited by hand may hold a planned time no date can hold
    in UTC: working out its next run failed, and with it every round, so the tasks due
    after it in the list never ran."""
    llm.add_rule(last_user_contains("Run."), Reply(answer("Ran.")))
    llm.add_rule(last_user_contains("Broken."), Reply(answer("Broken ran.")))
    now = datetime.now(UTC)
    store = TaskStore()
    store.put(Task(name="broken", prompt="Broken.", kind="planned", at=["0001-01-01T00:00+05:00"],
                   next_run=now - timedelta(minutes=1), dedicated_chat=False))  # fmt: skip
    sound = store.put(Task(name="sound", prompt="Run.", kind="planned",
                           at=[(now - timedelta(minutes=1)).isoformat()],
                           next_run=now - timedelta(minutes=1), dedicated_chat=False))  # fmt: skip
    scheduler = Scheduler(TaskStore(), chats, clock=lambda: now)
    started = scheduler.tick(now)
    assert sound.id in started
    scheduler.wait(sound.id, 30)
    assert scheduler.store.get(sound.id).last_result == "Ran."
    [broken] = [t for t in scheduler.store.all() if t.name == "broken"]
    assert broken.next_run is None  # not due again every round
    scheduler.wait(broken.id, 30)


def cut_short(spec: TaskSpec, chats, started: datetime, **before) -> Task:
    """The task list as a Cadre killed during the task's run leaves it: the run marked as
    going on (what the run writes first), nothing recorded of its end."""
    killed = Scheduler(TaskStore(), chats, clock=lambda: started)
    task = killed.create(spec)
    marks = {"last_run": started, "running_since": started, **before}
    return killed.store.update(task.id, lambda t: t.model_copy(update=marks))


INTERRUPTED_CASES = {
    "run_missed off": (
        {"kind": "scheduled", "cron": "0 9 * * *", "run_missed": False}, {},
        "it runs at its next due time (run_missed is off)",
    ),
    "the run before was cut short too": (
        {"kind": "scheduled", "cron": "0 9 * * *"}, {"last_status": "interrupted"},
        "and so was the run before it",
    ),
    "an ad hoc task": ({"kind": "adhoc"}, {}, "use Run now to run it again"),
    "a disabled task": (
        {"kind": "scheduled", "cron": "0 9 * * *", "enabled": False}, {}, "the task is disabled",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", list(INTERRUPTED_CASES))
def test_a_run_cut_short_that_is_not_run_again_says_so_and_keeps_its_plan(chats, llm, case):
    fields, before, words = INTERRUPTED_CASES[case]
    started = datetime(2026, 3, 2, 9, 0, 5, tzinfo=UTC)
    task = cut_short(TaskSpec(name="Cut", prompt="Work.", **fields), chats, started, **before)
    later = started + timedelta(minutes=10)  # before the next 9:00
    scheduler = Scheduler(TaskStore(), chats, clock=lambda: later)
    assert scheduler.interrupted() == [] and scheduler.catch_up(later) == []
    after = scheduler.store.get(task.id)
    assert (after.last_status, after.running_since, after.next_run) == (
        "interrupted", None, task.next_run)  # fmt: skip
    assert "the run that started at 2026-03-02 09:00:05 UTC was cut short" in after.last_result
    assert words in after.last_result
    assert llm.chat_requests() == [] and not scheduler.running(task.id)


def test_a_run_cut_short_and_a_run_missed_make_one_run_at_start(chats, llm):
    started = datetime(2026, 3, 2, 9, 0, 5, tzinfo=UTC)
    spec = TaskSpec(name="Daily", prompt="The daily work.", kind="scheduled", cron="0 9 * * *")
    task = cut_short(spec, chats, started)
    llm.script(Reply(answer("Done again.")))
    later = started + timedelta(days=1, hours=1)  # 10:00 the next day: 9:00 was missed too
    scheduler = Scheduler(TaskStore(), chats, clock=lambda: later)
    scheduler.start()
    try:
        scheduler.wait(task.id, 30)
    finally:
        scheduler.stop()
    after = scheduler.store.get(task.id)
    assert after.last_status == "success" and after.last_result == "Done again."
    assert len(llm.chat_requests("chat-model")) == 1
    assert after.next_run == datetime(2026, 3, 4, 9, tzinfo=UTC) and after.running_since is None
