"""Real-browser checks of ``/whatif`` on colossus: real edits, the comparison, the highlighted floor.

The app's hub has a database (SQLite, migrated), so scenarios go through the database
store.  Each test creates its own scenario through the page, makes edits with the page's
controls and reads the answer the browser shows (comparison tables, the floor's outline
traces).  Refused edits are checked beside their control and in the database.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from datetime import UTC

import pytest
from playwright.sync_api import expect

from tests.dashboard.colossus_app import LIVE_TICK_MS, freshen
from tests.dashboard.dropdowns import choose

pytestmark = pytest.mark.browser
EDIT_BUDGET_S = 30  # generous waits on a loaded 2-core machine; the benchmark measures the real time


@pytest.fixture(scope="module")
def colossus_2025_app(dash_app, tmp_path_factory):
    """``(served app, hub)``: the colossus-2025 stand-in hub with a migrated SQLite database for the scenarios.

    colossus-2025 has the same halls on the May 2025 supply (150 MW grid and Megapacks), so every
    GPU can run at full power and what-if answers are the layout's, not the shortfall policy's (on
    the summer-2024 supply of ``colossus`` the policy already caps every GPU).
    """
    from dataclasses import replace
    from datetime import datetime

    from ingest.store.db import open_database
    from tests.dashboard import page_snapshots
    from tests.dashboard.conftest import ServedApp
    from tests.dashboard.standin_hub import StandinView, standin_app

    dash_app.server.test_client().get("/")
    state, snap, detail = page_snapshots.engine_snapshot("colossus-2025")
    hub = StandinView(state, replace(snap, ts=datetime.now(UTC), source_age_s={"twin": 0.5}), detail=detail)
    hub.db = open_database(f"sqlite:///{tmp_path_factory.mktemp('whatif') / 'scenarios.db'}")
    app = standin_app(hub, site_db=hub.db, tick_ms=LIVE_TICK_MS)
    app.server.test_client().get("/")
    served = ServedApp(app)
    stop = threading.Event()

    def keep_fresh() -> None:  # a live hub ticks; a stand-in left alone turns stale after 10 s and greys the page
        while not stop.wait(2.0):
            freshen(hub)

    ticker = threading.Thread(target=keep_fresh, daemon=True)
    ticker.start()
    yield served, hub
    stop.set()
    ticker.join(timeout=5)
    served.stop()
    hub.db.dispose()


def _stored_edits(hub, name: str) -> list[dict]:
    """The applied edits of scenario ``name`` as the database holds them."""
    from ingest.store.scenarios import find_scenario

    stored = find_scenario(hub.db, hub.site_name, name)
    assert stored is not None, f"scenario {name} is not in the database"
    return [e.as_dict() for e in stored.applied]


def _stored_names(hub) -> set[str]:
    from ingest.store.scenarios import list_scenarios

    return {s.name for s in list_scenarios(hub.db, hub.site_name)}


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
    # the module's first answer also projects the baseline: an edit's budget, not a click's
    expect(page.locator("#whatif-comparison h2")).to_contain_text(f"Scenario {name}", timeout=EDIT_BUDGET_S * 1000)
    return page, log, name


def _select(page, pattern: str, count: int) -> None:
    page.fill("#whatif-pattern", pattern)
    page.click("#whatif-select")
    expect(page.locator("#whatif-selection-text")).to_contain_text(f"{count} rack")


def _row(page, key: str):
    return page.locator(f'#whatif-comparison tr[data-key="{key}"] td')


def _wait_outlined(page, trace_name: str, racks: int) -> None:
    """Wait until the floor's ``trace_name`` outline draws ``racks`` racks."""
    page.wait_for_function(
        """([name, racks]) => {
        const gd = document.querySelector('#whatif-floor .js-plotly-plot');
        return (gd && gd.data || []).filter(t => t.name === name)
            .reduce((n, t) => n + Math.floor((t.x || []).length / 6), 0) === racks;
    }""",
        arg=[trace_name, racks],
    )


def _floor_traces(page) -> list[dict]:
    """Name, x and z of every trace of the what-if floor, as the browser holds them."""
    return json.loads(
        page.evaluate("""() => {
        const gd = document.querySelector('#whatif-floor .js-plotly-plot');
        return JSON.stringify(gd.data.map(t => ({name: t.name, x: t.x, z: t.z || null, text: t.text || null})));
    }""")
    )


def _outlined(page, trace_name: str) -> int:
    """How many racks a what-if outline trace draws (closed rectangles of 5 points and a gap)."""
    return sum(len(t["x"] or []) // 6 for t in _floor_traces(page) if t["name"] == trace_name)


def _applied(page, control: str) -> None:
    expect(page.locator(f"#{control}-msg")).to_contain_text("applied", timeout=EDIT_BUDGET_S * 1000)


def test_trip_a_transformer_and_its_blast_radius(colossus_2025_app, new_page, screenshot):
    served, hub = colossus_2025_app
    page, log, name = _open_with_scenario(served, hub, new_page)
    choose(page, "whatif-fail-element", "H1-TX1-A")
    page.click("#whatif-apply-fail")
    _applied(page, "whatif-apply-fail")
    expect(page.locator("#whatif-edit-list li")).to_have_text(["fail H1-TX1-A"])
    # A and B share each rack: the B transformer now carries both halves, nothing goes dark
    first = page.locator("#whatif-entities-power tbody tr").first.locator("td")
    expect(first).to_have_text(["H1-TX1-B", "47.7", "96.0", "+48.3"])  # about double, plus its own losses
    expect(first.nth(3)).to_have_class(re.compile("whatif-worse"))
    expect(_row(page, "n_dark_racks").nth(4)).to_have_text("±0")
    expect(_row(page, "n_overloaded_elements").nth(4)).to_have_text("±0")
    # the power rows are sorted by the size of the change: the first one changed
    expect(page.locator("#whatif-table-power tbody tr").first.locator("td").nth(4)).not_to_have_text("±0")
    assert _stored_edits(hub, name) == [{"op": "fail", "elements": ["H1-TX1-A"]}]

    # what the other transformer takes out now: the racks of its UPS (5 rows, 80 racks) go dark
    choose(page, "whatif-blast-element", "H1-TX1-B")
    page.click("#whatif-blast-run")
    expect(page.locator("#whatif-blast-dark")).to_contain_text("80:")
    expect(page.locator("#whatif-blast-gpus")).to_have_text("5,120")
    page.click("#whatif-blast-show")
    _wait_outlined(page, "blast radius", 80)
    assert _outlined(page, "blast radius") == 80
    screenshot(page, "whatif-transformer-1366x768")
    assert log.errors == []


def test_move_a_rack_and_refuse_an_overlapping_move(colossus_2025_app, new_page, screenshot):
    served, hub = colossus_2025_app
    page, log, name = _open_with_scenario(served, hub, new_page, "1920x1080")
    _select(page, "H1-R01-K01", 1)
    page.fill("#whatif-move-x", "1.6")
    page.fill("#whatif-move-y", "1")
    page.click("#whatif-apply-move")
    message = page.locator("#whatif-apply-move-msg")
    expect(message).to_contain_text("overlaps rack 'H1-R01-K02'")
    expect(message).to_contain_text("refused: x_m:")
    assert _stored_edits(hub, name) == []  # refused: the stored scenario is as it was
    expect(page.locator("#whatif-edit-list li")).to_have_text(["no edits yet: the scenario is the baseline"])

    page.fill("#whatif-move-x", "500")
    page.click("#whatif-apply-move")
    expect(message).to_contain_text("outside hall H1")
    assert _stored_edits(hub, name) == []

    page.fill("#whatif-move-x", "11.8")
    page.fill("#whatif-move-y", "2.6")  # the aisle between rows R01 and R02
    page.click("#whatif-apply-move")
    _applied(page, "whatif-apply-move")
    assert _stored_edits(hub, name) == [{"op": "move_rack", "racks": ["H1-R01-K01"], "x_m": 11.8, "y_m": 2.6}]
    page.wait_for_function("""() => {
        const gd = document.querySelector('#whatif-floor .js-plotly-plot');
        return (gd && gd.data || []).filter(t => t.name === 'edited racks').reduce((n, t) => n + (t.x || []).length, 0) === 6;
    }""")
    edited = [t for t in _floor_traces(page) if t["name"] == "edited racks" and t["x"]]
    assert len(edited) == 1 and 11.0 < min(v for v in edited[0]["x"] if v is not None) < 11.8
    # a move changes where the rack stands, not what it draws or how it is cooled and fed
    expect(_row(page, "it_power_mw").nth(4)).to_have_text("±0")
    expect(_row(page, "hottest_gpu_temp_c").nth(4)).to_have_text("±0")
    expect(_row(page, "n_n1_violations").nth(4)).to_have_text("±0")
    screenshot(page, "whatif-move-1920x1080")
    assert log.errors == []


def test_convert_a_row_to_gb200_nvl72(colossus_2025_app, new_page, screenshot):
    served, hub = colossus_2025_app
    page, log, name = _open_with_scenario(served, hub, new_page)
    choose(page, "whatif-hall", "H4")
    choose(page, "whatif-row", "H4-R01")
    page.click("#whatif-select")
    expect(page.locator("#whatif-selection-text")).to_contain_text("16 racks selected: H4-R01-*")
    choose(page, "whatif-type", "GB200-NVL72")
    page.click("#whatif-apply-type")
    _applied(page, "whatif-apply-type")
    assert _stored_edits(hub, name) == [{"op": "set_rack_type", "racks": ["H4-R01-*"], "type": "GB200-NVL72"}]
    cells = _row(page, "gpus.n_gpus")
    expect(cells.nth(2)).to_have_text("100,352")
    expect(cells.nth(3)).to_have_text("100,480")  # 16 racks of 64 → 72 GPUs
    expect(cells.nth(4)).to_have_text("+128")
    expect(page.locator("#whatif-findings")).to_contain_text("fabric ports")  # 72 NICs on a 64-port leaf
    expect(_row(page, "fabric.leaf_ports_over_count").nth(4)).to_have_text("+128")
    expect(_row(page, "n_n1_violations").nth(4)).to_have_text("+6")  # the row's busways and UPS lose N-1
    expect(page.locator("#whatif-entities-power tbody tr").first).to_contain_text("H4-BW-R01-")
    expect(page.locator(".whatif-findings li").first).to_contain_text("H4-")
    _wait_outlined(page, "edited racks", 16)
    screenshot(page, "whatif-gb200-1366x768")

    # under "refuse the edit", converting a second row is refused: its leaf has too few ports
    page.locator("#whatif-design-limits input[value=strict]").check()
    _select(page, "H4-R02-*", 16)
    page.click("#whatif-apply-type")
    expect(page.locator("#whatif-apply-type-msg")).to_contain_text("refused:")
    expect(page.locator("#whatif-apply-type-msg")).to_contain_text("strict")
    assert len(_stored_edits(hub, name)) == 1

    page.click("#whatif-undo")
    expect(page.locator("#whatif-edit-list li")).to_have_text(["no edits yet: the scenario is the baseline"])
    expect(_row(page, "gpus.n_gpus").nth(4)).to_have_text("±0")
    page.click("#whatif-redo")
    expect(page.locator("#whatif-edit-list li")).to_have_text(["H4-R01-* → GB200-NVL72"])
    assert log.errors == []


def test_reassign_a_feed(colossus_2025_app, new_page, screenshot):
    served, hub = colossus_2025_app
    page, log, name = _open_with_scenario(served, hub, new_page, "1920x1080")
    page.click("#whatif-apply-feeds")
    expect(page.locator("#whatif-apply-feeds-msg")).to_contain_text("select racks on the floor first")
    _select(page, "H1-R01-K0[1-4]", 4)
    choose(page, "whatif-feed-a", "H1-BW-R02-A")
    choose(page, "whatif-feed-b", "H1-BW-R02-B")
    page.click("#whatif-apply-feeds")
    _applied(page, "whatif-apply-feeds")
    rows = page.locator("#whatif-entities-power tbody tr")
    expect(rows.first).to_contain_text(re.compile(r"H1-BW-R0[12]-[AB]"))
    table = page.locator("#whatif-entities-power").inner_text()
    assert "H1-BW-R01-A" in table and "H1-BW-R02-A" in table  # the old busway sheds, the new one takes the load
    expect(_row(page, "n_n1_violations").nth(4)).to_have_text("+2")  # R02's busways now fail N-1
    _wait_outlined(page, "edited racks", 4)
    screenshot(page, "whatif-feeds-1920x1080")
    assert _stored_edits(hub, name) == [
        {
            "op": "set_rack_feeds",
            "racks": ["H1-R01-K01", "H1-R01-K02", "H1-R01-K03", "H1-R01-K04"],
            "feed_a": "H1-BW-R02-A",
            "feed_b": "H1-BW-R02-B",
        }
    ]
    assert log.errors == []


# the colour (oriented change of the hottest GPU) of one rack on the what-if floor, and how many racks changed
FLOOR_CHANGE_JS = """(rack) => {
    const gd = document.querySelector('#whatif-floor .js-plotly-plot');
    let value = null, changed = 0;
    for (const t of (gd && gd.data) || []) {
        if (t.type !== 'heatmap' || !t.z || !t.text) { continue; }
        t.text.forEach((row, i) => row.forEach((name, j) => {
            const z = t.z[i][j];
            if (name === rack) { value = z; }
            if (z !== null && Math.abs(z) >= 0.5) { changed += 1; }
        }));
    }
    return {value: value, changed: changed};
}"""


def test_change_a_cdu_setpoint_and_its_rack_warms(colossus_2025_app, new_page, screenshot):
    """A CDU's secondary supply setpoint from the editor: stored as supply_setpoint_c, its rack alone gets hotter."""
    served, hub = colossus_2025_app
    page, log, name = _open_with_scenario(served, hub, new_page, "1920x1080")
    page.locator("#whatif-setpoint-target input[value=cdus]").check()
    expect(page.locator("#whatif-setpoint-element")).to_contain_text("type to search")  # the CDUs' search
    choose(page, "whatif-setpoint-element", "H1-R01-K01-CDU")  # found among 1,568 CDUs by the server's search
    page.fill("#whatif-setpoint-c", "40")
    page.click("#whatif-apply-setpoint")
    _applied(page, "whatif-apply-setpoint")
    described = "secondary supply setpoint of H1-R01-K01-CDU at 40 °C"
    expect(page.locator("#whatif-apply-setpoint-msg")).to_have_text(f"applied: {described}")
    expect(page.locator("#whatif-edit-list li")).to_have_text([described])
    assert _stored_edits(hub, name) == [{"op": "set_setpoint", "cdus": ["H1-R01-K01-CDU"], "supply_setpoint_c": 40.0}]
    # the answer: the rack behind that CDU is the hottest now, and throttles sooner when its CDU is lost
    hottest = _row(page, "hottest_gpu_temp_c")
    expect(hottest.nth(4)).to_have_text(re.compile(r"^\+\d+\.\d$"))
    expect(hottest.nth(4)).to_have_class(re.compile("whatif-worse"))
    expect(_row(page, "ttt.cdu_loss_throttle_s").nth(4)).to_have_class(re.compile("whatif-worse"))
    expect(_row(page, "it_power_mw").nth(4)).to_have_text("±0")  # warmer coolant, the same work
    page.wait_for_function(
        f"() => {{ const c = ({FLOOR_CHANGE_JS})('H1-R01-K01'); return c.value !== null && c.value > 5; }}"
    )
    change = page.evaluate(FLOOR_CHANGE_JS, "H1-R01-K01")
    assert change["changed"] == 1, change  # red on the floor: that rack, and no other
    rise = float(hottest.nth(4).inner_text().lstrip("+"))
    assert change["value"] == pytest.approx(rise, abs=0.15)  # the floor's colour is the table's change
    screenshot(page, "whatif-cdu-setpoint-1920x1080")

    # another target clears the CDU: a loop's supply is supply_temp_c, and takes a loop's name
    page.locator("#whatif-setpoint-target input[value=loops]").check()
    expect(page.locator("#whatif-setpoint-element")).not_to_contain_text("H1-R01-K01-CDU")
    assert log.errors == []


def test_scenario_rename_duplicate_delete(colossus_2025_app, new_page):
    served, hub = colossus_2025_app
    page, log, name = _open_with_scenario(served, hub, new_page)
    choose(page, "whatif-fail-element", "H1-TX1-A")
    page.click("#whatif-apply-fail")
    _applied(page, "whatif-apply-fail")
    expect(page.locator("#whatif-edit-list li")).to_have_text(["fail H1-TX1-A"])
    page.fill("#whatif-name", name + "-b")
    page.click("#whatif-rename")
    expect(page.locator("#whatif-scenario-msg")).to_have_text(f"renamed to {name}-b")
    page.fill("#whatif-name", name + "-c")
    page.click("#whatif-duplicate")
    expect(page.locator("#whatif-scenario-msg")).to_have_text(f"duplicated as {name}-c")
    assert (
        _stored_edits(hub, name + "-c") == _stored_edits(hub, name + "-b") == [{"op": "fail", "elements": ["H1-TX1-A"]}]
    )
    assert name not in _stored_names(hub)
    page.fill("#whatif-name", name + "-c")
    page.click("#whatif-new")  # the name is taken: refused beside the scenario bar
    expect(page.locator("#whatif-scenario-msg")).to_contain_text("has a scenario of that name")
    page.click("#whatif-delete")
    expect(page.locator("#whatif-scenario-msg")).to_have_text(f"deleted {name}-c")
    assert name + "-c" not in _stored_names(hub)
    assert log.errors == []


def test_export_and_import_toml(colossus_2025_app, new_page, tmp_path):
    served, hub = colossus_2025_app
    page, log, name = _open_with_scenario(served, hub, new_page)
    _select(page, "H4-R02-*", 16)
    choose(page, "whatif-type", "GB200-NVL72")
    page.click("#whatif-apply-type")
    _applied(page, "whatif-apply-type")
    with page.expect_download() as download:
        page.click("#whatif-export")
    path = tmp_path / "exported.toml"
    download.value.save_as(path)
    text = path.read_text()
    assert download.value.suggested_filename == f"{name}.toml"
    assert "[[edits]]" in text and 'racks = ["H4-R02-*"]' in text and 'type = "GB200-NVL72"' in text

    imported = tmp_path / "imported.toml"
    imported.write_text(text.replace(f'name = "{name}"', f'name = "{name}-in"'))
    page.set_input_files("#whatif-import input[type=file]", str(imported))
    # the import projects every edit on the site before storing it: an edit's budget, not a click's
    expect(page.locator("#whatif-scenario-msg")).to_have_text(
        f"imported {name}-in (1 edits)", timeout=EDIT_BUDGET_S * 1000
    )
    assert _stored_edits(hub, name + "-in") == _stored_edits(hub, name)
    expect(page.locator("#whatif-edit-list li")).to_have_text(["H4-R02-* → GB200-NVL72"])

    bad = tmp_path / "bad.toml"
    bad.write_text('[scenario]\nname = "bad"\n[[edits]]\nop = "fail"\nelements = ["NO-SUCH-TX"]\n')
    page.set_input_files("#whatif-import input[type=file]", str(bad))
    expect(page.locator("#whatif-scenario-msg")).to_contain_text("NO-SUCH-TX", timeout=EDIT_BUDGET_S * 1000)
    assert "bad" not in _stored_names(hub)  # refused before anything is stored
    assert log.errors == []


def test_power_page_links_to_the_blast_radius_of_its_element(colossus_2025_app, new_page):
    served, hub = colossus_2025_app
    freshen(hub)
    page, log = new_page("1366x768")
    page.goto(served.url("/power?element=H1-TX1-A"))
    link = page.locator("#power-whatif")
    expect(link).to_have_attribute("href", "/whatif?trip=transformer%3AH1-TX1-A")
    link.click()
    expect(page).to_have_url(served.url("/whatif?trip=transformer%3AH1-TX1-A"))
    # the blast radius runs on opening: the A transformer alone takes nothing dark (the B side carries its racks)
    expect(page.locator("#whatif-blast-result")).to_contain_text("transformer H1-TX1-A")
    expect(page.locator("#whatif-blast-dark")).to_contain_text("0:")
    expect(page.locator("#whatif-blast-result")).to_contain_text("racks it feeds or cools")
    assert log.errors == []


def test_select_racks_with_a_box_and_by_click(colossus_2025_app, new_page):
    served, hub = colossus_2025_app
    page, log, _name = _open_with_scenario(served, hub, new_page, "1920x1080")
    area = page.locator("#whatif-floor .draglayer .xy .nsewdrag").first  # hall H1's plot area
    expect(area).to_be_visible()
    box = area.bounding_box()
    x0, y0 = box["x"] + box["width"] * 0.05, box["y"] + box["height"] * 0.05
    x1, y1 = box["x"] + box["width"] * 0.45, box["y"] + box["height"] * 0.25
    page.mouse.move(x0, y0)
    page.mouse.down()
    page.mouse.move((x0 + x1) / 2, (y0 + y1) / 2, steps=5)
    page.mouse.move(x1, y1, steps=5)
    page.mouse.up()
    text = page.locator("#whatif-selection-text")
    expect(text).to_contain_text(re.compile(r"\d+ racks selected: H1-R0"))
    count = int(text.inner_text().split()[0])
    assert 2 <= count <= 200
    _wait_outlined(page, "selected racks", count)
    page.click("#whatif-clear")
    expect(text).to_contain_text("no racks selected")
    assert log.errors == []
