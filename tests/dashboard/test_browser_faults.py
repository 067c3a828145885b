"""Each fault class injected through the synthetic stream, seen by an operator in the browser.

For every fault the demo site runs a real live hub fed by the synthetic stream with that
one fault (stepped by the test, then stamped now).  On ``/alerts`` the fault's alert has the
severity its rule gives, heads the right cause group, and its entity link opens the
equipment's page; on ``/`` the status banner names the cause and its severity; the failed
equipment is marked where the equipment code marks it; and the overview's "Open alerts"
tile agrees with the alerts page summary.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qsl, urlsplit

import pytest
from playwright.sync_api import expect

from dashboard.figures import power as power_figs

pytestmark = pytest.mark.browser

JOB = "megatron-18b-a100"  # on racks H1-R01-K01..K04 of the demo site


@dataclass(frozen=True)
class Case:
    """One injected fault and what the operator must see."""

    fault: str
    group: str  # the cause group (``data-group``) and key of its root alert
    severity: str
    entity: str  # the root alert's entity cell text
    href: str  # where the entity link lands
    message: str  # part of the root alert's text (and of the banner headline)
    landed: Callable = lambda page: None  # the equipment's page shows it
    marked: Callable | None = None  # the failed equipment marked on the equipment pages: (page, served)
    children: tuple[tuple[str, str], ...] = ()  # (entity text, href) of alerts listed under the cause
    # stream seconds the hub is stepped at: long enough for every episode of the fault to pass its minimum duration
    ticks_s: tuple[float, ...] = tuple(range(12))
    extra: dict = field(default_factory=dict)


def _power_marks_dead(page, served) -> None:
    page.goto(served.url("/power"))
    expect(page.locator("#power-tree .legend")).to_contain_text(power_figs.DEAD_LEGEND)


def _source_focused(page) -> None:
    """The alert's link lands on the generator's row of the sources table: marked, and lost."""
    row = page.locator("#power-sources tr.row-focus")
    expect(row).to_have_count(1)
    expect(row.locator("td").first).to_have_text("GEN-01")
    expect(row.locator("td").nth(2)).to_have_text("lost")


def _busway_marked(page, served) -> None:
    _power_marks_dead(page, served)
    expect(page.locator("#power-tree .legend")).to_contain_text(power_figs.ALONE_LEGEND)
    page.goto(served.url("/power?element=H1-UPS1-A"))
    expect(page.locator("#power-tree .textpoint", has_text="H1-BW-R01-A")).to_have_count(1)
    expect(page.locator("#power-tree .scatterlayer .trace").nth(-2).locator(".point")).to_have_count(1)


def _cdu_lost_marked(page, served) -> None:
    page.goto(served.url("/cooling"))
    first = page.locator("#cooling-worst tbody tr").first
    expect(first).to_contain_text("H1-R01-K02-CDU")
    expect(first).to_contain_text("LOST")
    expect(first).to_have_class("row-critical")


CASES = [
    Case(
        "feed:H1-BW-R01-A",
        "power_dead:power:8",
        "critical",
        "power H1-BW-R01-A",
        "/power?element=H1-BW-R01-A",
        "busway H1-BW-R01-A de-energised",
        landed=lambda page: expect(page.locator("#power-tree .gtitle")).to_contain_text("H1-BW-R01-A"),
        marked=_busway_marked,
        children=(("power H1-BW-R01-B", "/power?element=H1-BW-R01-B"),),
    ),
    Case(
        "source:GEN-01",
        "source_down:source:1",
        "warning",
        "source GEN-01",
        "/power?source=GEN-01",
        "generator GEN-01 tripped",
        landed=_source_focused,
        marked=_power_marks_dead,
    ),
    Case(
        "facility_water:FW-H1=10",
        "loop_supply:loop:0",
        "critical",
        "loop FW-H1",
        "/cooling?loop=FW-H1",
        "facility supply ≥ 5 K above its 25 °C setpoint",
        landed=lambda page: expect(page.locator("#cooling-worst")).to_be_visible(),
    ),
    Case(
        "cdu:H1-R01-K02-CDU",
        "pump:cdu:1",
        "critical",
        "cdu H1-R01-K02-CDU",
        "/cdu?cdu=H1-R01-K02-CDU",
        "CDU H1-R01-K02-CDU lost",
        landed=lambda page: expect(page.locator("#cdu-status")).to_contain_text("LOST"),
        marked=_cdu_lost_marked,
        children=(("rack H1-R01-K02", "/floor?rack=H1-R01-K02"), (f"job {JOB}", f"/jobs?job={JOB}")),
    ),
    Case(
        "pump:H1-R01-K03-CDU",
        "pump:cdu:2",
        "warning",
        "cdu H1-R01-K03-CDU",
        "/cdu?cdu=H1-R01-K03-CDU",
        "1 of 2 pumps running",
        landed=lambda page: expect(page.locator("#cdu-status")).to_contain_text("NO REDUNDANCY"),
    ),
    Case(
        "xid:h1-r01-k01-n0/0",
        "xid:79:gpu:0",
        "critical",
        "gpu h1-r01-k01-n0/gpu0",
        "/floor?rack=H1-R01-K01&metric=max_gpu_temp_c",
        "XID 79 on h1-r01-k01-n0/gpu0",
        landed=lambda page: expect(page.locator("#floor-rack-title")).to_have_text("Rack H1-R01-K01"),
        children=((f"job {JOB}", f"/jobs?job={JOB}"),),
    ),
    # 60 %/h growth of the thermal resistance, stepped over seven minutes: the rack's GPUs reach max operating temperature
    Case(
        "tim:H1-R01-K04=60",
        "gpu_hot:rack:3",
        "warning",
        "rack H1-R01-K04",
        "/floor?rack=H1-R01-K04",
        "GPUs at or above max operating temperature",
        landed=lambda page: expect(page.locator("#floor-rack-title")).to_have_text("Rack H1-R01-K04"),
        ticks_s=tuple(range(0, 430, 10)),
    ),
    Case(
        "link:leaf-p00-a000-r0",
        "links_down:switch:0",
        "critical",
        "switch leaf-p00-a000-r0",
        "/fabric?switch=leaf-p00-a000-r0",
        "all 64 uplinks down",
        landed=lambda page: expect(page.locator("#fabric-detail .gtitle")).to_contain_text("leaf-p00-a000-r0"),
    ),
]


@pytest.fixture()
def faulted(dash_app, tmp_path):
    """Factory: ``faulted(case) -> served app`` over a demo live hub with the case's fault, stamped now."""
    dash_app.server.test_client().get("/")  # the session app takes its inline scripts first (see colossus_app)
    from dashboard.app import app_for_hub
    from ingest.live.runtime import build_hub
    from tests.dashboard.conftest import ServedApp

    started = []

    def make(case: Case):
        span_s = max(case.ticks_s) + 1
        start = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=span_s + 1)
        hub = build_hub(
            "demo", f"sqlite:///{tmp_path / 'hub.db'}", record=False, start=start, job=JOB, faults=(case.fault,)
        )
        for t_s in case.ticks_s:
            hub.step(start + timedelta(seconds=t_s))
        hub.step(datetime.now(UTC))  # live, not stale
        app = app_for_hub(hub, tick_ms=60_000)  # no refresh during the checks: the pages show the stepped state
        app.server.test_client().get("/")
        served = ServedApp(app)
        started.append((served, hub))
        return served

    yield make
    for served, hub in started:
        served.stop()
        hub.db.dispose()


def _counts(summary: str) -> tuple[int, int]:
    """(open, need attention) of the alerts page summary."""
    match = re.match(r"(\d+) open in \d+ causes?: .* · (\d+) need attention", summary)
    assert match, summary
    return int(match.group(1)), int(match.group(2))


@pytest.mark.parametrize("case", CASES, ids=[c.fault.split(":")[0] for c in CASES])
def test_fault_is_seen_grouped_linked_and_counted_alike(faulted, new_page, screenshot, case):
    served = faulted(case)
    page, log = new_page("1366x768")

    page.goto(served.url("/alerts"))
    group = page.locator(f'tbody.alert-group[data-group="{case.group}"]')
    expect(group).to_have_count(1)
    root = group.locator("tr.alert-row:not(.child)")
    expect(root.locator(".sev")).to_have_text(case.severity)
    expect(root.locator("td.alert-text")).to_contain_text(case.message)
    expect(group).to_have_class(re.compile(rf"sev-border-{case.severity}"))
    for text, href in case.children:
        expect(group.locator("tr.alert-row.child a", has_text=text).first).to_have_attribute("href", href)
    open_alerts, need_attention = _counts(page.locator("#alerts-summary").inner_text())
    assert open_alerts >= 1 + len(case.children)
    screenshot(page, f"fault-{case.fault.split(':')[0]}-alerts-1366x768")

    link = root.locator("a", has_text=case.entity)
    expect(link).to_have_attribute("href", case.href)
    link.click()
    case.landed(page)
    # the page landed on keeps the link's selection; it may add its defaults (the fabric writes tier=leaf)
    landed = urlsplit(page.url)
    target = urlsplit(case.href)
    assert landed.path == target.path, page.url
    assert set(parse_qsl(target.query)) <= set(parse_qsl(landed.query)), page.url

    page.goto(served.url("/"))
    status = page.locator("#overview-status")
    expect(status.locator(".sev")).to_have_text(case.severity.upper())
    expect(status.locator(".status-headline")).to_contain_text(case.message)
    expect(page.locator('[data-kpi="alerts"] .kpi-value')).to_have_text(str(open_alerts))
    expect(page.locator('[data-kpi="alerts"] .kpi-note')).to_contain_text(f"{need_attention} need attention")
    screenshot(page, f"fault-{case.fault.split(':')[0]}-overview-1366x768")

    if case.marked is not None:
        case.marked(page, served)
    assert log.errors == []
