"""The plan's fast availability profile gives the fleet profile's answers (random takes and queries)."""

from __future__ import annotations

import math

import numpy as np

from ingest.slurm.plan import PlanProfile
from twin.fleet.backfill import Profile


def test_plan_profile_answers_as_the_fleet_profile():
    rng = np.random.default_rng(7)
    for _ in range(40):
        n = int(rng.integers(1, 30))
        times = np.round(rng.uniform(0, 100, n), 1)
        times[rng.random(n) < 0.1] = math.inf  # nodes that never come back
        nodes = rng.integers(1, 5, n)
        ref, fast = Profile.from_releases(0.0, times, nodes), PlanProfile.from_releases(0.0, times, nodes)
        total = int(nodes[np.isfinite(times)].sum())
        for _ in range(60):
            release, dur = float(rng.uniform(0, 120)), float(rng.uniform(0.5, 40))
            want = int(rng.integers(1, max(total, 1) + 2))
            a, b = ref.earliest(release, dur, want), fast.earliest(release, dur, want)
            assert a == b, (release, dur, want)
            if math.isfinite(a) and rng.random() < 0.7:
                ref.take(a, a + dur, want)
                fast.take(a, a + dur, want)
        assert (fast.free >= 0).all()


def test_plan_profile_grows_past_its_spare_room():
    prof = PlanProfile.from_releases(0.0, np.array([0.0]), np.array([2000]))
    for k in range(1500):
        prof.take(float(k), float(k) + 0.5, 1)
    assert prof.n > 2000 and prof.earliest(0.0, 1.0, 2000) == 1499.5
