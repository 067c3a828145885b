"""The tick cache: viewers of one page share one rendering per tick; clicks and other views are never shared."""

from __future__ import annotations

import threading

import pytest

from dashboard import ids
from dashboard.analysis.aggregates import DEFAULT_FLOOR_METRIC
from dashboard.views.context import screen_data
from dashboard.views.tick_cache import HIT, REFRESH, RENDER, STALE, TickCache
from tests.dashboard.standin_hub import StandinView, standin_app, synthetic_snapshot

OUTPUT = f"{ids.Floor.HALLS_LIVE}.data"  # the floor's live callback (its patches go through this relay store)


def _body(
    n: int, metric: str = DEFAULT_FLOOR_METRIC, changed: str = "shell-tick.n_intervals", url: str = "/floor"
) -> dict:
    """The floor's live request of tick ``n`` from a page at ``url`` (its view parameters in the screen store)."""
    return {
        "output": OUTPUT,
        "outputs": {"id": ids.Floor.HALLS_LIVE, "property": "data"},
        "inputs": [{"id": "shell-tick", "property": "n_intervals", "value": n}],
        "state": [
            {"id": "floor-metric", "property": "value", "value": metric},
            {"id": ids.Floor.JOB, "property": "data", "value": None},
            {"id": ids.Shell.SCREEN, "property": "data", "value": screen_data(url)},
        ],
        "changedPropIds": [changed],
    }


@pytest.fixture()
def app_and_calls(demo_state, monkeypatch):

    app = standin_app(StandinView(demo_state, synthetic_snapshot(demo_state, seed=4)))  # one fixed tick
    calls = []
    view = app.callback_map[OUTPUT]["callback"]

    def counted(*args, **kwargs):
        calls.append(1)
        return view(*args, **kwargs)

    monkeypatch.setitem(app.callback_map[OUTPUT], "callback", counted)
    return app, calls


def _post(client, body, referer="http://127.0.0.1:8050/floor"):
    """The request as a browser at http://127.0.0.1:8050 sends it (its Referer is the page URL; callbacks do not read it).

    The host is not the test client's default, so a background copy that lost the caller's
    host would be refused as cross-site.
    """
    return client.post(
        "/_dash-update-component", json=body, headers={"Referer": referer}, base_url="http://127.0.0.1:8050"
    )


def test_the_next_period_is_rendered_in_the_background_with_the_callers_headers(app_and_calls, monkeypatch):
    import dashboard.views.tick_cache as tick_cache

    app, calls = app_and_calls
    client = app.server.test_client()
    now = [1_000_000.0]
    monkeypatch.setattr(tick_cache.time, "time", lambda: now[0])
    first = _post(client, _body(1))
    now[0] += 10.0  # a later period
    threads_before = set(threading.enumerate())
    second = _post(client, _body(2))
    assert second.data == first.data  # answered at once with the last rendering
    for thread in set(threading.enumerate()) - threads_before:
        thread.join(timeout=30)
    assert len(calls) == 2  # the background copy rendered the new period
    third = _post(client, _body(3))
    assert third.status_code == 200 and len(calls) == 2  # and it is what the next viewer gets


@pytest.mark.slow
def test_viewers_of_one_tick_share_one_rendering(app_and_calls):
    app, calls = app_and_calls
    client = app.server.test_client()
    first = _post(client, _body(1))
    assert first.status_code == 200
    answers = [_post(client, _body(n)) for n in range(2, 12)]  # ten more viewers, other interval counters
    assert all(a.status_code == 200 and a.data == first.data for a in answers)
    assert len(calls) <= 2  # once, or twice when the second turned over between the requests
    cache = app.server.extensions["clustertwin_tick_cache"]
    assert cache.hits >= 9


def test_other_state_view_and_non_tick_requests_render_anew(app_and_calls):
    app, calls = app_and_calls
    client = app.server.test_client()
    _post(client, _body(1))
    _post(client, _body(1, metric="rack_power_kw"))  # another state: another key
    _post(client, _body(1, url="/floor?view=scenario:nope"))  # another view
    _post(client, _body(1, changed="floor-metric.value"))  # a user's change: never from the cache
    _post(client, _body(2, changed="floor-metric.value"))
    assert len(calls) == 5


def test_the_view_in_the_screen_store_separates_renderings_and_the_referer_does_not(app_and_calls, monkeypatch):
    """Viewers of live and of a scenario share nothing; viewers of one view share whatever their Referer says."""
    import dashboard.views.tick_cache as tick_cache

    app, calls = app_and_calls
    client = app.server.test_client()
    monkeypatch.setattr(tick_cache.time, "time", lambda: 1_000_000.0)  # one period throughout
    scenario = "/floor?view=scenario:demo-cdu-loss"
    live_answer = _post(client, _body(1))
    scenario_answer = _post(client, _body(1, url=scenario), referer="http://127.0.0.1:8050/floor")  # a stale Referer
    assert len(calls) == 2 and live_answer.status_code == scenario_answer.status_code == 200
    assert live_answer.data != scenario_answer.data  # each view's own floor
    assert _post(client, _body(2, url=scenario)).data == scenario_answer.data
    assert _post(client, _body(3), referer=f"http://127.0.0.1:8050{scenario}").data == live_answer.data
    compared = _post(client, _body(4, url=f"{scenario}&compare=live&diff=1"))
    assert len(calls) == 3 and compared.data not in (live_answer.data, scenario_answer.data)


def test_a_user_action_makes_earlier_renderings_unreachable(app_and_calls):
    app, calls = app_and_calls
    client = app.server.test_client()
    _post(client, _body(1))
    _post(client, _body(2))
    client.post("/api/v1/alerts/1/silence", json={"duration_s": 60})  # any POST that is not a tick
    _post(client, _body(3))
    assert len(calls) == 2


def test_concurrent_viewers_wait_for_the_first_rendering_in_flight():
    cache = TickCache()
    assert cache.claim("k", "b") == (RENDER, None)  # the first renders
    results = []
    waiters = [threading.Thread(target=lambda: results.append(cache.claim("k", "b"))) for _ in range(5)]
    for w in waiters:
        w.start()
    cache.finish("k", b"{}", 200, base="b")
    for w in waiters:
        w.join(timeout=5)
    assert [(action, e.body) for action, e in results] == [(HIT, b"{}")] * 5
    assert cache.misses == 1 and cache.hits == 5


def test_the_next_period_answers_the_last_rendering_while_one_renders_anew():
    cache = TickCache()
    cache.claim("k1", "b")
    cache.finish("k1", b"old", base="b")
    action, entry = cache.claim("k2", "b")  # the next period: the caller answers b"old" and refreshes
    assert (action, entry.body) == (REFRESH, b"old")
    action, entry = cache.claim("k2", "b")  # others meanwhile: the last rendering, no waiting
    assert (action, entry.body) == (STALE, b"old")
    cache.finish("k2", b"new", base="b")
    action, entry = cache.claim("k2", "b")
    assert (action, entry.body) == (HIT, b"new")


def test_a_failed_rendering_is_not_shared():
    cache = TickCache()
    assert cache.claim("k", "b")[0] == RENDER
    waiter: list = []
    thread = threading.Thread(target=lambda: waiter.append(cache.claim("k", "b")))
    thread.start()
    cache.finish("k", None)
    thread.join(timeout=5)
    assert waiter == [(RENDER, None)]  # it renders on its own
    assert cache.claim("k", "b") == (RENDER, None)  # and nothing was kept


def test_the_cache_is_bounded():
    cache = TickCache(max_entries=3)
    for key in "abcde":
        cache.claim(key, key)
        cache.finish(key, b"x", base=key)
    assert len(cache._entries) == 3 and len(cache._latest) == 3
