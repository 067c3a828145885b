"""Alert episodes: conditions held for a minimum duration, cleared after a hold, severities with hysteresis.

The rules of :mod:`ingest.live.alert_rules` say what holds in one snapshot.  An operator
needs what holds over time: a condition becomes an **episode** (one alert, one id) only
after it held for its rule's ``for_s`` (as Prometheus' ``for:``), and the episode clears
only after the condition stayed away for ``clear_s`` (Prometheus' ``keep_firing_for``).
Its severity rises once the worse severity held for ``for_s`` and falls once the milder
one held for ``clear_s``; meanwhile the episode keeps its text, so a swing never rewrites
it.  A job is either stalled or slowed, never both: the stall wins.

:class:`SwingEnvelope` gives the rules quantities that do not flip with the training
swing: power loads as their envelope (peak over the window, what a breaker sees) and
facility load and CDU heat as their windowed mean.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np

from ingest.live.alert_rules import SEVERITY_RANK, Condition
from twin.engine.snapshot import Snapshot

# [E] a training step of a large job lasts about 6 s (the swing's period); 30 s holds five of
# them, so the envelope and the mean span whole swings and still follow a fault within 30 s
SWING_WINDOW_S = 30.0


@dataclass(frozen=True)
class RuleTiming:
    """How long a rule's condition must hold before it raises [s] and stay away before it clears [s]."""

    for_s: float
    clear_s: float


# [E] minimum durations: hard faults (a dead feed, a lost CDU, a down link, an XID) raise at
# once (2 s: two ticks); conditions a transient can cause wait longer than the transient —
# checkpoints and restarts stall a job for 1–3 s, a facility-water excursion ends over ~10 s
RULE_TIMING: dict[str, RuleTiming] = {
    "power_dead": RuleTiming(0.0, 10.0),
    "no_redundancy": RuleTiming(0.0, 10.0),
    "pump": RuleTiming(0.0, 10.0),
    "links_down": RuleTiming(0.0, 10.0),
    "xid": RuleTiming(0.0, 30.0),
    "source_down": RuleTiming(0.0, 30.0),
    "gpu_down": RuleTiming(2.0, 15.0),
    "job_stalled": RuleTiming(5.0, 15.0),
    "job_slowed": RuleTiming(15.0, 30.0),
    "cdu_over": RuleTiming(10.0, 30.0),
    "loop_supply": RuleTiming(3.0, 30.0),
    "gpu_hot": RuleTiming(5.0, 30.0),
    "overload": RuleTiming(3.0, 30.0),
    "n1": RuleTiming(30.0, 60.0),
    "headroom": RuleTiming(15.0, 60.0),
    # the generation checks judge the swing and the reserve as a whole, as the headroom rule does
    "gen_reserve": RuleTiming(30.0, 60.0),
    "gen_step": RuleTiming(15.0, 60.0),
    "gen_rejection": RuleTiming(15.0, 60.0),
    "gen_surge": RuleTiming(15.0, 60.0),
    "island_frequency": RuleTiming(15.0, 60.0),
    "grid_contract": RuleTiming(15.0, 60.0),
    "supply": RuleTiming(3.0, 30.0),
    "stale": RuleTiming(0.0, 10.0),
}
DEFAULT_TIMING = RuleTiming(5.0, 30.0)
MAX_TRACKED = 100_000  # conditions followed at once; beyond it the least urgent new ones wait


def timing(rule: str) -> RuleTiming:
    """The minimum duration and clear hold of ``rule``."""
    return RULE_TIMING.get(rule, DEFAULT_TIMING)


def timing_table() -> str:
    """Every rule's timings as a Markdown table (docs/alerts.md holds it; a test keeps them equal)."""
    rows = ["| rule | raises after [s] | clears after [s] |", "|---|---:|---:|"]
    rows += [f"| `{rule}` | {t.for_s:g} | {t.clear_s:g} |" for rule, t in RULE_TIMING.items()]
    rows.append(f"| any other | {DEFAULT_TIMING.for_s:g} | {DEFAULT_TIMING.clear_s:g} |")
    return "\n".join(rows)


def _worse(a: str, b: str) -> bool:
    return SEVERITY_RANK.get(a, 3) < SEVERITY_RANK.get(b, 3)


@dataclass
class _Track:
    """One condition followed over time: since when it holds, its episode's shown condition."""

    first_s: float  # the condition holds since [s, epoch]
    last_s: float  # it last held [s]
    latest: Condition  # as last evaluated
    shown: Condition | None = None  # the episode's condition (None: pending)
    candidate: str = ""  # a severity other than the shown one, held since candidate_s
    candidate_s: float = 0.0
    mildest: Condition | None = None  # the mildest condition seen while pending


class EpisodeFilter:
    """Conditions of successive ticks in, the conditions of open episodes out (see module docstring)."""

    def __init__(self, open_keys: set[str] | None = None) -> None:
        self._tracks: dict[str, _Track] = {}
        self._adopted = set(open_keys or ())  # episodes already open (a previous leader's): shown at once

    @property
    def open_keys(self) -> frozenset[str]:
        """Keys of the episodes open after the last update (the rules hold these to their clear thresholds)."""
        return frozenset(k for k, t in self._tracks.items() if t.shown is not None)

    @property
    def open_critical_keys(self) -> frozenset[str]:
        """Keys of the episodes open at critical severity."""
        return frozenset(k for k, t in self._tracks.items() if t.shown is not None and t.shown.severity == "critical")

    def update(self, ts: datetime, conditions: list[Condition]) -> list[Condition]:
        """The conditions of the episodes open at ``ts`` given the conditions that hold now."""
        now_s, adopted = ts.timestamp(), self._adopted
        seen = {c.key: c for c in conditions[:MAX_TRACKED]}
        for key, c in seen.items():
            track = self._tracks.get(key)
            if track is None:
                track = self._tracks[key] = _Track(now_s, now_s, c, mildest=c)
                if key in adopted:
                    track.shown = c
            else:
                track.last_s, track.latest = now_s, c
            self._advance(track, now_s)
        for key in [k for k, t in self._tracks.items() if k not in seen and self._expired(t, now_s)]:
            del self._tracks[key]
        self._adopted = set()
        return _one_per_job([t.shown for t in self._tracks.values() if t.shown is not None])

    @staticmethod
    def _expired(track: _Track, now_s: float) -> bool:
        """A condition gone: a pending one is forgotten at once, an episode after its clear hold."""
        return track.shown is None or now_s - track.last_s >= timing(track.latest.rule).clear_s

    def _advance(self, track: _Track, now_s: float) -> None:
        c, rule_timing = track.latest, timing(track.latest.rule)
        if track.shown is None:
            mildest = track.mildest or c
            if not _worse(c.severity, mildest.severity):
                mildest = track.mildest = c
            if now_s - track.first_s >= rule_timing.for_s:
                # raised at the mildest severity it held; a worse one must then hold on its own
                track.shown = replace(mildest, value=c.value, impact=c.impact, group=c.group)
                if c.severity != mildest.severity:
                    track.candidate, track.candidate_s = c.severity, now_s
            return
        shown = track.shown
        if c.severity == shown.severity:
            track.candidate = ""
            track.shown = c
            return
        if c.severity != track.candidate:
            track.candidate, track.candidate_s = c.severity, now_s
        hold = rule_timing.for_s if _worse(c.severity, shown.severity) else rule_timing.clear_s
        if now_s - track.candidate_s >= hold:
            track.shown, track.candidate = c, ""
        else:  # the episode keeps its severity and text; value and impact follow
            track.shown = replace(shown, value=c.value, impact=c.impact, group=c.group)


def _one_per_job(conditions: list[Condition]) -> list[Condition]:
    """A job stalled is not also slowed: drop the slowed episode of a stalled job."""
    stalled = {c.entity_id for c in conditions if c.rule == "job_stalled"}
    return [c for c in conditions if not (c.rule == "job_slowed" and c.entity_id in stalled)]


class SwingEnvelope:
    """Windowed views of the quantities the training swing moves (see module docstring)."""

    def __init__(self, window_s: float = SWING_WINDOW_S) -> None:
        self.window_s = window_s
        self._samples: deque[tuple[float, dict]] = deque()

    def steady(self, snap: Snapshot) -> Snapshot:
        """``snap`` with power loads at their envelope and facility load and CDU heat at their windowed mean."""
        now_s = snap.ts.timestamp()
        self._samples.append(
            (
                now_s,
                {
                    "load_frac": snap.load_frac,
                    "power_n1_load_frac": snap.power_n1_load_frac,
                    "feed_power_kw": snap.feed_power_kw,
                    "cdu_heat_kw": snap.cdu_heat_kw,
                    "facility_power_mw": snap.facility_power_mw,
                    "swing_amplitude_mw": snap.swing_amplitude_mw,
                },
            )
        )
        while self._samples and (self._samples[0][0] <= now_s - self.window_s or self._samples[0][0] > now_s):
            self._samples.popleft()
        samples = [s for _, s in self._samples]
        if len(samples) <= 1:
            return snap

        def stack(name: str) -> np.ndarray:
            shapes = {np.shape(s[name]) for s in samples}
            if len(shapes) != 1:  # the site changed shape: only the newest sample counts
                return np.asarray([samples[-1][name]])
            return np.asarray([s[name] for s in samples], dtype=float)

        return replace(
            snap,
            load_frac=_peak(stack("load_frac")),
            power_n1_load_frac=_peak(stack("power_n1_load_frac")),
            feed_power_kw=_peak(stack("feed_power_kw")),
            cdu_heat_kw=_mean(stack("cdu_heat_kw")),
            facility_power_mw=float(_mean(stack("facility_power_mw"))),
            swing_amplitude_mw=float(_peak(stack("swing_amplitude_mw"))),
        )


def _peak(samples: np.ndarray) -> np.ndarray:
    """Largest finite value over the samples (axis 0); NaN where none is finite."""
    return np.fmax.reduce(samples, axis=0)


def _mean(samples: np.ndarray) -> np.ndarray:
    """Mean of the finite values over the samples (axis 0); NaN where none is finite."""
    finite = np.isfinite(samples)
    count = finite.sum(axis=0)
    total = np.where(finite, samples, 0.0).sum(axis=0)
    return np.where(count > 0, total / np.maximum(count, 1), np.nan)
