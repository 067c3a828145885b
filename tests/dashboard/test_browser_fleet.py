"""Real-browser checks of the fleet on ``/jobs`` and of ``/nodes``: a live fleet model on colossus behind the pages.

The served view carries a real :class:`ingest.live.fleet.LiveFleet` (the generator's LLM-lab
mix after a two-hour warm-up); the tests read its frame to know what the pages must show.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import numpy as np
import pytest
from playwright.sync_api import expect

from dashboard.analysis.fleet_topology import domain_occupancy, nodes_out_ids
from ingest.live.fleet import LiveFleet, LiveMix
from tests.dashboard.colossus_app import colossus_app, freshen  # noqa: F401

pytestmark = pytest.mark.browser
ROWS = "#jobs-fleet-table .dash-spreadsheet tbody tr:has(td)"


@pytest.fixture(scope="module")
def fleet_app(colossus_app):  # noqa: F811
    served, hub = colossus_app
    fleet = LiveFleet(hub.state, datetime.now(UTC), mix=LiveMix(warmup_s=2 * 3600.0))
    hub.fleet = lambda: fleet
    yield served, hub, fleet
    del hub.fleet


def _cells(page, column: str) -> list[str]:
    return page.locator(f"{ROWS} td[data-dash-column={column}]").all_inner_texts()


@pytest.mark.parametrize("viewport", ["1366x768", "1920x1080"])
def test_fleet_section_renders(fleet_app, new_page, screenshot, viewport):
    served, hub, fleet = fleet_app
    freshen(hub)
    frame = fleet.frame()
    page, log = new_page(viewport)
    page.goto(served.url("/jobs"))
    expect(page.locator(ROWS)).to_have_count(20)
    expect(page.locator("#jobs-fleet-count")).to_have_text(f"{frame.n_jobs:,} jobs")
    expect(page.locator('[data-kpi="fleet-running"] .kpi-value')).to_have_text(f"{frame.count('running'):,}")
    expect(page.locator("#jobs-fleet-teams-table tbody tr")).to_have_count(len(frame.teams))
    expect(page.locator("#jobs-fleet-gantt .bars .point").first).to_be_attached()
    expect(page.locator("#jobs-fleet-frag .bars .point")).not_to_have_count(0)
    expect(page.locator("#jobs-fleet-whatif")).to_contain_text("what-if")
    # sorted by GPUs, largest first: the pretraining run leads
    biggest = int(frame.jobs["n_gpus"].max())
    expect(page.locator(f"{ROWS} td[data-dash-column=n_gpus]").first).to_have_text(str(biggest))
    screenshot(page, f"fleet-jobs-{viewport}")
    page.locator("#jobs-fleet-teams").scroll_into_view_if_needed()
    screenshot(page, f"fleet-teams-{viewport}")
    assert log.errors == []
    assert log.external == []


def test_paging_search_and_pending_reasons(fleet_app, new_page):
    served, hub, fleet = fleet_app
    freshen(hub)
    frame = fleet.frame()
    page, log = new_page("1366x768")
    page.goto(served.url("/jobs"))
    expect(page.locator(ROWS)).to_have_count(20)
    first_page = _cells(page, "job_id")
    page.locator("#jobs-fleet-table button.next-page").click()

    expect(page.locator(f"{ROWS} td[data-dash-column=job_id]").first).not_to_have_text(first_page[0])
    assert not set(_cells(page, "job_id")) & set(first_page)
    # search: every word must match
    team = frame.teams[2]["team"]
    page.fill("#jobs-fleet-search", team)
    page.press("#jobs-fleet-search", "Enter")
    n_team = int((frame.jobs["team"] == team).sum())
    expect(page.locator("#jobs-fleet-count")).to_have_text(f"{n_team:,} jobs")  # nothing advances the fleet here
    expect(page.locator(f"{ROWS} td[data-dash-column=team]").first).to_have_text(team)
    assert set(_cells(page, "team")) == {team}
    # pending only: each with its reason
    page.fill("#jobs-fleet-search", "")
    page.press("#jobs-fleet-search", "Enter")
    page.locator("#jobs-fleet-state label", has_text="pending").click()
    if frame.count("pending"):
        expect(page.locator(f"{ROWS} td[data-dash-column=state]").first).to_have_text("pending")
        assert set(_cells(page, "state")) == {"pending"}
        assert all(r.strip() for r in _cells(page, "reason"))
    # sort by GPUs ascending
    page.locator("#jobs-fleet-state label", has_text="all").click()
    header = page.locator("#jobs-fleet-table th[data-dash-column=n_gpus] .column-header--sort")
    first = page.locator(f"{ROWS} td[data-dash-column=job_id]").first
    shown = first.inner_text()
    header.click()  # desc → unsorted
    expect(first).not_to_have_text(shown)
    header.click()  # unsorted → asc
    expect(page.locator(f"{ROWS} td[data-dash-column=n_gpus]").first).to_have_text(str(int(frame.jobs["n_gpus"].min())))
    gpus = [int(x) for x in _cells(page, "n_gpus")]
    assert gpus == sorted(gpus)
    assert log.errors == []


def test_gantt_by_hall(fleet_app, new_page):
    served, hub, fleet = fleet_app
    freshen(hub)
    page, log = new_page("1920x1080")
    page.goto(served.url("/jobs"))
    page.locator("#jobs-fleet-lane label", has_text="by hall").click()
    halls = sorted({r["hall"] for r in fleet.gantt_rows(6 * 3600.0)})
    expect(page.locator("#jobs-fleet-gantt .gtitle")).to_contain_text("by hall")
    expect(page.locator("#jobs-fleet-gantt .ytick text").first).to_have_text(re.compile(r"^H\d"))
    ticks = page.locator("#jobs-fleet-gantt .ytick text").evaluate_all("els => els.map(e => e.textContent)")
    assert set(ticks) <= set(halls) and ticks
    assert log.errors == []


@pytest.mark.parametrize("viewport", ["1366x768", "1920x1080"])
def test_topology_view_shows_every_leaf_group_by_pod(fleet_app, new_page, screenshot, viewport):
    served, hub, fleet = fleet_app
    freshen(hub)
    frame = fleet.frame()
    topo = fleet.sim.run.topo
    out = nodes_out_ids(hub.state, frame.nodes)
    assert out.size == len(frame.nodes)  # the model's nodes are the site's
    occ = domain_occupancy(topo, frame.gpu_job, out, "leaf")
    assert int(occ.allocated_gpus_count.sum()) == int((frame.gpu_job >= 0).sum())
    page, log = new_page(viewport)
    page.goto(served.url("/jobs"))
    page.wait_for_function(
        "() => { const gd = document.querySelector('#jobs-fleet-topology .js-plotly-plot');"
        " return gd && gd.data && gd.data.length === 1; }"
    )
    shown = page.evaluate(
        "() => { const t = document.querySelector('#jobs-fleet-topology .js-plotly-plot')._fullData[0];"
        " return {y: Array.from(t.y), z: Array.from(t.z, r => Array.from(r, v => Number.isNaN(v) ? null : v)),"
        " hover: Array.from(t.customdata, r => Array.from(r))}; }"
    )
    assert shown["y"] == [f"pod {p}" for p in range(topo.n_pods)]
    cells = [(i, k) for i, row in enumerate(shown["z"]) for k, v in enumerate(row) if v is not None]
    assert len(cells) == topo.n_leaves  # every leaf group once, under its pod
    first_of_pod = [int(np.flatnonzero(occ.pod == p)[0]) for p in range(topo.n_pods)]
    for i, d in enumerate(first_of_pod):
        assert shown["z"][i][0] == pytest.approx(float(occ.allocated_frac[d]))
        assert shown["hover"][i][0].startswith(occ.name[d])
    panel = page.locator("#jobs-fleet-topology")
    panel.scroll_into_view_if_needed()
    box = panel.bounding_box()
    assert box is not None and box["height"] >= 200  # a row per pod, not a squashed strip
    screenshot(page, f"fleet-topology-{viewport}")
    assert log.errors == []


@pytest.mark.parametrize("viewport", ["1366x768", "1920x1080"])
def test_nodes_view(fleet_app, new_page, screenshot, viewport):
    served, hub, fleet = fleet_app
    freshen(hub)
    frame = fleet.frame()
    page, log = new_page(viewport)
    page.goto(served.url("/nodes"))
    expect(page.locator("#nodes-causes tbody tr")).to_have_count(15)  # Llama 3 Table 5's hardware causes
    page.locator("#nodes-window label", has_text="since start").click()
    total = int(frame.failures["time_s"].size)
    expect(page.locator('[data-kpi="failures"] .kpi-value')).to_have_text(re.compile(r"[\d,]+"))
    shown = int(page.locator('[data-kpi="failures"] .kpi-value').inner_text().replace(",", ""))
    assert shown >= total
    if frame.nodes:
        expect(page.locator("#nodes-out tbody tr").first).to_be_attached()
        states = set(page.locator("#nodes-out tbody tr td:nth-child(2)").all_inner_texts())
        assert states <= {"down", "in repair", "lemon", "drained"}
    expect(page.locator("#nodes-failures .bars .point").first).to_be_attached()
    screenshot(page, f"fleet-nodes-{viewport}")
    assert log.errors == []
    assert np.isfinite(frame.ts_s)


def _floor_traces(page) -> list[dict]:
    return page.evaluate(
        """() => {
        const gd = document.querySelector('#floor-halls .js-plotly-plot');
        return gd.data.map(t => ({name: t.name, n: (t.x || []).length, legend: t.showlegend === true}));
    }"""
    )


@pytest.mark.parametrize("viewport", ["1366x768", "1920x1080"])
def test_floor_by_team_with_a_jobs_racks_and_the_nodes_out(fleet_app, new_page, screenshot, viewport):
    """/floor?metric=team&job=<the largest running job>: racks in their team's colour (the colour bar
    names every team and "free"), the job's racks outlined, racks with drained or down nodes marked."""
    from dashboard.analysis.fleet_floor import fleet_floor

    served, hub, fleet = fleet_app
    freshen(hub)
    frame = fleet.frame()
    running = np.flatnonzero(frame.jobs["state"] == "running")
    biggest = running[np.argmax(frame.jobs["n_gpus"][running])]
    job, n_gpus = str(frame.jobs["job_id"][biggest]), int(frame.jobs["n_gpus"][biggest])
    layer = fleet_floor(hub.state, frame, job)
    assert layer.job_gpus_count == n_gpus > 1000  # a pretraining run
    page, log = new_page(viewport)
    page.goto(served.url(f"/floor?metric=team&job={job}"))
    expect(page.locator("#floor-metric input[value=team]")).to_be_checked()
    expect(page.locator("#floor-job-note")).to_have_text(
        f"job {job}: {n_gpus:,} GPUs on {int(layer.job_racks.sum()):,} racks, outlined in white"
    )
    page.wait_for_function(
        "() => { const gd = document.querySelector('#floor-halls .js-plotly-plot');"
        " return gd && gd.layout.coloraxis.colorbar.ticktext; }"
    )
    ticktext = page.evaluate(
        "() => document.querySelector('#floor-halls .js-plotly-plot').layout.coloraxis.colorbar.ticktext"
    )
    assert ticktext == layer.teams and ticktext[-1] == "free"
    traces = _floor_traces(page)
    outlined = sum(t["n"] // 6 for t in traces if t["name"] == f"job {job}" and not t["legend"])
    assert outlined == int(layer.job_racks.sum())
    legend = [t["name"] for t in traces if t["legend"]]
    assert f"job {job}" in legend and "rack with nodes drained or down" in legend
    marked = sum(t["n"] // 6 for t in traces if t["name"] == "nodes drained or down" and not t["legend"])
    assert marked == int((layer.nodes_out > 0).sum())
    racks_out = np.flatnonzero(layer.nodes_out > 0)
    if racks_out.size:  # the hover of a marked rack names its nodes out with state, age and reason
        line = layer.nodes_out_details[int(racks_out[0])][0]
        assert page.evaluate(
            """line => document.querySelector('#floor-halls .js-plotly-plot').data
                .filter(t => t.type === 'heatmap').flatMap(t => t.text.flat()).some(s => s.includes(line))""",
            line,
        )
    screenshot(page, f"floor-teams-{viewport}")
    # switching to a physical metric keeps the job outline and the URL keeps the job
    page.locator("#floor-metric input[value=rack_power_kw]").check()
    expect(page).to_have_url(re.compile(rf"metric=rack_power_kw.*job={re.escape(job)}"))
    assert sum(t["n"] // 6 for t in _floor_traces(page) if t["name"] == f"job {job}" and not t["legend"]) > 0
    assert log.errors == []


@pytest.mark.parametrize("viewport", ["1366x768", "1920x1080"])
def test_floor_by_job(fleet_app, new_page, screenshot, viewport):
    """The floor's "Job" colouring: each rack in the colour of the job holding most of its GPUs (the
    colour bar names the jobs holding the most racks, then "other jobs" and "free")."""
    from dashboard.analysis.fleet_floor import fleet_floor

    served, hub, fleet = fleet_app
    freshen(hub)
    layer = fleet_floor(hub.state, fleet.frame())
    first = layer.jobs[0]
    assert len(layer.jobs) == 12 and layer.jobs[-2:] == ["other jobs", "free"]
    page, log = new_page(viewport)
    page.goto(served.url("/floor?metric=team"))
    job_radio = page.locator("#floor-metric label", has_text="Job")
    job_radio.click()
    expect(page).to_have_url(re.compile(r"metric=job"))
    job_radio.hover()  # chosen and under the pointer: the accent, not the hover grey or Dash's focus colour
    assert job_radio.evaluate("l => [getComputedStyle(l).backgroundColor, getComputedStyle(l).color]") == [
        "rgb(86, 180, 233)",
        "rgb(11, 16, 22)",
    ]
    page.wait_for_function(
        "() => { const gd = document.querySelector('#floor-halls .js-plotly-plot');"
        " const t = gd && gd.layout.coloraxis.colorbar.ticktext; return t && t.at(-2) === 'other jobs'; }"
    )
    colouring = page.evaluate(
        """() => {
        const gd = document.querySelector('#floor-halls .js-plotly-plot');
        const z = gd.data.filter(t => t.type === 'heatmap').flatMap(t => t.z.flat());
        return {ticktext: gd.layout.coloraxis.colorbar.ticktext, first: z.filter(v => v === 0).length};
    }"""
    )
    assert colouring["ticktext"] == layer.jobs
    assert colouring["first"] == int((layer.job_category == 0).sum()) > 100  # a pretraining run's racks
    rack = int(np.flatnonzero(layer.job_category == 0)[0])
    assert f"most to job {first}" in layer.rack_note(rack)
    screenshot(page, f"floor-jobs-{viewport}")
    racks_out = np.flatnonzero(layer.nodes_out > 0)
    if racks_out.size:  # the hover of a rack with a node out: its team, job, and the node with state, age, reason
        _hover_rack(page, hub.state, int(racks_out[0]))
        hover = page.locator("#floor-halls .hoverlayer .hovertext")
        expect(hover).to_contain_text(layer.nodes_out_details[int(racks_out[0])][0].split(" for ")[0])
        expect(hover).to_contain_text("most to job")
        screenshot(page, f"floor-jobs-hover-{viewport}")
    assert log.errors == []


def _hover_rack(page, state, rack: int) -> None:
    """Move the pointer to the middle of ``rack``'s cell on the floor plan."""
    from dashboard.pages.floor import grids_for

    for hall, grid in enumerate(grids_for(state)):
        cells = np.argwhere(grid.cell_rack == rack)
        if cells.size:
            iy, ix = (int(v) for v in cells[0])
            x = float(grid.x_edges_m[ix] + grid.x_edges_m[ix + 1]) / 2
            y = float(grid.y_edges_m[iy] + grid.y_edges_m[iy + 1]) / 2
            px, py = page.evaluate(
                """([hall, x, y]) => {
                const gd = document.querySelector('#floor-halls .js-plotly-plot');
                const s = hall ? String(hall + 1) : '';
                const xa = gd._fullLayout['xaxis' + s], ya = gd._fullLayout['yaxis' + s];
                const box = gd.getBoundingClientRect();
                return [box.left + xa._offset + xa.l2p(x), box.top + ya._offset + ya.l2p(y)];
            }""",
                [hall, x, y],
            )
            page.mouse.move(px, py)
            return
    raise AssertionError(f"rack {rack} is on no hall's plan")
