"""Real-browser checks that failed and off equipment look failed and off, at both screen sizes.

The hub is the real live hub fed by the synthetic stream with faults injected: busway
H1-BW-R01-A tripped, generator GEN-01 lost, CDU H1-R01-K02-CDU lost (its pumps stopped).
The job covers four racks, so the synthetic plant powers the other twelve off.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import expect

from dashboard.figures import power as power_figs
from dashboard.figures.floor import OFF_LEGEND
from tests.dashboard.colossus_app import colossus_app, freshen  # noqa: F401

pytestmark = pytest.mark.browser

FAULTS = ("feed:H1-BW-R01-A", "source:GEN-01", "cdu:H1-R01-K02-CDU")
VIEWPORTS = ["1366x768", "1920x1080"]


@pytest.fixture(scope="module")
def faulted(dash_app, tmp_path_factory):
    """``(served app, hub)``: the demo live hub with :data:`FAULTS`, three ticks in, stamped now."""
    dash_app.server.test_client().get("/")  # the session app takes its inline scripts first (see colossus_app)
    from dashboard.app import app_for_hub
    from ingest.live.runtime import build_hub
    from tests.dashboard.conftest import ServedApp

    start = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=3)
    db = tmp_path_factory.mktemp("equipment") / "hub.db"
    hub = build_hub("demo", f"sqlite:///{db}", record=False, start=start, job="megatron-18b-a100", faults=FAULTS)
    for second in range(4):
        hub.step(start + timedelta(seconds=second))
    app = app_for_hub(hub, tick_ms=60_000)  # no live refresh during the checks: the page shows the stepped state
    app.server.test_client().get("/")
    served = ServedApp(app)
    yield served, hub
    served.stop()
    hub.db.dispose()


def _fresh(hub) -> None:
    """One more tick stamped now, so the page shows live (not stale, greyed) data."""
    hub.step(datetime.now(UTC))


def _no_overlap(page, graph: str, other: str) -> None:
    """The graph's modebar (shown on hover) does not cover its ``other`` element (title, legend)."""
    page.locator(f"{graph} .nsewdrag, {graph} .sankey").first.hover()
    bar = page.locator(f"{graph} .modebar").first
    expect(bar).to_be_visible()
    a = bar.bounding_box()
    for box in [el.bounding_box() for el in page.locator(f"{graph} {other}").all()]:
        if box is None:
            continue
        apart = (
            a["x"] + a["width"] <= box["x"]
            or box["x"] + box["width"] <= a["x"]
            or a["y"] + a["height"] <= box["y"]
            or box["y"] + box["height"] <= a["y"]
        )
        assert apart, f"{graph} modebar {a} overlaps {other} {box}"


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_power_marks_the_dead_busway_and_the_feed_left_alone(faulted, new_page, screenshot, viewport):
    served, hub = faulted
    _fresh(hub)
    page, log = new_page(viewport)
    page.goto(served.url("/power"))
    legend = page.locator("#power-tree .legend")
    expect(legend).to_contain_text(power_figs.DEAD_LEGEND)
    expect(legend).to_contain_text(power_figs.ALONE_LEGEND)
    # site view: busways grouped per UPS; the A group names its dead busway
    expect(page.locator("#power-tree .textpoint", has_text="1 dead")).to_have_count(1)
    screenshot(page, f"equipment-power-site-{viewport}")
    page.goto(served.url("/power?element=H1-UPS1-A"))
    expect(page.locator("#power-tree .gtitle")).to_contain_text("H1-UPS1-A")
    expect(page.locator("#power-tree .textpoint", has_text="H1-BW-R01-A")).to_have_count(1)
    dead_points = page.locator("#power-tree .scatterlayer .trace").nth(-2).locator(".point")  # the crosses
    expect(dead_points).to_have_count(1)
    screenshot(page, f"equipment-power-{viewport}")
    for graph, other in (
        ("#power-tree", ".gtitle"),
        ("#power-tree", ".legend"),
        ("#power-headroom", ".gtitle"),
        ("#power-headroom", ".legend"),
    ):
        _no_overlap(page, graph, other)
    assert log.errors == []


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_cooling_puts_the_lost_cdu_first_in_critical_style(faulted, new_page, screenshot, viewport):
    served, hub = faulted
    _fresh(hub)
    page, log = new_page(viewport)
    page.goto(served.url("/cooling"))
    first = page.locator("#cooling-worst tbody tr").first
    expect(first).to_contain_text("H1-R01-K02-CDU")
    expect(first).to_contain_text("LOST")
    expect(first).to_have_class("row-critical")
    expect(first.locator("a")).to_have_attribute("href", "/cdu?cdu=H1-R01-K02-CDU")
    colour = first.locator("td").nth(1).evaluate("el => getComputedStyle(el).color")
    assert colour == "rgb(255, 138, 61)"
    expect(page.locator("#cooling-use-hist .gtitle")).to_contain_text("1 lost")
    # the whole table is visible: its last column is not clipped by the panel
    table = page.locator("#cooling-worst table").bounding_box()
    panel = page.locator("#cooling-worst").bounding_box()
    assert table["x"] + table["width"] <= panel["x"] + panel["width"] + 1
    screenshot(page, f"equipment-cooling-{viewport}")
    for graph, other in (("#cooling-use-hist", ".gtitle"), ("#cooling-ttt", ".legend")):
        _no_overlap(page, graph, other)
    assert log.errors == []


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_floor_hatches_off_racks_and_outlines_alerted_ones(faulted, new_page, screenshot, viewport):
    served, hub = faulted
    _fresh(hub)
    page, log = new_page(viewport)
    page.goto(served.url("/floor"))
    legend = page.locator("#floor-halls .legend")
    expect(page.locator(".main.is-stale")).to_have_count(0)
    expect(legend).to_contain_text(OFF_LEGEND)
    expect(legend).to_contain_text("rack with a critical alert")
    expect(page.locator("#floor-halls .annotation-text", has_text="R01")).to_have_count(1)
    # the off hatch is a patterned fill
    expect(page.locator("#floor-halls defs pattern")).not_to_have_count(0)
    screenshot(page, f"equipment-floor-{viewport}")
    # opening a rack from the plan scrolls its panel into view
    box = page.locator("#floor-halls .nsewdrag").first.bounding_box()
    page.mouse.click(box["x"] + box["width"] * 0.06, box["y"] + box["height"] * 0.08)
    expect(page.locator("#floor-rack-title")).to_have_text("Rack H1-R01-K01")
    expect(page.locator("#floor-rack-title")).to_be_in_viewport()
    assert page.evaluate("window.scrollY") > 0
    assert log.errors == []


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_colossus_floor_labels_every_row(colossus_app, new_page, screenshot, viewport):  # noqa: F811
    served, hub = colossus_app
    freshen(hub)
    page, log = new_page(viewport)
    page.goto(served.url("/floor"))
    n_rows = len(set(hub.state.rack_row.tolist()))
    expect(page.locator("#floor-halls .annotation-text", has_text="R")).to_have_count(n_rows)
    expect(page.locator("#floor-halls .legend")).to_contain_text(OFF_LEGEND)
    screenshot(page, f"equipment-floor-colossus-{viewport}")
    _no_overlap(page, "#floor-halls", ".legend")
    assert log.errors == []


def _luminance(rgb: str) -> float:
    channels = [int(v) / 255 for v in rgb[rgb.index("(") + 1 : rgb.index(")")].split(",")[:3]]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def test_critical_badge_meets_wcag_aa_contrast(faulted, new_page):
    served, hub = faulted
    _fresh(hub)
    page, log = new_page("1366x768")
    page.goto(served.url("/alerts"))
    badge = page.locator(".sev-critical").first
    expect(badge).to_be_visible()
    fg, bg = badge.evaluate("el => [getComputedStyle(el).color, getComputedStyle(el).backgroundColor]")
    high, low = sorted((_luminance(fg), _luminance(bg)), reverse=True)
    assert (high + 0.05) / (low + 0.05) >= 4.5, (fg, bg)
    assert log.errors == []
