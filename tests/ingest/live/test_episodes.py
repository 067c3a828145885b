"""Episodes: minimum durations, clear holds, severity hysteresis, one alert per job, swing envelopes."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from ingest.live.alert_rules import Condition, SiteFacts, evaluate
from ingest.live.episodes import EpisodeFilter, SwingEnvelope, timing
from twin.engine.tick import TwinEngine
from twin.site.load import load_site

T0 = datetime(2024, 7, 22, 15, 0, tzinfo=UTC)


def cond(key: str, severity: str = "warning", message: str = "", value: float = 0.0) -> Condition:
    return Condition(key, severity, "twin", key.split(":")[1], int(key.split(":")[-1]), "x", "m", value, message)


def run(filt: EpisodeFilter, frames: list[list[Condition]], from_s: float = 0.0) -> list[list[Condition]]:
    """The filter's output for one frame of conditions per second from ``from_s``."""
    return [filt.update(T0 + timedelta(seconds=from_s + i), frame) for i, frame in enumerate(frames)]


def test_a_condition_raises_only_after_its_minimum_duration():
    for_s = timing("job_stalled").for_s
    stall = cond("job_stalled:job:0", "critical")
    # a checkpoint: stalled for 3 s, then running again — never an episode
    shown = run(EpisodeFilter(), [[stall]] * 3 + [[]] * 5)
    assert all(not s for s in shown)
    # a real stall raises once it held for its minimum duration, not a tick earlier
    shown = run(EpisodeFilter(), [[stall]] * int(for_s + 3))
    assert [bool(s) for s in shown] == [i >= for_s for i in range(int(for_s + 3))]


def test_an_episode_clears_only_after_its_hold_and_flapping_keeps_one_episode():
    filt = EpisodeFilter()
    hot = cond("gpu_hot:rack:3")
    t = timing("gpu_hot")
    frames = [[hot]] * int(t.for_s + 1)
    # flapping with a 6 s period (the training swing): present 3 s, absent 3 s
    frames += ([[hot]] * 3 + [[]] * 3) * 10
    shown = run(filt, frames)
    assert all(s == [hot] for s in shown[int(t.for_s) :]), "one episode through the swing"
    after = run(filt, [[]] * int(t.clear_s + 2), from_s=len(frames))
    gone_at = next(i for i, s in enumerate(after) if not s)
    assert t.clear_s - 4 <= gone_at <= t.clear_s + 1


def test_severity_rises_after_the_worse_one_held_and_falls_only_after_the_clear_hold():
    filt = EpisodeFilter()
    t = timing("loop_supply")
    warn = cond("loop_supply:loop:0", "warning", "≥ 2 K")
    crit = cond("loop_supply:loop:0", "critical", "≥ 5 K")
    run(filt, [[warn]] * int(t.for_s + 1))
    # a 1 s critical blip changes nothing, text included
    blip = filt.update(T0 + timedelta(seconds=100), [crit])
    blip = filt.update(T0 + timedelta(seconds=101), [warn])
    assert blip[0].severity == "warning" and blip[0].message == "≥ 2 K"
    shown = [filt.update(T0 + timedelta(seconds=110 + i), [crit]) for i in range(int(t.for_s) + 2)]
    assert shown[0][0].severity == "warning" and shown[-1][0].severity == "critical"
    assert shown[-1][0].message == "≥ 5 K"
    # back to warning for less than the clear hold: still critical
    down = [filt.update(T0 + timedelta(seconds=200 + i), [warn]) for i in range(int(t.clear_s) + 2)]
    assert down[0][0].severity == "critical" and down[-1][0].severity == "warning"


def test_a_stalled_job_is_not_also_slowed():
    filt = EpisodeFilter({"job_slowed:job:0", "job_stalled:job:0"})
    shown = filt.update(T0, [cond("job_slowed:job:0"), cond("job_stalled:job:0", "critical")])
    assert [c.key for c in shown] == ["job_stalled:job:0"]


def test_open_episodes_of_a_previous_leader_continue_at_once():
    filt = EpisodeFilter({"n1:power:4"})
    assert [c.key for c in filt.update(T0, [cond("n1:power:4")])] == ["n1:power:4"]
    assert filt.open_keys == {"n1:power:4"}


@pytest.fixture(scope="module")
def demo():
    state = load_site("demo")
    return state, TwinEngine(state).tick(1.0)


def test_rules_hold_an_open_episode_until_its_clear_threshold(demo):
    state, snap = demo
    frac = snap.load_frac.copy()
    frac[5] = 0.99  # below the raise threshold (1.0), above the clear one
    snap = replace(snap, load_frac=frac, power_n1_load_frac=np.minimum(snap.power_n1_load_frac, 0.5))
    assert "overload:power:5" not in {c.key for c in evaluate(state, snap)}
    held = evaluate(state, snap, SiteFacts(open_keys=frozenset({"overload:power:5"})))
    assert "overload:power:5" in {c.key for c in held}


def test_the_envelope_keeps_the_swing_peak_and_the_mean_load(demo):
    _, snap = demo
    env = SwingEnvelope(window_s=30.0)
    for i in range(12):
        high = i % 2 == 0
        frac = snap.load_frac * (1.05 if high else 0.95)
        seen = env.steady(
            replace(
                snap,
                ts=T0 + timedelta(seconds=i),
                load_frac=frac,
                facility_power_mw=100.0 if high else 90.0,
            )
        )
    np.testing.assert_allclose(seen.load_frac, snap.load_frac * 1.05)
    assert seen.facility_power_mw == pytest.approx(95.0)


def test_the_docs_list_every_rules_timings():
    """docs/alerts.md holds the table the code generates: a changed timing without the docs fails here."""
    from pathlib import Path

    from ingest.live.episodes import RULE_TIMING, timing_table

    docs = (Path(__file__).resolve().parents[3] / "docs" / "alerts.md").read_text(encoding="utf-8")
    assert timing_table() in docs, "regenerate the table in docs/alerts.md from ingest.live.episodes.timing_table()"
    assert all(f"| `{rule}` |" in docs for rule in RULE_TIMING)
