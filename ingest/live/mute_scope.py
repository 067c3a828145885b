"""Scopes of scoped silences and maintenance windows: what they name, checked, and which alerts they match.

A scope is one of

- ``entity``: a glob over entity names (``*`` any run, ``?`` one character, ``[…]`` a set,
  ``[!…]`` not in it), e.g. ``H4-R0*-K*``, or a rack, CDU or switch name as it is.  It
  matches a whole name, or the start of one up to a ``-`` or ``/``: a rack's name also
  covers its CDU (``H1-R01-K02-CDU``) and its hosts' GPUs (``h1-r01-k02-n0/gpu5``).  Case is
  ignored (rack and CDU names are upper case, host names lower case);
- ``group``: a cause group, the key of the root-cause alert the alerts page groups by
  (``pump:cdu:1``): the root and every alert it explains;
- ``hall``: a hall of the site (``H4``): every alert whose entity lies wholly in it (a rack,
  its GPUs, a CDU or a busway whose racks are all in the hall; a spine whose leaves are).

optionally narrowed to one rule (the alert's ``alertname``: ``gpu_hot``, ``xid`` …) and one
metric.  :class:`MuteSet` matches alerts against many scopes at once; the match of an alert
does not depend on time, so it is computed once per alert key and cause, and each tick
only checks which of the matched silences and windows are active.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from twin.site.tables import SiteTables

SCOPE_KINDS = ("entity", "group", "hall")
MUTE_KINDS = ("silence", "maintenance")  # a maintenance window outranks a silence
MAX_PATTERN_CHARS = 200
MAX_FILTER_CHARS = 100
MAX_CACHED_MATCHES = 100_000  # alert keys remembered per set of mutes before the memo starts over
_NAME_CHARS = re.compile(r"^[\x21-\x7e]+$")  # printable ASCII, no spaces
_METRIC = re.compile(r"^[a-z][a-z0-9_]*$")
_NO_HALL = -1


class ScopeError(ValueError):
    """A scope that cannot be used; the message is one line naming the bad part."""


def _shown(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:40] + "…")


@dataclass(frozen=True)
class Scope:
    """What a silence or a window covers: ``kind`` (entity, group, hall), its ``value``, optional filters."""

    kind: str
    value: str
    rule: str = ""  # only alerts of this rule ("" any)
    metric: str = ""  # only alerts on this metric ("" any)

    def label(self) -> str:
        """How pages name the scope: ``H1``, ``H4-R0*-K*``, ``cause pump:cdu:1``, with its filters."""
        text = f"cause {self.value}" if self.kind == "group" else self.value
        if self.rule:
            text += f" · {self.rule} alerts"
        if self.metric:
            text += f" · {self.metric}"
        return text


def _check_glob(pattern: str) -> None:
    depth = 0
    for ch in pattern:
        if ch == "[":
            depth += 1
        elif ch == "]" and depth:
            depth -= 1
    if depth:
        raise ScopeError(f"entity pattern {_shown(pattern)}: a '[' is not closed by ']'")
    if not pattern.strip("*?"):
        raise ScopeError(
            f"entity pattern {_shown(pattern)} matches every entity: name a hall, a rack prefix or a cause instead"
        )


def parse_scope(
    kind: str,
    value: str,
    rule: str = "",
    metric: str = "",
    *,
    halls: list[str] | tuple[str, ...] = (),
    rules: tuple[str, ...] = (),
) -> Scope:
    """A checked :class:`Scope`; :class:`ScopeError` (one line naming it) for a bad kind, value or filter.

    ``halls`` are the site's hall names (a hall scope must be one; matched case-insensitively
    and stored as the site spells it); ``rules`` the known rule names (empty: any accepted).
    """
    if kind not in SCOPE_KINDS:
        raise ScopeError(f"scope kind {_shown(str(kind))}: expected one of {', '.join(SCOPE_KINDS)}")
    value = (value or "").strip() if isinstance(value, str) else ""
    what = {"entity": "entity pattern", "group": "cause group", "hall": "hall"}[kind]
    if not value:
        raise ScopeError(f"{what} is empty")
    if len(value) > MAX_PATTERN_CHARS:
        raise ScopeError(f"{what} {_shown(value)} is longer than {MAX_PATTERN_CHARS} characters")
    if not _NAME_CHARS.match(value):
        raise ScopeError(f"{what} {_shown(value)}: only printable characters without spaces are allowed")
    if kind == "entity":
        _check_glob(value)
        try:
            glob_regex(value)
        except re.error as exc:  # e.g. a reversed range [3-1]
            raise ScopeError(f"entity pattern {_shown(value)}: {exc}") from None
    elif kind == "hall" and halls:
        spelled = {h.lower(): h for h in halls}.get(value.lower())
        if spelled is None:
            raise ScopeError(f"hall {_shown(value)} is not one of the site's halls ({', '.join(halls)})")
        value = spelled
    rule = rule.strip() if isinstance(rule, str) else ""
    metric = metric.strip() if isinstance(metric, str) else ""
    if rule and (len(rule) > MAX_FILTER_CHARS or (rules and rule not in rules)):
        known = ", ".join(sorted(rules)[:6]) + (" …" if len(rules) > 6 else "")
        raise ScopeError(f"rule {_shown(rule)} is not an alert rule (known: {known or 'none'})")
    if metric and (len(metric) > MAX_FILTER_CHARS or not _METRIC.match(metric)):
        raise ScopeError(f"metric {_shown(metric)}: expected a quantity name such as gpu_temp_c")
    return Scope(kind, value, rule, metric)


# ------------------------------------------------------------------ halls of entities
def _unique(n: int, members: np.ndarray, halls: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per element of ``n``: the smallest and largest hall of its (member → hall) pairs (n_halls, -1 when none)."""
    lo = np.full(n, np.iinfo(np.int32).max, dtype=np.int64)
    hi = np.full(n, -1, dtype=np.int64)
    np.minimum.at(lo, members, halls)
    np.maximum.at(hi, members, halls)
    return lo, hi


def _hall_of(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return np.where((hi >= 0) & (lo == hi), hi, _NO_HALL).astype(np.int32)


class HallIndex:
    """The hall each entity of a site lies wholly in (-1: none, or several), per entity kind."""

    def __init__(self, state: SiteTables) -> None:
        s = state
        self.names = list(s.hall_name)
        rack_hall = s.rack_hall.astype(np.int64)
        self._by_kind = {
            "rack": rack_hall.astype(np.int32),
            "gpu": rack_hall[s.gpu_rack].astype(np.int32),
            "cdu": _hall_of(*_unique(len(s.cdu_name), s.rack_cdu, rack_hall)),
            "loop": _hall_of(*_unique(len(s.loop_name), s.cdu_loop[s.rack_cdu], rack_hall)),
            "power": self._power(s, rack_hall),
            "switch": self._switches(s, rack_hall),
        }

    @staticmethod
    def _power(s: SiteTables, rack_hall: np.ndarray) -> np.ndarray:
        """Busways from the racks they feed, then every element upstream from the elements below it."""
        fed_a, fed_b = s.rack_feed_a >= 0, s.rack_feed_b >= 0
        members = np.concatenate([s.rack_feed_a[fed_a], s.rack_feed_b[fed_b]])
        lo, hi = _unique(len(s.power_name), members, np.concatenate([rack_hall[fed_a], rack_hall[fed_b]]))
        for depth in range(int(s.power_depth.max(initial=0)), 0, -1):
            below = np.flatnonzero((s.power_depth == depth) & (s.power_parent >= 0))
            np.minimum.at(lo, s.power_parent[below], lo[below])
            np.maximum.at(hi, s.power_parent[below], hi[below])
        return _hall_of(lo, hi)

    @staticmethod
    def _switches(s: SiteTables, rack_hall: np.ndarray) -> np.ndarray:
        """Leaves from their GPUs' racks; each tier above from the switches linked below it."""
        lo, hi = _unique(len(s.switch_name), s.gpu_leaf, rack_hall[s.gpu_rack])
        for tier in sorted(int(t) for t in np.unique(s.switch_tier)):  # leaves first, then each tier above
            links = np.flatnonzero(s.switch_tier[s.link_a] == tier)
            np.minimum.at(lo, s.link_b[links], lo[s.link_a[links]])
            np.maximum.at(hi, s.link_b[links], hi[s.link_a[links]])
        return _hall_of(lo, hi)

    def hall(self, entity_kind: str, entity_id) -> str:
        """The hall name of one entity, "" when it lies in no single hall (a job, a source, the site)."""
        table = self._by_kind.get(entity_kind)
        if table is None or not isinstance(entity_id, (int, np.integer)) or not 0 <= entity_id < len(table):
            return ""
        index = int(table[entity_id])
        return self.names[index] if index >= 0 else ""


# ------------------------------------------------------------------ rules and their matching
@dataclass(frozen=True)
class MuteRule:
    """One stored silence or window as matching sees it (times timezone-aware UTC)."""

    id: int
    kind: str  # silence | maintenance
    scope: Scope
    comment: str  # the silence's comment, the window's reason
    created_by: str
    starts_at: datetime
    ends_at: datetime  # the earlier of its end and when it was expired or cancelled

    def active(self, at: datetime) -> bool:
        return self.starts_at <= at < self.ends_at

    def as_dict(self) -> dict:
        """What an alert carries of the silence or window muting it."""
        return {
            "id": self.id,
            "kind": self.kind,
            "scope": self.scope.label(),
            "comment": self.comment,
            "created_by": self.created_by,
            "starts_at": self.starts_at,
            "ends_at": self.ends_at,
        }


@dataclass(frozen=True)
class AlertFacts:
    """What matching reads of an alert (a condition or a stored row alike)."""

    key: str
    group: str
    entity_kind: str
    entity_id: int
    entity_name: str
    metric: str

    @property
    def rule(self) -> str:
        return self.key.split(":", 1)[0]


def glob_regex(pattern: str) -> re.Pattern:
    """The regular expression of an entity pattern: the glob, then nothing or a ``-``/``/`` and anything."""
    parts, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        close = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "]") else i + 1) if ch == "[" else -1
        if ch == "*":
            parts.append(".*")
        elif ch == "?":
            parts.append(".")
        elif close > 0:
            body = pattern[i + 1 : close]
            negate = body.startswith("!")
            members = re.escape(body[1:] if negate else body).replace("\\-", "-")
            parts.append(f"[{'^' if negate else ''}{members}]")
            i = close
        else:
            parts.append(re.escape(ch))
        i += 1
    return re.compile(f"(?:{''.join(parts)})(?:[-/].*)?", re.IGNORECASE | re.DOTALL)


def _matcher(scope: Scope, halls: HallIndex):
    """A predicate over :class:`AlertFacts` for ``scope`` (its filters included)."""
    if scope.kind == "entity":
        regex = glob_regex(scope.value)
        test = lambda a: regex.fullmatch(a.entity_name) is not None  # noqa: E731
    elif scope.kind == "group":
        test = lambda a: a.group == scope.value  # noqa: E731
    else:
        test = lambda a: halls.hall(a.entity_kind, a.entity_id) == scope.value  # noqa: E731
    rule, metric = scope.rule, scope.metric
    return lambda a: (not rule or a.rule == rule) and (not metric or a.metric == metric) and test(a)


class MuteSet:
    """The silences and windows of a site, matched against alerts (see module docstring).

    Rules are ordered maintenance first, then the one ending last, so that the first active
    match is what an alert shows (and what Alertmanager is told).
    """

    def __init__(self, rules: list[MuteRule], halls: HallIndex) -> None:
        self.rules = sorted(rules, key=lambda r: (r.kind != "maintenance", -r.ends_at.timestamp(), r.id))
        self._tests = [_matcher(r.scope, halls) for r in self.rules]
        self._memo: dict[tuple[str, str], tuple[int, ...]] = {}

    def __len__(self) -> int:
        return len(self.rules)

    def matching(self, facts: AlertFacts) -> tuple[int, ...]:
        """Indices (into :attr:`rules`) of the rules whose scope covers the alert, at any time.

        Remembered per alert key and cause: a key names one rule on one entity, so its name,
        kind and metric are the key's.
        """
        found = self._memo.get((facts.key, facts.group))
        return found if found is not None else self._match(facts)

    def _match(self, facts: AlertFacts) -> tuple[int, ...]:
        found = tuple(i for i, test in enumerate(self._tests) if test(facts))
        if len(self._memo) >= MAX_CACHED_MATCHES:
            self._memo.clear()
        self._memo[(facts.key, facts.group)] = found
        return found

    def condition_mute(self, c, at: datetime) -> MuteRule | None:
        """:meth:`mute_of` for a :class:`~ingest.live.alert_rules.Condition`; its facts are built only when the
        match is not remembered (the tick's path: most conditions are)."""
        if not self.rules:
            return None
        found = self._memo.get((c.key, c.group_key))
        if found is None:
            found = self._match(condition_facts(c))
        return self._first_active(found, at)

    def _first_active(self, found: tuple[int, ...], at: datetime) -> MuteRule | None:
        """The first of rules ``found`` active at ``at``: windows come first in :attr:`rules`."""
        for i in found:
            if self.rules[i].active(at):
                return self.rules[i]
        return None

    def mutes(self, facts: AlertFacts, at: datetime) -> tuple[MuteRule | None, MuteRule | None]:
        """The window and the silence muting the alert at ``at`` (each None when none does)."""
        window = silence = None
        for i in self.matching(facts):
            rule = self.rules[i]
            if not rule.active(at):
                continue
            if rule.kind == "maintenance":
                window = window or rule
            else:
                silence = silence or rule
        return window, silence

    def mute_of(self, facts: AlertFacts, at: datetime) -> MuteRule | None:
        """What mutes the alert at ``at``: its maintenance window, else its silence, else None."""
        return self._first_active(self.matching(facts), at) if self.rules else None


def condition_facts(c) -> AlertFacts:
    """The :class:`AlertFacts` of an :class:`ingest.live.alert_rules.Condition`."""
    return AlertFacts(c.key, c.group_key, c.entity_kind, c.entity_id, c.entity_name, c.metric)


def alert_facts(a: dict) -> AlertFacts:
    """The :class:`AlertFacts` of an alert dict (:func:`ingest.live.alerts.alert_dict`)."""
    key = str(a.get("key") or a.get("id") or "")
    entity_id = a.get("entity_id")
    return AlertFacts(
        key,
        str(a.get("group") or key),
        str(a.get("entity_kind") or ""),
        int(entity_id) if isinstance(entity_id, (int, np.integer)) else -1,
        str(a.get("entity_name") or ""),
        str(a.get("metric") or ""),
    )


def annotate(alerts: list[dict], mutes: MuteSet, now: datetime) -> list[dict]:
    """Set each alert's ``maintenance`` and ``silence`` (:meth:`MuteRule.as_dict`, or None) at ``now``, in place."""
    for alert in alerts:
        window = silence = None
        if mutes.rules and alert.get("cleared_at") is None:
            window, silence = mutes.mutes(alert_facts(alert), now)
        alert["maintenance"] = window.as_dict() if window else None
        alert["silence"] = silence.as_dict() if silence else None
    return alerts
