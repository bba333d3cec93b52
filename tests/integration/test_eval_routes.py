"""The Evaluations panel's routes on a built server: the suites listed (the admin's and the
shipped ones), a run started, its progress until done, the results, the comparison of two,
the report served on its own policy; a bad request said in plain words."""

from __future__ import annotations

from pathlib import Path

from tests.integration.test_evals import SUITE, script_replies
from tests.support import members, shared_accounts
from tests.support.agents import wait_for
from tests.support.fake_llm import Endless, Reply, model_is
from tests.support.members import page


def finished(http, job_id: str) -> dict:
    return wait_for(
        lambda: (view := http.get(f"/api/evals/runs/{job_id}").json)["state"] != "running"
        and view,
        timeout=60, what="the evaluation to end",
    )  # fmt: skip


def test_a_run_from_the_panel_is_saved_and_compared(http, llm, usr_dir: Path, monkeypatch):
    monkeypatch.setenv("CADRE_EVAL_PARALLEL", "1")
    (usr_dir / "evals").mkdir()
    (usr_dir / "evals" / "three.yaml").write_text(SUITE)
    (usr_dir / "evals" / "broken.yaml").write_text("tasks: [")
    listed = http.get("/api/evals").json
    by_name = {s["name"]: s for s in listed["suites"]}
    assert by_name["three"]["tasks"] == 3 and not by_name["three"]["shipped"]
    assert by_name["basics"]["shipped"] and "not valid YAML" in by_name["broken"]["problem"]
    assert "default" in listed["profiles"] and listed["latest"] is None

    script_replies(llm)
    started = http.post("/api/evals/runs", json={"suite": "three", "profile": "default"})
    assert started.status_code == 202 and started.json["total"] == 3
    first = finished(http, started.json["id"])
    assert first["state"] == "done" and first["done"] == 3 and first["result"]
    assert [r["passed"] for r in first["runs"]] == [True, True, True]

    llm.reset()
    script_replies(llm, capital="Lyon.")
    again = http.post("/api/evals/runs", json={"suite": "three", "profile": "default"}).json
    second = finished(http, again["id"])
    names = [r["name"] for r in http.get("/api/evals/results").json["results"]]
    assert set(names) == {first["result"], second["result"]}

    shown = http.get(f"/api/evals/results/{second['result']}?against={first['result']}").json
    assert (shown["passed"], shown["total"]) == (2, 3)
    assert [(c["name"], c["change"]) for c in shown["changes"]] == [
        ("capital", "worse"), ("notes", "same"), ("sky", "same")]  # fmt: skip
    page = http.get(f"/api/evals/results/{second['result']}/report")
    assert page.status_code == 200 and page.mimetype == "text/html"
    assert page.headers["Content-Security-Policy"].startswith("default-src 'none'")
    assert "/#/chat/" in page.get_data(as_text=True)


def test_a_bad_request_is_refused_in_plain_words(http, llm):
    unknown = http.post("/api/evals/runs", json={"suite": "nothing", "profile": "default"})
    assert unknown.status_code == 404 and "no suite named 'nothing'" in unknown.json["error"]
    profile = http.post("/api/evals/runs", json={"suite": "basics", "profile": "nobody"})
    assert profile.status_code == 400 and "no available profile 'nobody'" in profile.json["error"]
    asked = {"suite": "basics", "profile": "default", "model": "openai/any"}
    model = http.post("/api/evals/runs", json=asked)
    assert model.status_code == 400 and "openai/any" in model.json["error"]
    assert http.get("/api/evals/results/..%2Fsettings.json").status_code == 404


def test_only_an_admin_may_run_evaluations_once_accounts_exist(accounts_server):
    """A member is refused on the page's routes and the API's alike; the admin's key is not."""
    with shared_accounts.for_module(accounts_server) as cadre:
        ann = members.Member(cadre, shared_accounts.ADMIN_KEY)
        for method, path in (("GET", "/api/evals"), ("GET", "/api/evals/results"),
                             ("POST", "/api/evals/runs")):  # fmt: skip
            refused = page(ann.browser, cadre, method, path, {})
            assert refused.status_code == 403, path
            assert "only an admin" in refused.json()["error"]
        by_key = members.api(cadre, "GET", "/evals", ann.key)
        assert by_key.status_code == 403 and "only an admin" in by_key.json()["error"]
        admin = members.api(cadre, "GET", "/evals", shared_accounts.ADMIN_KEY)
        assert admin.status_code == 200 and "basics" in {s["name"] for s in admin.json()["suites"]}


def test_stop_cuts_the_run_going_on_and_leaves_out_the_rest(http, llm, usr_dir, monkeypatch):
    monkeypatch.setenv("CADRE_EVAL_PARALLEL", "1")
    (usr_dir / "evals").mkdir()
    (usr_dir / "evals" / "three.yaml").write_text(SUITE)
    rambling = Endless(chunk_size=64, delay=0.05, max_seconds=40)  # until the client hangs up
    llm.add_rule(model_is("util-model"), Reply("A chat"))
    llm.script(rambling)
    job = http.post("/api/evals/runs", json={"suite": "three", "profile": "default"}).json
    wait_for(lambda: rambling.stats.begun, what="the first task's model call")
    assert http.post("/api/evals/runs/again/stop").status_code == 404
    assert http.post(f"/api/evals/runs/{job['id']}/stop").status_code == 200
    stopped = finished(http, job["id"])
    assert stopped["state"] == "stopped" and stopped["done"] == 0 and stopped["runs"] == []
    assert rambling.stats.client_closed == 1 and len(llm.chat_requests()) == 1  # none began
    shown = http.get(f"/api/evals/results/{stopped['result']}").json
    assert (shown["passed"], shown["total"]) == (0, 0)
