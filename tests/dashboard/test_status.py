"""Alert grouping, one set of counts, the status banner, hostlists and windowed KPI stats."""

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import numpy as np
import pandas as pd

from dashboard.analysis.hostlist import compress
from dashboard.present.stat_window import window_stat
from dashboard.shell.status import alert_counts, group_alerts, muted_causes, running_jobs_text, status_banner
from tests.dashboard.hostlists import expand

T0 = datetime(2026, 7, 15, 20, 12, 40, tzinfo=UTC)


def alert(id_, key, severity, kind, name, message, group="", gpus=0, jobs=(), tokens=0.0, mw=0.0, **extra):
    base = {
        "id": id_,
        "key": key,
        "group": group or key,
        "severity": severity,
        "entity_kind": kind,
        "entity_name": name,
        "message": message,
        "raised_at": T0 + timedelta(seconds=id_),
        "impact": {"gpus": gpus, "jobs": list(jobs), "tokens_per_s": tokens, "power_mw": mw},
        "acknowledged": False,
        "silenced_until": None,
        "cleared_at": None,
        "value": 0.0,
    }
    return {**base, **extra}


CDU = "pump:cdu:4"
ALERTS = [
    alert(
        1,
        CDU,
        "critical",
        "cdu",
        "H1-R05-K03-CDU",
        "CDU H1-R05-K03-CDU lost: 0 of 2 pumps running",
        gpus=64,
        jobs=("big",),
        tokens=1.2e6,
        mw=0.1,
    ),
    alert(
        2,
        "gpu_hot:rack:7",
        "critical",
        "rack",
        "H1-R05-K03",
        "64 of 64 GPUs at or above slowdown",
        group=CDU,
        gpus=64,
        jobs=("big",),
        tokens=1.2e6,
    ),
    alert(
        3,
        "job_stalled:job:0",
        "critical",
        "job",
        "big",
        "stalled: 0 tokens/s, 24,576 GPUs idle",
        group=CDU,
        gpus=24576,
        jobs=("big",),
        tokens=1.2e6,
    ),
    alert(
        4,
        "n1:power:9",
        "warning",
        "power",
        "H2-BW-R01-A",
        "N-1: one more failure overloads it",
        mw=0.4,
        acknowledged=True,
    ),
    alert(
        5, "stale:source:dcgm", "warning", "source", "dcgm", "no reading yet", silenced_until=T0 + timedelta(hours=1)
    ),
    alert(6, "xid:48:gpu:3", "critical", "gpu", "n1/gpu3", "XID 48", cleared_at=T0),
]


def test_groups_put_effects_under_their_cause_most_urgent_first():
    groups = group_alerts(ALERTS)
    assert [g.key for g in groups] == [CDU, "n1:power:9", "stale:source:dcgm"]
    cdu = groups[0]
    assert cdu.root["id"] == 1 and [c["id"] for c in cdu.children] == [3, 2]  # the stalled job leads the children
    assert cdu.gpus == 24576 and cdu.jobs == ("big",) and cdu.severity == "critical"


def test_one_set_of_counts_for_every_page():
    counts = alert_counts(ALERTS, now=T0)
    assert counts["open"] == 5 and counts["critical"] == 3 and counts["warning"] == 2
    assert counts["need_attention"] == 3  # the acknowledged and the silenced one do not
    assert counts["groups"] == 3


def test_banner_names_the_worst_cause_its_scope_and_the_job_impact():
    banner = status_banner(ALERTS)
    assert banner.severity == "critical" and banner.headline.startswith("CDU H1-R05-K03-CDU lost")
    assert banner.scope == "1 rack · 24,576 GPUs · 1 job · 0.10 MW"
    assert banner.job_impact == "big stalled since 20:12:43 UTC, 0 tokens/s"
    assert banner.entity_kind == "cdu" and banner.more == 2
    assert status_banner([]).severity == "ok"
    tiny = [dict(a, impact=dict(a.get("impact") or {}, power_mw=0.001)) for a in ALERTS]
    assert "MW" not in status_banner(tiny).scope


def test_banner_says_what_a_cause_will_cost_before_any_job_alert():
    """The banner read "jobs unaffected" beside an alert whose impact was −2,952 tokens/s."""
    hot = alert(1, "gpu_hot:rack:4", "warning", "rack", "H1-R01-K05", "GPUs throttling", jobs=("big",), tokens=2952.4)
    assert status_banner([hot]).job_impact == "big: −2,952 tokens/s expected"
    cold = alert(2, "gpu_hot:rack:5", "warning", "rack", "H1-R01-K06", "GPUs warm")
    assert status_banner([cold]).job_impact == "jobs unaffected"


def _mute(kind: str, scope: str, comment: str, start: datetime, end: datetime, id_: int = 7) -> dict:
    """A mute as an alert carries it (:meth:`ingest.live.mute_scope.MuteRule.as_dict`)."""
    return {
        "id": id_,
        "kind": kind,
        "scope": scope,
        "comment": comment,
        "created_by": "olga",
        "starts_at": start,
        "ends_at": end,
    }


NOW = T0 + timedelta(minutes=1)  # alert 5's own silence holds (until T0 + 1 h)
WINDOW = _mute("maintenance", f"cause {CDU}", "CDU pump swap", T0, T0 + timedelta(hours=2))
BIG = SimpleNamespace(name="big", tokens_per_s=1.2e6)


def _in_window(alerts: list[dict], window: dict = WINDOW) -> list[dict]:
    return [dict(a, maintenance=window) if a["group"] == CDU else a for a in alerts]


def test_muted_causes_set_no_headline_and_are_carried_as_muted():
    banner = status_banner(_in_window(ALERTS), [BIG], NOW, "1.2 M")
    assert banner.severity == "warning" and banner.headline == "Power H2-BW-R01-A: N-1: one more failure overloads it"
    assert banner.entity_name == "H2-BW-R01-A" and banner.more == 0  # the silenced source is muted too
    assert [(c.key, c.reason) for c in banner.muted] == [
        (CDU, "in maintenance: CDU pump swap"),
        ("stale:source:dcgm", "silenced"),
    ]
    assert banner.muted[0].severity == "critical" and banner.muted[0].headline.startswith("CDU H1-R05-K03-CDU lost")
    # the stalled job's alert is in the window: no cause left affects the jobs, the line lists them at the tile's rate
    assert banner.job_impact == "jobs unaffected: big 1.2 M tokens/s"
    assert [c.key for c in muted_causes(_in_window(ALERTS), NOW)] == [CDU, "stale:source:dcgm"]


def test_a_window_not_under_way_or_a_partial_silence_mutes_no_cause():
    later = _mute("maintenance", f"cause {CDU}", "later", NOW + timedelta(hours=1), NOW + timedelta(hours=2))
    banner = status_banner(_in_window(ALERTS, later), [BIG], NOW, "1.2 M")
    assert banner.severity == "critical" and banner.entity_kind == "cdu"
    assert [c.key for c in banner.muted] == ["stale:source:dcgm"]
    assert banner.job_impact == "big stalled since 20:12:43 UTC, 0 tokens/s"
    # a scoped silence of the CDU and its rack, not the job: the cause still sets the banner, led by what is left
    rack = _mute("silence", "H1-R05-K03", "pump swap", T0, T0 + timedelta(hours=1))
    partial = [dict(a, silence=rack) if a["entity_kind"] in ("cdu", "rack") else a for a in ALERTS]
    banner = status_banner(partial, [BIG], NOW, "1.2 M")
    assert banner.severity == "critical" and banner.entity_kind == "job" and banner.entity_name == "big"
    assert CDU not in [c.key for c in banner.muted]
    ended = _mute("silence", "H1-R05-K03", "pump swap", T0, NOW)  # ends exactly now: over
    assert status_banner([dict(a, silence=ended) for a in ALERTS], [BIG], NOW).entity_kind == "cdu"


def test_the_quiet_banner_lists_the_running_jobs_at_the_tiles_rate():
    alerts = _in_window([a for a in ALERTS if a["group"] == CDU]) + [ALERTS[4]]
    banner = status_banner(alerts, [BIG], NOW, "1.19 M")
    assert banner.severity == "ok" and banner.headline == "Nothing needs attention"
    assert banner.scope == "2 causes muted (silenced or in maintenance)" and len(banner.muted) == 2
    assert banner.job_impact == "big 1.19 M tokens/s"  # the Throughput tile's figure, not the job's instant
    quiet = status_banner([], [BIG], NOW, "1.19 M")
    assert (quiet.headline, quiet.scope, quiet.job_impact, quiet.muted) == (
        "All systems normal",
        "no open alerts",
        "big 1.19 M tokens/s",
        (),
    )
    two = [BIG, SimpleNamespace(name="small", tokens_per_s=3.1e3)]
    assert running_jobs_text(two, "1.2 M") == "big 1.2 M tokens/s, small 3.1 k tokens/s"
    assert running_jobs_text([SimpleNamespace(name="big", tokens_per_s=float("nan"))]) == "big – tokens/s"
    assert running_jobs_text([], "1.2 M") == "no training job reported"
    cold = alert(2, "gpu_hot:rack:5", "warning", "rack", "H1-R01-K06", "GPUs warm")
    assert status_banner([cold], [BIG], NOW, "1.2 M").job_impact == "jobs unaffected: big 1.2 M tokens/s"


def test_hostlists_compress_like_slurm_and_round_trip():
    hosts = ["h1-r01-k02-n0", "h1-r01-k02-n1", "h1-r01-k02-n3", "node007", "node008", "node010", "login"]
    assert compress(hosts) == "login,h1-r01-k02-n[0-1,3],node[007-008,010]"
    assert sorted(expand(compress(hosts))) == sorted(hosts)
    assert compress(["a1", "a1"]) == "a1"


def test_window_stat_averages_the_swing_and_keeps_its_band():
    ts = pd.date_range(T0, periods=120, freq="1s")
    it_mw = np.where(np.arange(120) % 2 == 0, 23.6, 10.2)  # a training swing sampled every second
    trend = pd.DataFrame({"it_power_mw": it_mw}, index=pd.DatetimeIndex(ts, name="ts"))
    stat = window_stat(trend, "it_power_mw", window_s=30)
    assert stat.low == 10.2 and stat.high == 23.6 and abs(stat.mean - 16.9) < 0.3 and not stat.steady
    assert len(stat.samples) <= 60
    assert window_stat(pd.DataFrame(), "it_power_mw", latest=5.0).mean == 5.0
