"""The fleet what-if's worker: baseline sides computed ahead and beside the scenario, in side processes.

Whichever way the baseline side is computed (ahead of the question, beside its scenario side in a
side process, or here in the test), it is the same run: the same figures, the wall time apart.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import multiprocessing.connection as mp_connection
import threading
import time

import pytest

from dashboard.whatif.fleet_runs import Worker, baseline_question_from_form, question_from_form
from twin.fleet.edit_whatif import run_side
from twin.fleet.policy import Policy
from twin.fleet.whatif import WhatIfError

FORM = {"horizon": 1, "rate": "interactive", "pretrain": ["on"], "seed": 0}
WAIT_S = 300.0  # a bound on waiting for a side on a loaded machine, not a measurement


def _wait(run) -> dict:
    deadline = time.monotonic() + WAIT_S
    while run.finished_s is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert run.error is None and run.answer is not None, run.error
    return run.answer


def _same_side(a: dict, b: dict) -> None:
    """Equal figures (NaN equal to NaN), the wall times apart."""
    drop = ("wall_s", "sim_wall_s")
    text = [json.dumps({k: v for k, v in side.items() if k not in drop}, sort_keys=True) for side in (a, b)]
    assert text[0] == text[1]


@pytest.fixture(scope="module")
def here(demo_state):
    """The baseline side of the default workload, run in this process, and the worker's workload for it."""
    q = baseline_question_from_form(demo_state, FORM)
    jobs, policy, _ = Worker()._workload(q, demo_state, Policy())
    return run_side(demo_state, jobs, policy, q.options())


@pytest.fixture
def worker():
    w = Worker()
    yield w
    w.close()


def test_the_baseline_question_reads_the_workload_fields_only(demo_state):
    with_edit = question_from_form(demo_state, {**FORM, "ordering": "fcfs"})
    base = baseline_question_from_form(demo_state, {**FORM, "ordering": "fcfs"})
    assert base.edit.is_empty() and base.baseline_key() == with_edit.baseline_key()
    with pytest.raises(WhatIfError, match="horizon must be 1 to 30 days"):
        baseline_question_from_form(demo_state, {**FORM, "horizon": 45})


def test_the_form_asks_for_a_new_hall_like_one_the_site_has(demo_state):
    form = {**FORM, "convert-by": "new hall like", "convert-names": "H1", "convert-type": "GB200-NVL72"}
    q = question_from_form(demo_state, {**form, "grow-quotas": ["on"]})
    assert q.edit.conversion.add_hall_like == "H1" and not q.edit.conversion.halls and q.edit.grow_quotas
    assert not question_from_form(demo_state, {**form, "grow-quotas": []}).edit.grow_quotas
    assert not question_from_form(demo_state, {**FORM, "ordering": "fcfs", "grow-quotas": ["on"]}).edit.grow_quotas
    for names in ("H1, H1", "H7"):
        with pytest.raises(WhatIfError, match=r"new hall: name the one hall to build it like \(H1\)"):
            question_from_form(demo_state, {**form, "convert-names": names})


@pytest.mark.slow
def test_a_baseline_computed_ahead_serves_the_first_question(demo_state, worker, here):
    base_q = baseline_question_from_form(demo_state, FORM)
    assert worker.warm(base_q, demo_state, Policy())
    deadline = time.monotonic() + WAIT_S
    while worker.baselines.get(base_q.baseline_key()) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not worker.warm(base_q, demo_state, Policy())  # kept: nothing to start
    answer = _wait(worker.submit(question_from_form(demo_state, {**FORM, "ordering": "fcfs"}), demo_state, Policy()))
    assert answer["baseline_cached"]
    _same_side(answer["baseline"], here)
    assert not worker.ahead


@pytest.mark.slow
def test_a_question_joins_the_baseline_under_way(demo_state, worker, here):
    base_q = baseline_question_from_form(demo_state, FORM)
    assert worker.warm(base_q, demo_state, Policy())
    deadline = time.monotonic() + WAIT_S
    key = base_q.baseline_key()
    while key not in worker.ahead and worker.baselines.get(key) is None and time.monotonic() < deadline:
        time.sleep(0.01)  # the warm-up builds the workload, then hands the side to a side process
    run = worker.submit(question_from_form(demo_state, {**FORM, "backfill": "none"}), demo_state, Policy())
    answer = _wait(run)
    assert answer["baseline_cached"] or answer["baseline_ahead"]
    _same_side(answer["baseline"], here)


@pytest.mark.slow
def test_without_a_warm_up_the_baseline_runs_beside_the_scenario(demo_state, worker, here):
    answer = _wait(worker.submit(question_from_form(demo_state, {**FORM, "ordering": "sjf"}), demo_state, Policy()))
    assert not answer["baseline_cached"] and not answer["baseline_ahead"]
    _same_side(answer["baseline"], here)
    assert worker.baselines.get(baseline_question_from_form(demo_state, FORM).baseline_key()) is not None


@pytest.mark.slow
def test_a_newer_warm_up_supersedes_one_still_setting_up(demo_state, worker):
    """The warm-up of seed 1 is still building its workload when seed 2's is asked for: seed 1's never runs."""
    release = threading.Event()
    make = worker._workload

    def slow_workload(q, state, policy):
        if q.seed == 1:
            release.wait(WAIT_S)
        return make(q, state, policy)

    worker._workload = slow_workload  # type: ignore[method-assign]
    first, second = (baseline_question_from_form(demo_state, {**FORM, "seed": s}) for s in (1, 2))
    assert worker.warm(first, demo_state, Policy())
    assert worker.warm(second, demo_state, Policy())
    release.set()
    deadline = time.monotonic() + WAIT_S
    while (worker.warming or worker.ahead) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert worker.baselines.get(second.baseline_key()) is not None
    assert worker.baselines.get(first.baseline_key()) is None


@pytest.mark.slow
def test_closing_now_drops_the_side_under_way_and_ends_its_process(demo_state):
    """The server's exit: a baseline side running in a side process is dropped, not waited for."""
    q = baseline_question_from_form(demo_state, {**FORM, "horizon": 30})
    w = Worker(processes=1)
    jobs, policy, _ = w._workload(q, demo_state, Policy())
    fut, _ = w.baseline_future(q, demo_state, jobs, policy)
    deadline = time.monotonic() + WAIT_S
    while not fut.running() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert fut.running()
    processes = list(w._pool._processes.values())
    w.close(now=True)
    # a process's sentinel reads ready once it has exited (its exit code belongs to whichever thread reaps it)
    assert processes and all(mp_connection.wait([p.sentinel], 0) for p in processes)
    # the pool's own thread fails the side once it sees its process gone: wait for that, not for the side
    done, _ = cf.wait([fut], timeout=WAIT_S)
    assert done and (fut.cancelled() or fut.exception() is not None)
    assert w.baselines.get(q.baseline_key()) is None


def test_a_wait_returns_when_the_question_is_answered_and_is_bounded_for_its_waiters(demo_state):
    from dashboard.whatif.fleet_runs import WAITERS, Run

    worker = Worker()
    run = Run(baseline_question_from_form(demo_state, FORM))
    assert worker.wait(run, 0.0) and not run.done.is_set()  # waited, for nothing: not finished
    threading.Timer(0.05, run.done.set).start()
    t0 = time.monotonic()
    assert worker.wait(run, WAIT_S) and run.done.is_set()  # woken when it finishes, long before the bound
    assert time.monotonic() - t0 < WAIT_S / 2
    assert not worker.wait(run, WAIT_S)  # finished: no wait
    other = Run(baseline_question_from_form(demo_state, {**FORM, "seed": 1}))
    for _ in range(WAITERS):
        assert worker._waiters.acquire(blocking=False)  # every waiting place taken
    try:
        t0 = time.monotonic()
        assert not worker.wait(other, WAIT_S)  # no place: it returns at once rather than hold a thread
        assert time.monotonic() - t0 < WAIT_S / 2
    finally:
        for _ in range(WAITERS):
            worker._waiters.release()


def test_the_page_poll_waits_for_the_answer_and_backs_off_when_no_waiting_place_is_free(demo_state, page_module):
    from dash import no_update

    from dashboard.whatif.fleet_runs import WAITERS, WORKER, Run

    page = page_module("fleet_whatif")
    run = Run(baseline_question_from_form(demo_state, {**FORM, "seed": 7}), phase="scenario")
    token = "poll-test"
    WORKER.runs.put(token, run)
    for _ in range(WAITERS):
        assert WORKER._waiters.acquire(blocking=False)
    try:  # no waiting place: at once, the next poll allowed a second later
        assert page.poll(3, token)[2:] == (False, 4, page.BUSY_POLL_MS)
    finally:
        for _ in range(WAITERS):
            WORKER._waiters.release()
    status, answer, disabled, ticks, interval = page.poll(4, token)  # waits LONG_POLL_S, the question runs on
    assert status.startswith("running: scenario side") and answer is no_update
    assert (disabled, ticks, interval) == (False, 5, page.POLL_MS)

    def finish() -> None:
        run.error, run.finished_s = "refused: test", time.perf_counter()
        run.done.set()

    threading.Timer(0.05, finish).start()
    assert page.poll(5, token) == ("refused: test", [], True, no_update, no_update)  # woken by the end
    assert page.poll(6, None) == ("", no_update, True, no_update, no_update)  # no question: polling stops


def _text(component) -> str:
    """Every string in a Dash component tree, joined."""
    if isinstance(component, str):
        return component
    if isinstance(component, (list, tuple)):
        return " ".join(_text(c) for c in component)
    return _text(getattr(component, "children", None) or "")


def test_the_answer_lists_capped_jobs_only_when_there_are_some(demo_state, worker, page_module):
    page = page_module("fleet_whatif")
    quiet = worker.submit(question_from_form(demo_state, {**FORM, "ordering": "sjf"}), demo_state, Policy())
    _wait(quiet)
    assert quiet.answer["scenario"]["jobs"] == []
    line = _text(page.answer_children(quiet)[-1])
    assert "0 jobs held below full power, 0 requeued" in line and "listed" not in line
    cut = {**FORM, "dr-cut": 5, "dr-start": 2, "dr-hours": 4}
    capped = worker.submit(question_from_form(demo_state, cut), demo_state, Policy())
    _wait(capped)
    listed = len(capped.answer["scenario"]["jobs"])
    assert listed > 0
    assert f"the largest {listed:,} listed" in _text(page.answer_children(capped)[-1])
