"""The dashboard in a real browser (headless Chromium, tests/planner/api/browser.py), on the examples' plan: log in,
the timeline, the detail of a reservation (and not of another user's), a what-if dry run, a live update after a
submission through the API, the capacity and queue views, and /docs offline. Skipped, saying why, without
Chromium, chromedriver or selenium. `RAYON_DASHBOARD_SHOTS=docs/img` keeps the screenshots there."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any as AnyType

import pytest
from click.testing import CliRunner

from follower.cli import main
from follower.follow.allocated import YuniKornAllocated
from follower.follow.service import QueuePublisher
from planner.store.facade import Store
from planner.store.queuelog import QueueLog
from rdl.load import load
from tests.planner.api import browser
from tests.planner.api.support import EXAMPLES, Server, make_tokens, running, submit
from tests.planner.support import one, pinned

pytestmark = pytest.mark.browser
WAIT = 30.0  # seconds for the page to show something: a bound for a stuck page, not a measure of speed
FRESH = ("reservation fresh deadline=+4h {\n"
         "  work: atom(b={memory: 4GiB, vcores: 2}, g=4, h=4, l=1h, w=4h)\n}\n")
TOO_BIG = ("reservation too_big arrival=2026-11-26T00:00:00Z deadline=+8h {\n"
           "  train: atom(b={memory: 16GiB, vcores: 8}, g=160, h=160, l=4h, w=640h)\n}\n")


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """`rayon serve` on the examples' plan (examples/cluster.yaml and every examples/*.rdl, of several users):
    alice owns etl_nightly, bob mpi_solver; ops is an admin."""
    if (why := browser.missing()) is not None:
        pytest.skip(why)
    root = tmp_path_factory.mktemp("dashboard")
    with Store.open(root / "plan.db") as store:
        store.init((EXAMPLES / "cluster.yaml").read_text(), "cluster.yaml")
        for loaded in load([str(EXAMPLES)], None, store.cluster(), None):
            for reservation in loaded.reservations:
                store.submit(reservation)
    tokens = make_tokens(root / "tokens.yaml")
    with running(root / "plan.db", root / "tokens.yaml", tokens) as server:
        yield server


@pytest.fixture(scope="module")
def driver(examples: Server) -> Iterator[AnyType]:
    with browser.chromium() as opened:
        yield opened


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    kept = os.environ.get("RAYON_DASHBOARD_SHOTS")
    return Path(kept) if kept else tmp_path_factory.mktemp("shots")


def until(driver: AnyType, condition: AnyType, what: str) -> AnyType:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, WAIT, poll_frequency=0.1).until(condition, f"the page never showed {what}")


def text_of(driver: AnyType) -> str:
    return str(driver.execute_script("return document.body.innerText"))


def shoot(driver: AnyType, path: Path) -> None:
    """A screenshot of the whole page (the window made as tall as the page for it, up to 2,000 pixels)."""
    width, height = driver.get_window_size()["width"], driver.get_window_size()["height"]
    tall = int(driver.execute_script("return document.documentElement.scrollHeight"))
    driver.set_window_size(width, min(max(height, tall + 140), 2000))  # 140: the window's frame around the page
    driver.execute_async_script("requestAnimationFrame(() => requestAnimationFrame(arguments[0]))")  # redrawn
    driver.save_screenshot(str(path))
    driver.set_window_size(width, height)


def forget_token(driver: AnyType, server: Server) -> None:
    """Log the tab out: its sessionStorage cleared on a page of the server's that runs no script (the dashboard
    would log in with the token and be asking the API as it goes), and the console's earlier messages dropped."""
    driver.get(f"{server.url}/dashboard/static/vendor/README.md")
    driver.execute_script("sessionStorage.clear()")
    browser.errors(driver)


def log_in(driver: AnyType, server: Server, user: str, view: str = "timeline") -> None:
    """A fresh tab state, the user's token typed into the login box, and the view once the plan is drawn."""
    from selenium.webdriver.common.by import By

    forget_token(driver, server)
    driver.get(f"{server.url}/?{user}#/{view}")  # another query than the page's: loaded afresh, without a token
    driver.find_element(By.ID, "token").send_keys(server.tokens[user])
    driver.find_element(By.ID, "login-button").click()
    until(driver, lambda d: d.find_element(By.ID, "whoami").text.startswith(user), f"{user} logged in")
    until(driver, lambda d: d.execute_script("return document.body.dataset.version") is not None, "the plan")


def rows(driver: AnyType) -> list[str]:
    """The reservations the timeline's listing shows (read in one script: the page redraws as the plan changes)."""
    return list(driver.execute_script(
        "return [...document.querySelectorAll('tr[data-reservation]')].map(row => row.dataset.reservation)"))


def shown(driver: AnyType, css: str) -> str | None:
    """The text of the first element `css` selects (None: none yet), read in one script, as `rows` is."""
    found = driver.execute_script("const e = document.querySelector(arguments[0]); return e && e.innerText", css)
    return None if found is None else str(found)


def texts(driver: AnyType, css: str) -> list[str]:
    """The texts of every element `css` selects, read in one script."""
    return list(driver.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map(e => e.innerText)", css))


def offline(driver: AnyType, server: Server) -> None:
    """Everything the page loaded came from the server (no CDN), and the console has no error."""
    loaded = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert all(url.startswith(server.url) for url in loaded), loaded
    assert browser.errors(driver) == []


def test_a_user_logs_in_and_sees_their_reservations_on_the_timeline(driver: AnyType, examples: Server,
                                                                   shots: Path) -> None:
    log_in(driver, examples, "alice")
    until(driver, lambda d: rows(d) == ["etl_nightly"], "alice's reservation")
    canvas = until(driver, lambda d: d.find_element("css selector", "canvas.timeline-canvas[data-rendered='1']"),
                   "one timeline row")
    assert canvas.size["height"] > 200
    assert "mpi_solver" not in text_of(driver)  # bob's: only in the anonymous load row
    assert "mine, and others' (anonymous)" not in text_of(driver)  # drawn on the canvas, not the page's text
    offline(driver, examples)
    shoot(driver, shots / "dashboard-timeline-user.png")


def test_an_admin_sees_every_reservation_and_a_bad_token_nothing(driver: AnyType, examples: Server,
                                                                shots: Path) -> None:
    from selenium.webdriver.common.by import By

    with examples.client("ops") as ops:
        every = [r["reservation"] for r in ops.get("/v1/reservations").json()["items"]]
        accepted = ops.get("/v1/reservations", params={"state": "accepted"}).json()["total"]
    assert len(every) == 9 and accepted == 8  # the examples' RDL files and the YARN one, one rejected
    log_in(driver, examples, "ops")
    until(driver, lambda d: rows(d) == every[::-1], "every reservation of the examples, the latest first")
    until(driver, lambda d: d.find_element(By.CSS_SELECTOR, f"canvas[data-rendered='{accepted}']"), "the accepted")
    driver.find_element(By.XPATH, "//button[text()='Day']").click()
    offline(driver, examples)
    shoot(driver, shots / "dashboard-timeline.png")
    forget_token(driver, examples)
    driver.get(f"{examples.url}/")
    driver.find_element(By.ID, "token").send_keys("not-a-token")
    driver.find_element(By.ID, "login-button").click()
    until(driver, lambda d: "not valid" in d.find_element(By.ID, "status").text, "the refusal")
    assert rows(driver) == []


def test_the_timeline_opens_a_reservations_detail(driver: AnyType, examples: Server, shots: Path) -> None:
    from selenium.webdriver.common.by import By

    log_in(driver, examples, "alice")
    until(driver, lambda d: d.find_element(By.CSS_SELECTOR, "canvas[data-rendered='1']"), "the timeline")
    canvas = driver.find_element(By.CSS_SELECTOR, "canvas.timeline-canvas")
    # the first row under the axis (30 px) and the load row (64 px): a click there opens its detail
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).move_to_element_with_offset(canvas, -canvas.size["width"] // 2 + 60,
                                                     -canvas.size["height"] // 2 + 30 + 64 + 10).click().perform()
    until(driver, lambda d: d.current_url.endswith("#/reservation/etl_nightly"), "the detail's address")
    rdl = until(driver, lambda d: shown(d, "[data-testid=rdl]"), "the RDL")
    assert rdl.startswith("reservation etl_nightly user=alice")
    pieces = texts(driver, "[data-testid=detail] table tbody tr td:first-child")
    assert pieces[:3] == ["extract", "transform", "load"]
    offline(driver, examples)
    shoot(driver, shots / "dashboard-detail.png")


def test_a_rejection_shows_its_reason_and_the_earliest_deadline(driver: AnyType, examples: Server,
                                                               shots: Path) -> None:

    log_in(driver, examples, "ops", "reservation/urgent_retrain")
    reason = until(driver, lambda d: shown(d, "[data-testid=reason]"), "the reason")
    assert "Rejected (capacity)" in reason and "at most 128 are free at once" in reason
    assert "2026-11-26 16:00" in reason
    shoot(driver, shots / "dashboard-detail-rejected.png")


def test_a_user_cannot_see_another_users_reservation(driver: AnyType, examples: Server, shots: Path) -> None:
    from selenium.webdriver.common.by import By

    log_in(driver, examples, "alice", "reservation/mpi_solver")
    error = until(driver, lambda d: shown(d, "[data-testid=error]"), "the refusal")
    assert "belongs to another user" in error
    assert driver.find_elements(By.CSS_SELECTOR, "[data-testid=rdl]") == []
    assert "bob" not in text_of(driver) and "hpc" not in text_of(driver)  # nothing of the record: its owner, queue
    assert all("403" in message for message in browser.errors(driver))  # the refused requests, nothing else
    shoot(driver, shots / "dashboard-forbidden.png")


def test_a_what_if_dry_run_answers_without_changing_the_plan(driver: AnyType, examples: Server, shots: Path) -> None:
    from selenium.webdriver.common.by import By

    log_in(driver, examples, "alice", "whatif")
    rdl = driver.find_element(By.ID, "whatif-rdl")
    rdl.clear()
    rdl.send_keys(TOO_BIG)
    driver.find_element(By.ID, "whatif-run").click()
    earliest = until(driver, lambda d: shown(d, "[data-testid=earliest]"), "the earliest deadline")
    assert earliest == "2026-11-26 16:00"
    driver.find_element(By.ID, "whatif-retry").click()  # the RDL's deadline set to it, and a dry run again
    until(driver, lambda d: "It would be accepted" in (shown(d, "#whatif-answer") or ""), "the retry accepted")
    assert "deadline=2026-11-26T16:00:00Z" in rdl.get_attribute("value")
    rdl.clear()
    rdl.send_keys(FRESH)
    driver.find_element(By.ID, "whatif-run").click()
    until(driver, lambda d: "It would be accepted" in (shown(d, "#whatif-answer") or ""), "an acceptance")
    until(driver, lambda d: d.find_element(By.CSS_SELECTOR, ".timeline.small canvas[data-rendered='1']"),
          "the what-if's row beside the plan")
    offline(driver, examples)
    shoot(driver, shots / "dashboard-whatif.png")
    with examples.client("alice") as alice:
        assert alice.get("/v1/reservations").json()["total"] == 1  # dry runs: nothing was submitted


def test_the_capacity_and_queue_views(driver: AnyType, examples: Server, shots: Path) -> None:
    from selenium.webdriver.common.by import By

    log_in(driver, examples, "alice", "capacity")
    until(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, ".chart .uplot")) == 2, "a chart per resource")
    legend = text_of(driver)
    assert "mine" in legend and "others (anonymous)" in legend and "free" in legend
    offline(driver, examples)
    shoot(driver, shots / "dashboard-capacity.png")
    driver.get(f"{examples.url}/#/queues")
    queues = until(driver, lambda d: texts(d, "[data-testid=queues] tbody td:first-child"), "the queues")
    assert "root.plan.etl_nightly" in queues and not any("wordcount" in q for q in queues)  # carol's: not alice's


def test_a_submission_through_the_api_arrives_without_a_reload(driver: AnyType, examples: Server,
                                                               shots: Path) -> None:
    from selenium.webdriver.common.by import By

    log_in(driver, examples, "alice")
    until(driver, lambda d: rows(d) == ["etl_nightly"], "alice's reservation")
    driver.execute_script("window.notReloaded = true")
    with examples.client("alice") as alice:
        assert submit(alice, FRESH).status_code == 201
    until(driver, lambda d: rows(d) == ["fresh", "etl_nightly"], "the new reservation")
    until(driver, lambda d: d.find_element(By.CSS_SELECTOR, "canvas[data-rendered='2']"), "its timeline row")
    assert driver.execute_script("return window.notReloaded") is True
    shoot(driver, shots / "dashboard-live-timeline.png")
    with Store.open(examples.state) as store:  # `rayon advance`: the now line follows the plan's clock
        store.advance(store.now() + timedelta(hours=2))
    until(driver, lambda d: "plan clock 2026-11-23 02:00" in (shown(d, "#status") or ""), "the clock moved")
    assert driver.execute_script("return window.notReloaded") is True
    driver.get(f"{examples.url}/#/live")
    feed = until(driver, lambda d: shown(d, "[data-testid=feed] tr[data-entry]"), "the feed")
    assert "fresh" in feed and "accepted" in feed  # the newest entry first
    offline(driver, examples)
    shoot(driver, shots / "dashboard-live.png")


def test_the_api_docs_work_offline(driver: AnyType, examples: Server, shots: Path) -> None:
    from selenium.webdriver.common.by import By

    driver.get(f"{examples.url}/docs")
    until(driver, lambda d: d.find_elements(By.CSS_SELECTOR, ".swagger-ui .opblock"), "the operations")
    assert "/v1/reservations" in text_of(driver)
    offline(driver, examples)
    shoot(driver, shots / "docs-swagger-offline.png")


def test_a_user_near_their_sharing_limit_sees_it(driver: AnyType, examples: Server, shots: Path) -> None:
    """Last: the examples' plan started over with a sharing policy that holds alice to 2.4% of the cluster at once
    (98 GiB of memory): etl_nightly, 80 GiB at its peak, is 81% of it."""
    from selenium.webdriver.common.by import By

    policy = "policies:\n  user_limits:\n    users:\n      alice: {instantaneous: 2.4%}\n"
    with Store.open(examples.state) as store:
        store.init((EXAMPLES / "cluster.yaml").read_text() + policy, "cluster.yaml", force=True)
        (loaded,) = load([str(EXAMPLES / "etl_nightly.rdl")], None, store.cluster(), None)
        assert store.submit(loaded.reservations[0]).accepted
    log_in(driver, examples, "alice", "capacity")
    near = until(driver, lambda d: shown(d, "[data-testid=near-limit]"), "the warning")
    assert "you hold 81% of what the sharing policy lets you hold of memory at once (2.4% of the capacity)" in near
    until(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, ".chart .uplot")) == 2, "the charts")
    assert "my limit" in text_of(driver)
    shoot(driver, shots / "dashboard-capacity-limit.png")


def test_a_large_plan_reads_the_allocations_of_the_rows_in_view_only(driver: AnyType, examples: Server) -> None:
    """Last but one's plan replaced: 600 accepted reservations, more than the dashboard reads at once for an admin
    (plan.js LAZY): the allocations come a page of 200 rows at a time, as the rows are scrolled into view."""
    from selenium.webdriver.common.by import By

    with Store.open(examples.state) as store:
        store.init((EXAMPLES / "cluster.yaml").read_text(), "cluster.yaml", force=True)
        for index in range(600):
            text = pinned(f"r{index}", index * 10, 10, 1).replace(f"reservation r{index} ",
                                                                 f"reservation r{index} user=u{index % 7} ")
            assert store.submit(one(text)).accepted
    log_in(driver, examples, "ops")
    until(driver, lambda d: d.find_element(By.CSS_SELECTOR, "canvas[data-rendered='600']"), "600 rows")
    pages = "return performance.getEntriesByType('resource').map(e => e.name).filter(n => n.includes('allocations'))"
    first = until(driver, lambda d: d.execute_script(pages), "the first page of allocations")
    assert [url.split("?", 1)[1] for url in first] == ["state=accepted&allocations=true&offset=0&limit=200"]
    driver.execute_script("document.querySelector('.timeline-scroll').scrollTop = 1e6")  # the last rows
    until(driver, lambda d: len(d.execute_script(pages)) == 2, "another page")
    assert driver.execute_script(pages)[1].endswith("offset=400&limit=200")
    offline(driver, examples)


def lagging_yunikorn(store: Store, log: QueueLog) -> YuniKornAllocated:
    """A stand-in YuniKorn answering in its REST shape (follower/follow/allocated.py): each reservation queue holds
    what the follower wrote for it a step before (the configuration reaches the scheduler a step late), the default
    queue half its guarantee (best effort asks for less), the plan queue their sum."""

    def answer(_: str) -> dict[str, AnyType]:
        now = store.now()
        before = {r.queue: r.figures["guaranteed"] for r in log.read(now - timedelta(minutes=1), now, "follower")}
        held = {q: ({k: v / 2 for k, v in g.items()} if q.endswith(".default") else g) for q, g in before.items()
                if q != "root.plan"}
        total = {k: sum(g.get(k, 0) for g in held.values()) for k in ("memory", "vcores")}
        tree = lambda q, g: {"queuename": q, "allocatedResource": {  # noqa: E731
            "memory": int(g.get("memory", 0) * 1024 * 1024), "vcore": int(g.get("vcores", 0) * 1000)}}
        return {**tree("root", total), "children": [{**tree("root.plan", total),
                                                     "children": [tree(q, g) for q, g in held.items()]}]}

    return YuniKornAllocated("http://yunikorn.example:9080", get=answer)


def test_the_plan_against_reality(driver: AnyType, examples: Server, shots: Path, tmp_path: Path) -> None:
    """Last: the examples' plan again, its first six hours followed a step at a time, the follower's round recorded
    at each step with what a (stand-in) YuniKorn held; then a simulation's event log loaded in the page."""
    from selenium.webdriver.common.by import By

    with Store.open(examples.state) as store:
        store.init((EXAMPLES / "cluster.yaml").read_text(), "cluster.yaml", force=True)
        for loaded in load([str(EXAMPLES)], None, store.cluster(), None):
            for reservation in loaded.reservations:
                store.submit(reservation)
        log = QueueLog(store.engine)
        publisher = QueuePublisher(store, history=log, allocated=lagging_yunikorn(store, log))
        start = store.now()
        for minute in range(6 * 60):
            store.advance(start + timedelta(minutes=minute))
            publisher.tick()
    log_in(driver, examples, "alice", "queues")
    until(driver, lambda d: d.find_element(By.CSS_SELECTOR, "[data-testid=reality][data-drawn='4']"), "four charts")
    drawn = driver.execute_script(
        "return [...document.querySelectorAll('.chart[data-queue]')].map(c => c.dataset.queue)")
    assert drawn == ["root.plan", "root.plan.default", "root.plan.etl_nightly", "others"]
    assert "wordcount" not in text_of(driver) and "carol" not in text_of(driver)  # carol's: summed, anonymous
    legend = text_of(driver)
    assert "written (guaranteed)" in legend and "actual: YuniKorn" in legend and "planned" in legend
    held = texts(driver, ".chart[data-queue='root.plan.etl_nightly'] [data-testid=held]")
    assert held and held[0].startswith("YuniKorn held ") and "% of what was written" in held[0]
    driver.find_element(By.XPATH, "//button[text()='6 hours']").click()
    until(driver, lambda d: d.find_element(By.CSS_SELECTOR, "[data-testid=reality][data-drawn='4']"), "redrawn")
    offline(driver, examples)
    shoot(driver, shots / "dashboard-reality.png")

    events = tmp_path / "events.jsonl"
    ran = CliRunner().invoke(main, ["simulate", str(EXAMPLES / "scenarios" / "tiny.yaml"), "--trace-out", str(events)])
    assert ran.exit_code == 0, ran.output
    log_in(driver, examples, "ops", "queues")
    until(driver, lambda d: d.find_element(By.CSS_SELECTOR, "[data-testid=reality][data-drawn]"), "the charts")
    driver.find_element(By.ID, "sim-file").send_keys(str(EXAMPLES / "cluster.yaml"))  # not an event log
    problem = until(driver, lambda d: shown(d, "[data-testid=sim-error]"), "the refusal")
    assert problem.strip().startswith("cluster.yaml: line 1 is not JSON")
    assert not driver.find_elements(By.CSS_SELECTOR, ".chart[data-queue='root.plan.etl']")
    origin = driver.find_element(By.ID, "sim-origin")
    origin.clear()
    origin.send_keys("2026-11-23T00:00:00Z")  # the scenario's start: its time 0
    driver.find_element(By.ID, "sim-file").send_keys(str(events))
    until(driver, lambda d: "Simulation events.jsonl" in (shown(d, "[data-testid=sources]") or ""), "the simulation")
    etl = until(driver, lambda d: d.find_element(By.CSS_SELECTOR, ".chart[data-queue='root.plan.etl']"), "its queue")
    assert "actual: simulation" in etl.text
    driver.find_element(By.ID, "sim-keep").click()  # now the server's: every user sees it by the token rules
    until(driver, lambda d: "kept on the server" in (shown(d, "[data-testid=sources]") or ""), "it kept")
    with examples.client("ops") as ops:
        kept = ops.get("/v1/queues/history", params={"source": "simulate", "from": "2026-11-23T00:00:00Z",
                                                      "to": "2026-11-23T01:00:00Z"}).json()["queues"]
    (etl_kept,) = [q for q in kept if q["queue"] == "root.plan.etl"]
    assert etl_kept["allocated"]["simulate"][0] == {"start": "2026-11-23T00:00:00Z", "end": "2026-11-23T00:10:00Z",
                                                    "allocated": {"memory": 8192, "vcores": 4}}
    assert browser.errors(driver) == []
    read = driver.execute_async_script(
        "const [text, done] = arguments; import('/dashboard/static/js/simlog.js').then((m) => {"
        "  const runs = m.simulated(text, 0, 60); const pick = (q) => (runs.get(q) || []).map("
        "    (r) => [r.s / 60000, r.e / 60000, r.allocated.vcores]); done([pick('root.plan.etl'), pick('root')]); })",
        events.read_text())
    etl, root = read
    assert etl[0] == [0, 10, 4]  # tiny.yaml's etl: a driver and 3 one-vcore executors for its first 10 minutes
    assert etl[1][2] == 0 and root[0][2] >= 4  # then nothing; the root holds every queue's containers
