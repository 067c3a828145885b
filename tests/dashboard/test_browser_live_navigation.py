"""Navigating away while a live update is in flight: the late answer must not break the new page.

Live pages answer the shell's tick with partial figure updates (``dash.Patch``).  After a
navigation puts the new page's layout in, Dash drops the callbacks of the removed
components one event-loop turn later (a ``setTimeout(0)``).  A tick answer landing in that
turn used to find no figure to patch: "Cannot patch undefined" in the console (once in eight
navigations when a tick's answer and the navigation's arrived together).  The test makes
that turn certain: a wrapper around the page's ``fetch`` holds the answers to one tick back
and lets them through in a timer set while the navigation's answer is being read, that is,
after the new layout is in and before Dash drops the old callbacks.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from dashboard import ids
from dashboard.callbacks.dash_internals import PUSH_STATE_JS

pytestmark = pytest.mark.browser

LIVE_PAGES = ("/", "/floor", "/power", "/cooling", "/fabric", "/jobs")  # their live callbacks answer with patches
ROUNDS = 3  # navigations per page

# window.__race: holding (set by the test), held (tick answers held so far), outputs (theirs), patches (of them
# carrying a Patch)
_RACE_JS = """
(() => {
    const realFetch = window.fetch.bind(window);
    const waiting = [];
    const race = window.__race = {holding: false, held: 0, patches: 0, outputs: []};
    function readNow(text, res) {  // a response whose json() resolves at once (no body read between)
        const copy = new Response(res.status === 204 ? null : text,
                                  {status: res.status, statusText: res.statusText, headers: res.headers});
        const data = res.status === 204 ? null : JSON.parse(text);
        copy.json = () => Promise.resolve(data);
        return copy;
    }
    window.fetch = async function(input, init) {
        const url = typeof input === 'string' ? input : input.url;
        if (!race.holding || !url.includes('/_dash-update-component') || !init || typeof init.body !== 'string') {
            return realFetch(input, init);
        }
        const body = JSON.parse(init.body);
        const output = String(body.output || '');
        const navigation = output.includes('_pages_content.children');
        const tick = (body.changedPropIds || []).includes('%(tick)s') && !output.includes('shell-');
        if (!navigation && !tick) { return realFetch(input, init); }
        const res = await realFetch(input, init);
        const text = await res.text();
        if (tick) {
            race.held += 1;
            race.outputs.push(output);
            race.patches += text.includes('__dash_patch_update') ? 1 : 0;
            await new Promise(resolve => waiting.push(resolve));
            return readNow(text, res);
        }
        race.holding = false;
        const copy = readNow(text, res);
        const json = copy.json;
        copy.json = () => {
            setTimeout(() => waiting.splice(0).forEach(resolve => resolve()), 0);
            return json();
        };
        return copy;
    };
})();
""" % {"tick": f"{ids.Shell.TICK}.n_intervals"}


def test_a_live_patch_landing_with_a_navigation_leaves_no_console_error(served_app, new_page):
    page, log = new_page("1366x768")
    page.add_init_script(_RACE_JS)
    for path in LIVE_PAGES:
        patches = 0
        for _ in range(ROUNDS):
            page.goto(served_app.url(path))
            expect(page.locator(f"#{ids.Shell.MAIN} .js-plotly-plot").first).to_be_visible()
            page.wait_for_timeout(300)  # the page's own first callbacks have answered
            page.evaluate("window.__race.holding = true")
            page.wait_for_function("() => window.__race.held > 0")  # a tick fired (every 2 s); its answers wait
            page.evaluate(f"({PUSH_STATE_JS})('/alerts')")
            expect(page.locator(f"#{ids.Alerts.SUMMARY}")).to_be_visible()
            page.wait_for_timeout(500)  # the held answers are applied (or dropped)
            assert page.evaluate("window.__race.holding") is False, "the navigation was not held"
            patches += page.evaluate("window.__race.patches")
            assert log.errors == [], f"{path}: {log.errors[0]}"
        assert patches > 0, f"{path}: no held answer carried a patch, the race was not exercised"


def test_a_late_live_answer_is_not_applied_to_the_same_page_showing_another_view(served_app, new_page):
    """``/floor`` → ``/floor?view=scenario:…``: the new page has the same component ids, so the held answers of the
    live floor land in its relay store; the relay drops them (their screen is gone) and the floor stays the scenario's."""
    scenario = "/floor?view=scenario:demo-cdu-loss"
    z = f"() => JSON.stringify(document.querySelector('#{ids.Floor.HALLS} .js-plotly-plot').data[0].z)"
    page, log = new_page("1366x768")
    page.goto(served_app.url(scenario))  # the scenario's own floor, for reference
    expect(page.locator(f"#{ids.Floor.HALLS} .js-plotly-plot")).to_be_visible()
    own = page.evaluate(z)
    page.add_init_script(_RACE_JS)
    page.goto(served_app.url("/floor"))
    expect(page.locator(f"#{ids.Floor.HALLS} .js-plotly-plot")).to_be_visible()
    page.wait_for_function("() => (window.clustertwinRelays || {}).applied > 0")  # a live patch went through
    assert page.evaluate(z) != own  # live colours, not the scenario's
    dropped = page.evaluate("window.clustertwinRelays.dropped")
    page.evaluate("window.__race.holding = true")
    # the live floor's own answer must be among the held ones (a request sent after the URL changed names the scenario)
    page.wait_for_function(f"() => window.__race.outputs.includes('{ids.Floor.HALLS_LIVE}.data')")
    page.evaluate(f"({PUSH_STATE_JS})({scenario!r})")
    expect(page.locator(f"#{ids.Shell.VIEW_BANNER}")).to_contain_text("SCENARIO")
    page.wait_for_function(f"() => window.clustertwinRelays.dropped > {dropped}")  # the live answer was dropped
    assert page.evaluate("window.__race.patches") > 0, "no held answer carried a patch, the race was not exercised"
    assert page.evaluate(z) == own
    assert log.errors == [], log.errors[0]


def test_live_patches_still_reach_the_figures(served_app, demo_state, new_page):
    """The relays deliver: the overview's trends move on with the tick, the floor's selection outline goes on close."""
    page, log = new_page("1366x768")
    page.goto(served_app.url("/"))
    last_x = f"() => document.querySelector('#{ids.Overview.POWER_TREND} .js-plotly-plot').data[0].x.slice(-1)[0]"
    expect(page.locator(f"#{ids.Overview.POWER_TREND} .js-plotly-plot")).to_be_visible()
    first = page.evaluate(last_x)
    page.wait_for_function(f"() => ({last_x})() !== {first!r}")  # a live patch moved the trend's end
    assert log.errors == []

    page.goto(served_app.url(f"/floor?rack={demo_state.rack_name[3]}"))
    outline = (
        f"() => document.querySelector('#{ids.Floor.HALLS} .js-plotly-plot')"
        f".data[{len(demo_state.hall_name)}].x.length"
    )  # the selection outline trace follows the halls
    expect(page.locator(f"#{ids.Floor.HALLS} .js-plotly-plot")).to_be_visible()
    assert page.evaluate(outline) > 0
    page.locator(f"#{ids.Floor.RACK_CLOSE}").click()
    page.wait_for_function(f"() => ({outline})() === 0")
    assert log.errors == []
