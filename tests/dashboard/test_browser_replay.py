"""Real-browser replay: pick a shipped incident, play, change speed, scrub, jump to the next event,
and every page follows the replayed moment through the URL."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

import pytest
from playwright.sync_api import expect

from dashboard.views.replay import incident_recording

pytestmark = pytest.mark.browser

PUMP = "colossus-cdu-pump-failure"
T0 = datetime(2024, 7, 22, 15, 0, tzinfo=UTC)
BANNER = "#shell-view-banner"
PAGES = {"/": "Overview", "/floor": "Floor", "/cooling": "Cooling", "/power": "Power", "/alerts": "Alerts"}


def _url_instant(page) -> datetime:
    """The replayed instant written in the page URL."""
    search = page.evaluate("decodeURIComponent(window.location.search)")
    assert f"view=replay:{PUMP}@" in search, search
    return datetime.fromisoformat(search.split("@", 1)[1].split("&")[0].replace("Z", "+00:00"))


def _seconds(page) -> float:
    return (_url_instant(page) - T0).total_seconds()


def _short_of_pump(page) -> str:
    return page.locator(".kpi", has_text="CDUs short of a pump").locator(".kpi-value").inner_text()


def test_play_speed_scrub_next_event_and_every_page_follows(served_app, new_page, screenshot):
    page, log = new_page("1366x768")
    page.goto(served_app.url("/replay"))
    expect(page.locator("#shell-main h1:text-is('Incident replay')")).to_be_visible()
    page.fill("#replay-search", "pump")
    expect(page.locator(".replay-card")).to_have_count(1)
    page.fill("#replay-search", "")
    expect(page.locator(".replay-card")).to_have_count(5)
    page.click(".replay-card >> text=CDU pump failure")
    expect(page.locator("#replay-instant")).to_have_text("2024-07-22 15:00:00 UTC")
    expect(page.locator(BANNER)).to_contain_text(f"REPLAY {PUMP} · 2024-07-22 15:00:00 UTC")

    # play at 20×: the replayed time follows the wall clock
    page.click("#replay-play")
    started = time.monotonic()
    page.wait_for_timeout(5000)
    page.click("#replay-play")  # pause
    wall_s = time.monotonic() - started
    played_s = _seconds(page)
    # the URL holds whole 5 s frames: the position shown lags the clock by less than one frame
    assert 0.85 * 20 * wall_s <= played_s + 5 and played_s <= 1.05 * 20 * wall_s, (played_s, wall_s)
    print(f"20x: {played_s:.0f} s replayed in {wall_s:.2f} s wall ({played_s / wall_s:.1f}x)")
    expect(page.locator("#replay-play")).to_have_text("Play")
    paused = _seconds(page)
    page.wait_for_timeout(1000)
    assert _seconds(page) == paused  # paused means paused

    # faster: 100× covers more replayed time in the same wall time
    page.click("#replay-speed >> text=100×")
    page.click("#replay-play")
    page.wait_for_timeout(2000)
    page.click("#replay-play")
    assert _seconds(page) - paused >= 100.0, _seconds(page) - paused

    # scrub back to the start, then jump to the next event (the pump stops at 60 s)
    slider = page.locator("#replay-slider .dash-slider-root")
    box = slider.bounding_box()
    page.mouse.click(box["x"] + 1, box["y"] + box["height"] / 2)
    expect(page.locator("#replay-instant")).to_have_text("2024-07-22 15:00:00 UTC")
    page.click("#replay-next-event")
    expect(page.locator("#replay-instant")).not_to_have_text("2024-07-22 15:00:00 UTC")
    # "next event" visits the frames where alerts opened, in order (clearings are not stops), up to the pump's
    from dashboard.pages.replay import event_frames  # a page module: importable once the app exists

    rec = incident_recording(PUMP)
    stops = [(rec.rec.ts[i] - T0).total_seconds() for i in event_frames(rec) if i > 0]
    assert 60.0 in stops
    visited = [_seconds(page)]
    while visited[-1] < 60 and len(visited) < len(stops):
        page.click("#replay-next-event")
        page.wait_for_timeout(300)
        visited.append(_seconds(page))
    assert visited == stops[: stops.index(60.0) + 1]
    expect(page.locator("#replay-instant")).to_have_text("2024-07-22 15:01:00 UTC")
    expect(page.locator(".replay-moment")).to_contain_text("H1-R01-K01-CDU")
    expect(page.locator(BANNER)).to_contain_text("2024-07-22 15:01:00 UTC")
    screenshot(page, "replay-1366x768")

    # the nav carries the moment to every page
    page.click(".nav-link >> text=Cooling")
    expect(page.locator("#shell-main h1:text-is('Cooling')")).to_be_visible()
    expect(page.locator(BANNER)).to_contain_text(f"REPLAY {PUMP} · 2024-07-22 15:01:00 UTC")
    expect(page.locator(".kpi", has_text="CDUs short of a pump").locator(".kpi-value")).to_have_text("1")
    assert log.errors == [], log.errors


@pytest.mark.parametrize("at, short", [("2024-07-22T15:00:30Z", "0"), ("2024-07-22T15:03:00Z", "1")])
def test_every_page_shows_the_recorded_moment(served_app, new_page, at, short):
    page, log = new_page("1366x768")
    view = f"replay:{PUMP}@{at}"
    shown = at.replace("T", " ").replace("Z", " UTC")
    for path, title in PAGES.items():
        page.goto(served_app.url(f"{path}?view={view}"))
        expect(page.locator(f"#shell-main h1:text-is('{title}')")).to_be_visible()
        expect(page.locator(BANNER)).to_have_class("view-banner view-banner-replay")
        expect(page.locator(BANNER)).to_contain_text(f"REPLAY {PUMP} · {shown}")
        expect(page.locator("#shell-view-error")).to_have_count(0)
    page.goto(served_app.url(f"/cooling?view={view}"))
    expect(page.locator(".kpi", has_text="CDUs short of a pump").locator(".kpi-value")).to_have_text(short)
    page.goto(served_app.url(f"/alerts?view={view}"))
    pump_alert = page.locator("#shell-main", has_text="H1-R01-K01-CDU lost")
    expect(pump_alert).to_have_count(1 if short == "1" else 0)
    assert log.errors == [], log.errors


@pytest.mark.parametrize("viewport", ["1366x768", "1920x1080"])
def test_the_jobs_and_teams_the_incident_hit(served_app, new_page, screenshot, viewport):
    page, log = new_page(viewport)
    page.goto(served_app.url(f"/replay?view=replay:{PUMP}@2024-07-22T15:02:00Z"))
    expect(page.locator("#replay-hits-summary")).to_have_text("1 job hit, 24,576 GPUs; the first at 15:01:00 UTC.")
    row = page.locator("#replay-hit-jobs tbody tr").first
    expect(row).to_contain_text("colossus-405b-24k")
    expect(row).to_contain_text("1 of 384")
    expect(row).to_contain_text("CDU H1-R01-K01-CDU lost")
    page.locator("#replay-hits").scroll_into_view_if_needed()
    box = page.locator("#replay-hit-jobs").bounding_box()
    assert box is not None and box["width"] > 300  # the table is laid out, not squeezed into a sliver
    screenshot(page, f"replay-hits-{viewport}")
    assert log.errors == [], log.errors


def test_unknown_incident_says_so(served_app, new_page):
    page, log = new_page("1366x768")
    page.goto(served_app.url("/cooling?view=replay:nope@2024-07-22T15:00:00Z"))
    expect(page.locator("#shell-view-error")).to_contain_text("no such incident 'nope'")


@pytest.mark.parametrize("viewport", ["1366x768", "1920x1080"])
def test_twin_versus_recorded(served_app, new_page, screenshot, viewport):
    page, log = new_page(viewport)
    page.goto(served_app.url(f"/replay?view=replay:{PUMP}@2024-07-22T15:02:00Z"))
    expect(page.locator("#replay-instant")).to_have_text("2024-07-22 15:02:00 UTC")
    page.click("#replay-run-twin")
    expect(page.locator("#replay-metrics")).to_contain_text("coolant_return_temp_c", timeout=60_000)
    expect(page.locator(".replay-twin-graphs .js-plotly-plot")).to_have_count(5)
    screenshot(page, f"replay-twin-{viewport}")
    assert log.errors == [], log.errors


def test_jobs_page_shows_the_recorded_job_against_the_twin(served_app, new_page, screenshot):
    page, log = new_page("1366x768")
    # the rack throttles and the job slows at 15:01:40-45 (step 8.4 → 16.0 s), just before the pump restarts
    page.goto(served_app.url(f"/jobs?view=replay:{PUMP}@2024-07-22T15:01:45Z"))
    expect(page.locator("#shell-main h1:text-is('Jobs')")).to_be_visible()
    record = page.locator("[data-replay-job='colossus-405b-24k']")
    expect(record).to_contain_text("recorded")
    expect(record).to_contain_text("throughput (tokens/s)")
    expect(page.locator('[data-kpi="tokens"] .kpi-value')).not_to_have_text("–")
    expect(page.locator("#jobs-bottlenecks")).to_contain_text("H1-R01-K01")
    screenshot(page, "replay-jobs-1366x768")
    page.goto(served_app.url(f"/power?view=replay:{PUMP}@2024-07-22T15:01:50Z"))
    # the swing of a replay comes from the recorded job's phases (not recorded as such, but not unknown)
    swing = page.locator('[data-kpi="swing"] .kpi-value')
    expect(swing).to_have_text(re.compile(r"^\d+(\.\d)?$"))
    assert log.errors == [], log.errors


def _choose_file(page, path) -> None:
    with page.expect_file_chooser() as chooser:
        page.click("#replay-import-choose")
    chooser.value.set_files(str(path))


def test_import_an_incident_from_the_page(served_app, new_page, screenshot, monkeypatch, tmp_path):
    """The library's import panel posts the file to the API: a bundle is stored under the name given and
    opens; a file that is not one is refused with the API's one-line reason."""
    from pathlib import Path

    library = tmp_path / "library"
    library.mkdir()
    monkeypatch.setenv("CLUSTERTWIN_INCIDENTS", str(library))
    bundle = Path(__file__).resolve().parents[2] / "data" / "incidents" / "colossus-generator-trip.ctincident"
    junk = tmp_path / "junk.ctincident"
    junk.write_bytes(b"not a bundle")
    page, log = new_page("1366x768")
    page.goto(served_app.url("/replay"))
    page.get_by_text("Import an incident").click()
    _choose_file(page, junk)
    page.click("#replay-import-button")
    expect(page.locator("#replay-import-result")).to_contain_text("refused: ")
    _choose_file(page, bundle)
    expect(page.locator("#replay-import-file")).to_have_text(bundle.name)
    page.fill("#replay-import-name", "trip-copy")
    page.click("#replay-import-button")
    expect(page.locator("#replay-import-result")).to_contain_text("imported trip-copy", timeout=60_000)
    assert (library / "trip-copy.ctincident").is_file()
    screenshot(page, "replay-import-1366x768")
    page.locator("#replay-import-result a").click()
    expect(page).to_have_url(re.compile(r"view=replay(%3A|:)trip-copy"))
    expect(page.locator(".replay-body h2").first).to_be_visible()
    assert [e for e in log.errors if "422" not in e] == []  # the refused junk is a 422, nothing else
