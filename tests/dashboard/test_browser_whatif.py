"""Real-browser checks of ``/whatif`` on colossus: real edits, the comparison, the highlighted floor.

Each test creates its own scenario through the page, makes edits with the page's
controls and reads the answer the browser shows (comparison tables, the floor's
outline and colour traces).  Refused edits are checked beside their control and in the
scenario store behind the app.
"""

from __future__ import annotations

import json
import re
import uuid

import pytest
from playwright.sync_api import expect

from tests.dashboard.colossus_app import colossus_app, freshen  # noqa: F401

pytestmark = pytest.mark.browser
EDIT_BUDGET_S = 20  # generous waits on a loaded 2-core machine; the benchmark measures the real time


def _store(served):
    from dashboard.whatif_store import STORE_CONFIG_KEY

    return served.server.app.config[STORE_CONFIG_KEY]


def _open_with_scenario(served, hub, new_page, viewport="1366x768"):
    """The page with a fresh scenario created through the scenario bar; returns (page, log, name)."""
    freshen(hub)
    page, log = new_page(viewport)
    page.goto(served.url("/whatif"))
    expect(page.locator("#whatif-floor .js-plotly-plot")).to_have_count(1)
    name = f"t-{uuid.uuid4().hex[:8]}"
    page.fill("#whatif-name", name)
    page.click("#whatif-new")
    expect(page.locator("#whatif-scenario-msg")).to_have_text(f"created {name}")
    expect(page.locator("#whatif-comparison h2")).to_contain_text(f"Scenario {name}")
    return page, log, name


def _select(page, pattern: str, count: int) -> None:
    page.fill("#whatif-pattern", pattern)
    page.click("#whatif-select")
    expect(page.locator("#whatif-selection-text")).to_contain_text(f"{count} rack")


def _choose(page, dropdown_id: str, text: str) -> None:
    """Pick ``text`` in a dcc.Dropdown by typing it (the searchable lists send matches only)."""
    page.click(f"#{dropdown_id}")
    page.keyboard.type(text)
    option = page.get_by_role("option", name=text, exact=True)  # the list opens in a popover outside the dropdown
    expect(option.first).to_be_visible()
    option.first.click()
    expect(page.locator(f"#{dropdown_id}")).to_contain_text(text)


def _row(page, key: str):
    return page.locator(f'#whatif-comparison tr[data-key="{key}"] td')


def _wait_outlined(page, trace_name: str, racks: int) -> None:
    """Wait until the floor's ``trace_name`` outline draws ``racks`` racks."""
    page.wait_for_function("""([name, points]) => {
        const gd = document.querySelector('#whatif-floor .js-plotly-plot');
        return (gd && gd.data || []).filter(t => t.name === name).reduce((n, t) => n + (t.x || []).length, 0) === points;
    }""", arg=[trace_name, racks * 6])


def _floor_traces(page) -> list[dict]:
    """Name, x and z of every trace of the what-if floor, as the browser holds them."""
    return json.loads(page.evaluate("""() => {
        const gd = document.querySelector('#whatif-floor .js-plotly-plot');
        return JSON.stringify(gd.data.map(t => ({name: t.name, x: t.x, z: t.z || null, text: t.text || null})));
    }"""))


def _outlined(page, trace_name: str) -> int:
    """How many racks a what-if outline trace draws (closed rectangles of 5 points and a gap)."""
    return sum(len(t["x"] or []) // 6 for t in _floor_traces(page) if t["name"] == trace_name)


def _applied(page, control: str) -> None:
    expect(page.locator(f"#{control}-msg")).to_contain_text("applied", timeout=EDIT_BUDGET_S * 1000)


def test_trip_a_transformer_and_its_blast_radius(colossus_app, new_page, screenshot):  # noqa: F811
    served, hub = colossus_app
    page, log, name = _open_with_scenario(served, hub, new_page)
    _choose(page, "whatif-fail-element", "H1-TX1-A")
    page.click("#whatif-apply-fail")
    _applied(page, "whatif-apply-fail")
    expect(page.locator("#whatif-edit-list li")).to_have_text(["fail transformer H1-TX1-A"])
    # A and B share each rack: the B transformer now carries both halves, nothing goes dark
    cells = _row(page, "element_max_load_frac")
    expect(cells.nth(2)).to_have_text("47.1")
    expect(cells.nth(3)).to_have_text("94.6")
    expect(cells.nth(4)).to_have_class(re.compile("whatif-worse"))
    expect(page.locator("#whatif-entities-power tbody tr").first).to_contain_text("H1-TX1-B")
    expect(_row(page, "dark_racks_count").nth(4)).to_have_text("±0")
    # the power-section rows are sorted by the size of the change: the element load first
    expect(page.locator("#whatif-table-power tbody tr").first).to_have_attribute("data-key", "element_max_load_frac")
    assert _store(served).edits(name) == [{"op": "fail", "kind": "transformer", "elements": ["H1-TX1-A"]}]

    # what the other transformer takes out now: its 5 rows (80 racks) go dark
    _choose(page, "whatif-blast-element", "H1-TX1-B")
    page.click("#whatif-blast-run")
    expect(page.locator("#whatif-blast-dark")).to_contain_text("80:")
    expect(page.locator("#whatif-blast-gpus")).to_have_text("5,120")
    page.click("#whatif-blast-show")
    _wait_outlined(page, "blast radius", 80)
    assert _outlined(page, "blast radius") == 80
    screenshot(page, "whatif-transformer-1366x768")
    assert log.errors == []


def test_move_a_rack_and_refuse_an_overlapping_move(colossus_app, new_page, screenshot):  # noqa: F811
    served, hub = colossus_app
    page, log, name = _open_with_scenario(served, hub, new_page, "1920x1080")
    _select(page, "H1-R01-K01", 1)
    page.fill("#whatif-move-x", "1.6")
    page.fill("#whatif-move-y", "1")
    page.click("#whatif-apply-move")
    message = page.locator("#whatif-apply-move-msg")
    expect(message).to_contain_text("overlaps rack 'H1-R01-K02'")
    expect(message).to_contain_text("refused: x_m")
    assert _store(served).edits(name) == []  # refused: the stored scenario is as it was
    expect(page.locator("#whatif-edit-list li")).to_have_text(["no edits yet: the scenario is the baseline"])

    page.fill("#whatif-move-x", "500")
    page.click("#whatif-apply-move")
    expect(message).to_contain_text("outside hall H1")
    assert _store(served).edits(name) == []

    page.fill("#whatif-move-x", "11.8")
    page.fill("#whatif-move-y", "2.6")  # the aisle between rows R01 and R02
    page.click("#whatif-apply-move")
    _applied(page, "whatif-apply-move")
    assert _store(served).edits(name) == [{"op": "move_rack", "racks": ["H1-R01-K01"], "x_m": 11.8, "y_m": 2.6}]
    page.wait_for_function("""() => {
        const gd = document.querySelector('#whatif-floor .js-plotly-plot');
        return (gd && gd.data || []).filter(t => t.name === 'edited racks').reduce((n, t) => n + (t.x || []).length, 0) === 6;
    }""")
    edited = [t for t in _floor_traces(page) if t["name"] == "edited racks" and t["x"]]
    assert len(edited) == 1 and 11.0 < min(v for v in edited[0]["x"] if v is not None) < 11.8
    # a move changes where the rack stands, not what it draws or how it is cooled and fed
    expect(_row(page, "it_power_mw").nth(4)).to_have_text("±0")
    expect(_row(page, "hottest_gpu_temp_c").nth(4)).to_have_text("±0")
    screenshot(page, "whatif-move-1920x1080")
    assert log.errors == []


def test_convert_a_row_to_gb200_nvl72(colossus_app, new_page, screenshot):  # noqa: F811
    served, hub = colossus_app
    page, log, name = _open_with_scenario(served, hub, new_page)
    _choose(page, "whatif-hall", "H4")
    _choose(page, "whatif-row", "H4-R01")
    page.click("#whatif-select")
    expect(page.locator("#whatif-selection-text")).to_contain_text("16 racks selected: H4-R01-*")
    _choose(page, "whatif-type", "GB200-NVL72")
    page.click("#whatif-apply-type")
    _applied(page, "whatif-apply-type")
    assert _store(served).edits(name) == [{"op": "set_rack_type", "racks": ["H4-R01-*"], "type": "GB200-NVL72"}]
    cells = _row(page, "gpus_installed_count")
    expect(cells.nth(2)).to_have_text("100,352")
    expect(cells.nth(3)).to_have_text("100,480")  # 16 racks of 64 → 72 GPUs
    expect(cells.nth(4)).to_have_text("+128")
    expect(page.locator("#whatif-findings")).to_contain_text("fabric ports")  # 72 NICs on a 64-port leaf
    expect(page.locator(".whatif-findings li").first).to_contain_text("H4-")
    _wait_outlined(page, "edited racks", 16)
    screenshot(page, "whatif-gb200-1366x768")

    # under "refuse the edit", converting a second row is refused: its leaf has too few ports
    page.locator("#whatif-design-limits input[value=strict]").check()
    _select(page, "H4-R02-*", 16)
    page.click("#whatif-apply-type")
    expect(page.locator("#whatif-apply-type-msg")).to_contain_text("refused:")
    expect(page.locator("#whatif-apply-type-msg")).to_contain_text("a leaf needs 72 NIC ports")
    assert len(_store(served).edits(name)) == 1

    page.click("#whatif-undo")
    expect(page.locator("#whatif-edit-list li")).to_have_text(["no edits yet: the scenario is the baseline"])
    expect(_row(page, "gpus_installed_count").nth(4)).to_have_text("±0")
    page.click("#whatif-redo")
    expect(page.locator("#whatif-edit-list li")).to_have_text(["H4-R01-* → GB200-NVL72"])
    assert log.errors == []


def test_reassign_a_feed(colossus_app, new_page, screenshot):  # noqa: F811
    served, hub = colossus_app
    page, log, name = _open_with_scenario(served, hub, new_page, "1920x1080")
    page.click("#whatif-apply-feeds")
    expect(page.locator("#whatif-apply-feeds-msg")).to_contain_text("select racks on the floor first")
    _select(page, "H1-R01-K0[1-4]", 4)
    _choose(page, "whatif-feed-a", "H1-BW-R02-A")
    _choose(page, "whatif-feed-b", "H1-BW-R02-B")
    page.click("#whatif-apply-feeds")
    _applied(page, "whatif-apply-feeds")
    first = page.locator("#whatif-entities-power tbody tr")
    expect(first.first).to_contain_text(re.compile(r"H1-BW-R0[12]-[AB]"))
    table = page.locator("#whatif-entities-power").inner_text()
    assert "H1-BW-R01-A" in table and "H1-BW-R02-A" in table
    _wait_outlined(page, "edited racks", 4)
    screenshot(page, "whatif-feeds-1920x1080")
    assert _store(served).edits(name) == [{"op": "set_rack_feeds", "racks": ["H1-R01-K01", "H1-R01-K02", "H1-R01-K03",
                                                                           "H1-R01-K04"],
                                           "feed_a": "H1-BW-R02-A", "feed_b": "H1-BW-R02-B"}]
    assert log.errors == []


def test_scenario_rename_duplicate_delete(colossus_app, new_page):  # noqa: F811
    served, hub = colossus_app
    page, log, name = _open_with_scenario(served, hub, new_page)
    _choose(page, "whatif-fail-kind", "generator")
    _choose(page, "whatif-fail-element", "GEN-A-01")
    page.click("#whatif-apply-fail")
    _applied(page, "whatif-apply-fail")
    expect(_row(page, "generation_capacity_mw").nth(4)).to_have_text("−2.5")
    page.fill("#whatif-name", name + "-b")
    page.click("#whatif-rename")
    expect(page.locator("#whatif-scenario-msg")).to_have_text(f"renamed to {name}-b")
    page.fill("#whatif-name", name + "-c")
    page.click("#whatif-duplicate")
    expect(page.locator("#whatif-scenario-msg")).to_have_text(f"duplicated as {name}-c")
    store = _store(served)
    assert store.edits(name + "-c") == store.edits(name + "-b") == [
        {"op": "fail", "kind": "generator", "elements": ["GEN-A-01"]}]
    assert name not in store.names()
    page.fill("#whatif-name", name + "-c")
    page.click("#whatif-new")  # the name is taken: refused beside the scenario bar
    expect(page.locator("#whatif-scenario-msg")).to_contain_text("exists already")
    page.click("#whatif-delete")
    expect(page.locator("#whatif-scenario-msg")).to_have_text(f"deleted {name}-c")
    assert name + "-c" not in store.names()
    assert log.errors == []
