"""Notifications out: the open alert episodes posted to a Prometheus Alertmanager and to a JSON webhook.

:class:`Notifier` takes the open episodes after each tick (:meth:`Notifier.offer`, cheap,
never blocking) and posts from its own thread, so a slow or dead receiver never stops the
tick.  Every post has a deadline (:data:`POST_TIMEOUT_S`) and a size cap
(:data:`MAX_BODY_BYTES`, at most :data:`MAX_ALERTS_PER_POST` alerts, most urgent first); a
failing receiver is logged once when the outage starts and once when it ends.

Alertmanager (API v2, ``POST /api/v2/alerts``) gets one object per episode with labels
for grouping and inhibition (``alertname`` = rule, ``severity``, ``site``, ``entity_kind``,
``entity``, ``cause`` = the key of the root cause's episode, ``alert_id``), ``startsAt``,
``endsAt`` and a ``generatorURL`` to the alert on the dashboard.  Open episodes are
re-sent every :data:`RESEND_S` with ``endsAt`` a few resends ahead, as Prometheus does;
a cleared episode is sent once more with ``endsAt`` = its clear time.  The webhook gets
``{"version": "1", "site", "alerts": [...]}`` with the same alert objects and a
``status`` of ``firing``, ``suppressed`` or ``resolved``, on every change.

An episode under a maintenance window or a scoped silence (:mod:`ingest.live.mute_scope`),
or silenced by itself, is still sent, labelled ``muted_by="<kind>-<id>"`` (``maintenance-3``,
``silence-7``, ``alert-42``; and ``maintenance="true"`` under a window), beside one alert per
such window or silence (``alertname="ClusterTwinMute"``, the same ``site`` and ``muted_by``,
``startsAt``/``endsAt`` those of the window).  An Alertmanager inhibit rule
(``source_matchers: [alertname="ClusterTwinMute"]``, ``target_matchers: [muted_by=~".+"]``,
``equal: [site, muted_by]``, docs/alerts.md) then inhibits the muted episodes: Alertmanager
lists them as suppressed, notifies nobody, and notifies again when the window ends and the
episode is sent without those labels.  Alertmanager identifies an alert by its labels, so an
episode whose muting changes is resolved under its old labels in the same post.
"""

from __future__ import annotations

import json
import logging
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import quote, urlsplit

from ingest.live.alert_rules import Condition, sort_key
from ingest.live.mute_scope import MuteRule
from ingest.store.outage import WriteOutage

log = logging.getLogger(__name__)

POST_TIMEOUT_S = 5.0  # deadline of one post, connection included
MAX_BODY_BYTES = 1 << 20  # a post larger than this is cut to the most urgent alerts that fit
MAX_ALERTS_PER_POST = 1000
MAX_RESPONSE_BYTES = 64 << 10  # read at most this much of a receiver's answer
RESEND_S = 60.0  # Prometheus' default resend delay for alerts still firing
ENDS_AFTER_RESENDS = 4  # an open alert's endsAt: this many resends ahead (Prometheus: 4 × resend delay)
MUTE_ALERTNAME = "ClusterTwinMute"  # the alert standing for a window or silence: the inhibit rule's source


@dataclass(frozen=True)
class Episode:
    """One open (or just cleared) episode as posted: its condition, stored id and times."""

    condition: Condition
    alert_id: int | None
    starts_at: datetime
    ends_at: datetime | None = None  # set once cleared
    mute: MuteRule | None = None  # the maintenance window or scoped silence muting it now

    @property
    def muted_by(self) -> str:
        """The ``muted_by`` label: ``maintenance-3``, ``silence-7``; "" when not muted."""
        return f"{self.mute.kind}-{self.mute.id}" if self.mute is not None else ""


def _until(ts: datetime) -> str:
    return f"{ts:%Y-%m-%d %H:%M} UTC"


def mute_text(rule: MuteRule) -> str:
    """What a muted alert says of its window or silence: ``in maintenance: <reason> …``, ``silenced by <scope> …``."""
    if rule.kind == "maintenance":
        return f"in maintenance: {rule.comment} ({rule.scope.label()}, until {_until(rule.ends_at)})"
    if rule.kind == "alert":
        return f"silenced until {_until(rule.ends_at)}"
    return f"silenced by {rule.scope.label()} until {_until(rule.ends_at)} ({rule.created_by}: {rule.comment})"


def check_url(url: str, what: str) -> str:
    """``url`` if it is an http(s) URL with a host; else a one-line ValueError naming ``what``."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{what} {url[:200]!r}: expected an http:// or https:// URL with a host")
    return url.rstrip("/")


def alertmanager_alert(ep: Episode, site: str, now: datetime, dashboard_url: str = "") -> dict:
    """The Alertmanager v2 object of one episode (see module docstring)."""
    c = ep.condition
    labels = {
        "alertname": c.rule,
        "severity": c.severity,
        "site": site,
        "entity_kind": c.entity_kind,
        "entity": c.entity_name,
        "cause": c.group_key,
        "alert_key": c.key,
    }
    if ep.alert_id is not None:
        labels["alert_id"] = str(ep.alert_id)
    annotations = {"summary": f"{c.entity_name}: {c.message}", "runbook": c.runbook}
    status = "resolved" if ep.ends_at is not None else "firing"
    if ep.mute is not None:
        labels["muted_by"] = ep.muted_by
        if ep.mute.kind == "maintenance":
            labels["maintenance"] = "true"
        annotations["muted"] = mute_text(ep.mute)
        status = "resolved" if ep.ends_at is not None else "suppressed"
    ends = ep.ends_at or now + timedelta(seconds=RESEND_S * ENDS_AFTER_RESENDS)
    link = f"{dashboard_url}/alerts?alert={quote(str(ep.alert_id or c.key))}" if dashboard_url else ""
    return {
        "labels": labels,
        "annotations": annotations,
        "startsAt": ep.starts_at.isoformat(),
        "endsAt": ends.isoformat(),
        "generatorURL": link or "http://clustertwin.invalid/alerts",
        "status": status,
    }


def mute_alert(rule: MuteRule, site: str, now: datetime, ended: bool = False, dashboard_url: str = "") -> dict:
    """The Alertmanager object standing for window or silence ``rule`` while it mutes episodes (the inhibit source).

    It fires from the rule's start until its end (re-sent like an episode, ``endsAt`` at
    most a few resends ahead); ``ended``: sent once more with ``endsAt`` = ``now``.
    """
    ends = now if ended else min(rule.ends_at, now + timedelta(seconds=RESEND_S * ENDS_AFTER_RESENDS))
    return {
        "labels": {
            "alertname": MUTE_ALERTNAME,
            "site": site,
            "muted_by": f"{rule.kind}-{rule.id}",
            "mute_kind": rule.kind,
            "severity": "none",
        },
        "annotations": {"summary": mute_text(rule), "scope": rule.scope.label(), "created_by": rule.created_by},
        "startsAt": rule.starts_at.isoformat(),
        "endsAt": ends.isoformat(),
        "generatorURL": f"{dashboard_url}/alerts" if dashboard_url else "http://clustertwin.invalid/alerts",
        "status": "resolved" if ended else "firing",
    }


def capped_body(alerts: list[dict], wrap=lambda alerts: alerts) -> bytes:
    """JSON of ``wrap(alerts)``, the list cut (its tail: least urgent) to fit :data:`MAX_BODY_BYTES`."""
    alerts = alerts[:MAX_ALERTS_PER_POST]
    while True:
        body = json.dumps(wrap(alerts), separators=(",", ":")).encode()
        if len(body) <= MAX_BODY_BYTES or not alerts:
            return body
        alerts = alerts[: max(len(alerts) * MAX_BODY_BYTES // len(body) - 1, 0)]


def post_json(url: str, body: bytes) -> int:
    """POST ``body`` to ``url`` within :data:`POST_TIMEOUT_S`; the HTTP status (raises on failure)."""
    request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=POST_TIMEOUT_S) as response:  # noqa: S310 (http(s) checked)
        response.read(MAX_RESPONSE_BYTES)
        return response.status


class Receiver:
    """One receiver (Alertmanager or webhook): where to post, how to build the body, its outage state."""

    def __init__(self, kind: str, url: str, site: str) -> None:
        self.kind, self.site = kind, site
        self.url = check_url(url, f"--{kind}")
        self.post_url = f"{self.url}/api/v2/alerts" if kind == "alertmanager" else self.url
        self.outage = WriteOutage(log, f"{kind} {self.url}")
        self.posts_total = 0

    def body(self, alerts: list[dict]) -> bytes:
        if self.kind == "alertmanager":
            return capped_body([{k: v for k, v in a.items() if k != "status"} for a in alerts])
        return capped_body(alerts, lambda cut: {"version": "1", "site": self.site, "alerts": cut})

    def send(self, alerts: list[dict]) -> bool:
        """Post ``alerts``; False (logged once per outage) when the receiver failed."""
        try:
            post_json(self.post_url, self.body(alerts))
        except (OSError, ValueError, urllib.error.URLError) as exc:
            self.outage.failed("notifications dropped", exc)
            return False
        self.outage.succeeded()
        self.posts_total += 1
        return True


class Notifier:
    """Posts the episodes offered after each tick to its receivers, from one background thread."""

    def __init__(self, site: str, receivers: list[Receiver], dashboard_url: str = "") -> None:
        self.site, self.receivers, self.dashboard_url = site, receivers, dashboard_url
        self._lock = threading.Condition()
        self._pending: tuple[datetime, list[Episode]] | None = None
        self._open: dict[str, Episode] = {}
        self._mutes: dict[str, MuteRule] = {}  # muted_by label → the window or silence muting episodes
        self._last_sent_s = float("-inf")
        self._stop = False
        self._thread = threading.Thread(target=self._run, name=f"notify-{site}", daemon=True)
        self._thread.start()

    def offer(self, now: datetime, episodes: list[Episode]) -> None:
        """The episodes open at ``now`` (the newest offer replaces one not yet sent)."""
        with self._lock:
            self._pending = (now, episodes)
            self._lock.notify()

    def stop(self, timeout_s: float = POST_TIMEOUT_S + 1.0) -> None:
        """End the thread (after at most one post in flight)."""
        with self._lock:
            self._stop = True
            self._lock.notify()
        self._thread.join(timeout_s)

    def _run(self) -> None:
        while True:
            with self._lock:
                while self._pending is None and not self._stop:
                    self._lock.wait()
                if self._stop:
                    return
                now, episodes = self._pending
                self._pending = None
            self._deliver(now, episodes)

    def _deliver(self, now: datetime, episodes: list[Episode]) -> None:
        current = {e.condition.key: e for e in episodes}
        # a cleared episode, and one whose muting changed (Alertmanager knows it by its old labels): resolved
        ended = [
            Episode(e.condition, e.alert_id, e.starts_at, ends_at=now, mute=e.mute)
            for k, e in self._open.items()
            if k not in current or current[k].muted_by != e.muted_by
        ]
        changed = bool(ended) or any(
            k not in self._open or self._open[k].condition.severity != e.condition.severity for k, e in current.items()
        )
        self._open = current
        muting = {e.muted_by: e.mute for e in current.values() if e.mute is not None}
        ended_mutes = [rule for label, rule in self._mutes.items() if label not in muting]
        self._mutes = muting
        now_s = now.timestamp()
        if not changed and not ended_mutes and now_s - self._last_sent_s < RESEND_S:
            return
        self._last_sent_s = now_s
        ordered = sorted(current.values(), key=lambda e: sort_key(e.condition)) + ended
        alerts = [alertmanager_alert(e, self.site, now, self.dashboard_url) for e in ordered]
        # the windows and silences first: a post cut to its size cap keeps them, so nothing muted pages
        sources = [mute_alert(r, self.site, now, dashboard_url=self.dashboard_url) for r in muting.values()]
        sources += [mute_alert(r, self.site, now, ended=True, dashboard_url=self.dashboard_url) for r in ended_mutes]
        for receiver in self.receivers:
            if receiver.kind == "webhook":
                if changed:
                    receiver.send(alerts)
            else:
                receiver.send(sources + alerts)
