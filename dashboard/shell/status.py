"""What is wrong, how bad: alerts grouped by cause, one set of counts, and the status banner.

Pure functions of the alert dicts a view serves (see :func:`ingest.live.alerts.alert_dict`:
``group``, ``impact``, ``severity``, ``acknowledged``, ``silenced_until``, ``silence``,
``maintenance`` …) and of the snapshot.  Every page that counts alerts uses :func:`alert_counts`, so the overview and
the alerts page cannot disagree.  The banner (:func:`status_banner`) leaves muted alerts out (:func:`is_muted`) and
carries the causes they make up wholly as ``muted`` (:func:`muted_causes`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime

from dashboard.present.formatting import fmt_si
from ingest.live.alert_rules import SEVERITY_RANK

UNAFFECTED = "jobs unaffected"  # the banner's job line when no cause is expected to cost the jobs throughput


@dataclass
class AlertGroup:
    """A root cause and the alerts it explains, with the worst severity and largest impact of them."""

    key: str
    root: dict  # the root-cause alert (or the first child when the root has cleared)
    children: list[dict] = field(default_factory=list)
    severity: str = "info"
    gpus: int = 0
    jobs: tuple[str, ...] = ()
    tokens_per_s: float = 0.0
    power_mw: float = 0.0
    raised_at: datetime | None = None

    @property
    def members(self) -> list[dict]:
        return [self.root] + self.children


def view_now(view) -> datetime:
    """The instant a view's alerts are aged and silences timed against: the wall clock for live views,
    the view's own snapshot time for a replay or a settled scenario (whose alerts are years old by the clock)."""
    if getattr(view, "is_live", True):
        return datetime.now(UTC)
    snap = view.latest()
    return snap.ts if snap is not None else datetime.now(UTC)


def _silenced(alert: dict, now: datetime) -> bool:
    until = alert.get("silenced_until")
    return until is not None and until > now


def _muted_by(alert: dict, key: str, now: datetime) -> bool:
    """Whether the alert's ``maintenance`` or ``silence`` (the window or scoped silence marked on it) holds at ``now``."""
    mute = alert.get(key)
    return bool(mute) and mute["starts_at"] <= now < mute["ends_at"]


def in_maintenance(alert: dict, now: datetime) -> bool:
    """Open and under a maintenance window at ``now``."""
    return alert.get("cleared_at") is None and _muted_by(alert, "maintenance", now)


def is_muted(alert: dict, now: datetime) -> bool:
    """Open and muted at ``now``: by its own silence, a scoped silence or a maintenance window."""
    return alert.get("cleared_at") is None and (
        _silenced(alert, now) or _muted_by(alert, "silence", now) or _muted_by(alert, "maintenance", now)
    )


def needs_attention(alert: dict, now: datetime | None = None) -> bool:
    """Open, not acknowledged, not silenced (by itself or by a scope) and not in maintenance: what an operator
    still has to look at."""
    now = now or datetime.now(UTC)
    return (
        alert.get("cleared_at") is None
        and not alert.get("acknowledged")
        and not _silenced(alert, now)
        and not _muted_by(alert, "silence", now)
        and not _muted_by(alert, "maintenance", now)
    )


def alert_counts(alerts: list[dict], now: datetime | None = None) -> dict[str, int]:
    """Open alerts per severity, how many need attention, how many are in maintenance, how many cause groups are open."""
    now = now or datetime.now(UTC)
    counts = {"critical": 0, "warning": 0, "info": 0, "open": 0, "need_attention": 0, "in_maintenance": 0, "groups": 0}
    groups = set()
    for alert in alerts:
        if alert.get("cleared_at") is not None:
            continue
        severity = alert.get("severity", "info")
        counts[severity] = counts.get(severity, 0) + 1
        counts["open"] += 1
        counts["need_attention"] += needs_attention(alert, now)
        counts["in_maintenance"] += _muted_by(alert, "maintenance", now)
        groups.add(alert.get("group") or alert.get("key") or alert.get("id"))
    counts["groups"] = len(groups)
    return counts


def group_alerts(alerts: list[dict]) -> list[AlertGroup]:
    """Open alerts by root cause, most urgent group first (severity, throughput lost, GPUs, power, name)."""
    by_key: dict[str, AlertGroup] = {}
    for alert in alerts:
        if alert.get("cleared_at") is not None:
            continue
        key = alert.get("group") or alert.get("key") or str(alert.get("id"))
        group = by_key.get(key)
        is_root = (alert.get("key") or str(alert.get("id"))) == key
        if group is None:
            by_key[key] = group = AlertGroup(key, alert)
        elif is_root:
            group.children.append(group.root)
            group.root = alert
        else:
            group.children.append(alert)
    for group in by_key.values():
        members = group.members
        group.severity = min((m.get("severity", "info") for m in members), key=lambda s: SEVERITY_RANK.get(s, 3))
        impacts = [m.get("impact") or {} for m in members]
        group.gpus = max((int(i.get("gpus", 0)) for i in impacts), default=0)
        group.jobs = tuple(sorted({j for i in impacts for j in i.get("jobs", ())}))
        group.tokens_per_s = max((float(i.get("tokens_per_s", 0.0)) for i in impacts), default=0.0)
        group.power_mw = max((float(i.get("power_mw", 0.0)) for i in impacts), default=0.0)
        group.raised_at = min((m["raised_at"] for m in members if m.get("raised_at") is not None), default=None)
        group.children.sort(key=_alert_order)
    return sorted(
        by_key.values(),
        key=lambda g: (
            SEVERITY_RANK.get(g.severity, 3),
            -g.tokens_per_s,
            -g.gpus,
            -g.power_mw,
            g.root.get("entity_name", ""),
            g.key,
        ),
    )


def _alert_order(alert: dict) -> tuple:
    impact = alert.get("impact") or {}
    return (
        SEVERITY_RANK.get(alert.get("severity"), 3),
        -float(impact.get("tokens_per_s", 0.0)),
        -int(impact.get("gpus", 0)),
        alert.get("entity_name", ""),
        alert.get("id") or 0,
    )


@dataclass(frozen=True)
class MutedCause:
    """A cause group every open alert of which is muted (:func:`is_muted`): listed, but it sets no banner."""

    key: str
    severity: str
    headline: str  # as the banner would name it
    reason: str  # e.g. "in maintenance: CDU pump swap", "silenced by H1", "silenced"
    entity_kind: str = ""
    entity_name: str = ""


@dataclass(frozen=True)
class Banner:
    """The overview's first line: the worst current cause, its scope, and what it does to the jobs.

    Muted causes (every alert of them silenced or in maintenance) set neither the headline nor
    the severity; they are carried in ``muted``.
    """

    severity: str  # critical | warning | ok
    headline: str  # e.g. "CDU H1-R05-K03-CDU lost: 1 of 2 pumps running …"
    scope: str  # e.g. "12 racks · 768 GPUs · 1 job · 0.9 MW"
    job_impact: str  # e.g. "colossus-405b-24k stalled since 20:12:40 UTC, 0 tokens/s"
    entity_kind: str = ""
    entity_name: str = ""
    more: int = 0  # other open cause groups, not muted
    muted: tuple[MutedCause, ...] = ()


def _racks_in(group: AlertGroup) -> int:
    return len({m.get("entity_name") for m in group.members if m.get("entity_kind") == "rack"})


def _headline(root: dict) -> str:
    message, name = root.get("message", ""), root.get("entity_name", "")
    return message if name and name in message else f"{_kind_label(root.get('entity_kind', ''))} {name}: {message}"


def _mute_reason(group: AlertGroup, now: datetime) -> str:
    """What mutes a muted group, read off its root: the window, else the scoped silence, else its own silence."""
    for member in group.members:
        if _muted_by(member, "maintenance", now):
            comment = member["maintenance"].get("comment") or member["maintenance"].get("scope", "")
            return f"in maintenance: {comment}"
    for member in group.members:
        if _muted_by(member, "silence", now):
            return f"silenced by {member['silence'].get('scope', '')}".rstrip()
    return "silenced"


def muted_causes(alerts: list[dict], now: datetime | None = None) -> list[MutedCause]:
    """The open cause groups all of whose open alerts are muted at ``now``, most urgent first."""
    now = now or datetime.now(UTC)
    live = {g.key for g in group_alerts([a for a in alerts if not is_muted(a, now)])}
    return [
        MutedCause(
            g.key,
            g.severity,
            _headline(g.root),
            _mute_reason(g, now),
            g.root.get("entity_kind", ""),
            g.root.get("entity_name", ""),
        )
        for g in group_alerts(alerts)
        if g.key not in live
    ]


def running_jobs_text(jobs: list | None, throughput: str = "") -> str:
    """The running jobs with their rate: ``pretrain-0 1.2 M tokens/s``, several joined by commas.

    ``throughput``: the overview's Throughput tile value (its 30 s mean, formatted); with one job
    running it is that job's rate, so that the banner and the tile show the same figure.  With
    several, each job's own rate, formatted as the tile and the Jobs table do.
    """
    jobs = list(jobs or [])
    if not jobs:
        return "no training job reported"
    if len(jobs) == 1 and throughput:
        return f"{jobs[0].name} {throughput} tokens/s"
    return ", ".join(f"{j.name} {fmt_si(j.tokens_per_s)} tokens/s" for j in jobs)


def status_banner(
    alerts: list[dict], jobs: list | None = None, now: datetime | None = None, throughput: str = ""
) -> Banner:
    """The banner for the open ``alerts`` and the running ``jobs`` (:class:`JobStatus` list) at ``now``.

    Alerts muted at ``now`` (:func:`is_muted`) are left out of the headline, the severity and the
    job lines; the causes they make up wholly are the banner's ``muted``.  When no unmuted cause
    affects the jobs, the job line lists the running jobs with their rate (:func:`running_jobs_text`,
    ``throughput`` the Throughput tile's value).
    """
    now = now or datetime.now(UTC)
    live = [a for a in alerts if not is_muted(a, now)]
    groups = group_alerts(live)
    muted = tuple(muted_causes(alerts, now))
    stalled = [a for a in live if a.get("cleared_at") is None and a.get("entity_kind") == "job"]
    if not groups:
        text = running_jobs_text(jobs, throughput)
        if not muted:
            return Banner("ok", "All systems normal", "no open alerts", text)
        n = len(muted)
        return Banner(
            "ok",
            "Nothing needs attention",
            f"{n} cause{'s' if n != 1 else ''} muted (silenced or in maintenance)",
            text,
            muted=muted,
        )
    worst = groups[0]
    root = worst.root
    headline = _headline(root)
    parts = []
    racks = _racks_in(worst)
    if racks:
        parts.append(f"{racks} rack{'s' if racks != 1 else ''}")
    if worst.gpus:
        parts.append(f"{worst.gpus:,} GPUs")
    if worst.jobs:
        parts.append(f"{len(worst.jobs)} job{'s' if len(worst.jobs) != 1 else ''}")
    if worst.power_mw >= 0.005:  # shown to 0.01 MW: less would read "0.00 MW"
        parts.append(f"{worst.power_mw:.2f} MW")
    job_lines = []
    for alert in sorted(stalled, key=_alert_order):
        since = alert.get("raised_at")
        when = f" since {since:%H:%M:%S} UTC" if isinstance(since, datetime) else ""
        value = alert.get("value")
        rate = f"{value:,.0f} tokens/s" if isinstance(value, (int, float)) and math.isfinite(value) else "no rate"
        verb = "stalled" if "stalled" in alert.get("message", "") else "slowed"
        job_lines.append(f"{alert.get('entity_name')} {verb}{when}, {rate}")
    impact = "; ".join(job_lines) or _expected_impact(worst)
    if impact == UNAFFECTED and jobs:
        impact = f"{UNAFFECTED}: {running_jobs_text(jobs, throughput)}"
    return Banner(
        worst.severity,
        headline,
        " · ".join(parts) or "site-wide",
        impact,
        root.get("entity_kind", ""),
        root.get("entity_name", ""),
        len(groups) - 1,
        muted,
    )


def _expected_impact(group: AlertGroup) -> str:
    """What the cause is expected to cost the jobs when no job alert says so yet (the alerts' impact)."""
    if group.tokens_per_s >= 0.5:
        jobs = ", ".join(group.jobs[:3]) + (" …" if len(group.jobs) > 3 else "") if group.jobs else "jobs"
        return f"{jobs}: −{group.tokens_per_s:,.0f} tokens/s expected"
    return UNAFFECTED


def _kind_label(kind: str) -> str:
    return {
        "cdu": "CDU",
        "gpu": "GPU",
        "job": "Job",
        "loop": "Loop",
        "power": "Power",
        "rack": "Rack",
        "site": "Site",
        "source": "Source",
        "switch": "Switch",
    }.get(kind, kind.capitalize())
