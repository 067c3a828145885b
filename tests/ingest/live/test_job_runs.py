"""A GPU failure in the live twin runs through detection, drain and swap, restore and warm-up."""

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from ingest.live.runtime import build_hub
from twin.engine.snapshot import GPU_DOWN

T0 = datetime(2024, 7, 22, 15, 0, tzinfo=UTC)


@pytest.mark.slow
def test_an_xid_79_stalls_the_job_which_restarts_on_a_spare_and_counts_its_losses(tmp_path):
    hub = build_hub(
        "demo", f"sqlite:///{tmp_path / 'live.db'}", start=T0, faults=("xid:h1-r01-k02-n0/5@10=79",), record=False
    )
    run = hub.ticker.jobs.runs[0]
    t = run.timings
    phases, snaps = [], []
    total_s = int(10 + t.xid_detection_s + t.drain_swap_s + t.restore_s + t.warmup_s + 30)
    for i in range(total_s):
        snap = hub.step(T0 + timedelta(seconds=i))
        phases.append(snap.jobs[0].restart_phase)
        snaps.append(snap)
    job_before, job_after = snaps[5].jobs[0], snaps[-1].jobs[0]
    gpu = int(np.flatnonzero((hub.state.gpu_node == 8) & (hub.state.gpu_index == 5))[0])
    assert snaps[-1].gpu_state[gpu] == GPU_DOWN  # the failed GPU stays down …
    assert (
        job_after.restart_phase == "running" and job_after.tokens_per_s > 0.9 * job_before.tokens_per_s
    )  # … on a spare
    seen = [p for k, p in enumerate(phases) if k == 0 or p != phases[k - 1]]
    assert seen[:6] == ["running", "detecting", "draining", "restoring", "warming_up", "running"]
    stalled = [s.jobs[0] for s in snaps if s.jobs[0].restart_phase in ("detecting", "draining", "restoring")]
    assert stalled and all(j.tokens_per_s == 0 for j in stalled)
    expected_lost_s = 10 + t.xid_detection_s + t.drain_swap_s + t.restore_s + t.warmup_s / 2  # progress + stop + ramp
    assert abs(job_after.lost_work_s - expected_lost_s) <= 3.0
    assert job_after.interruptions_total == 1 and job_after.lost_tokens_count > 0
    timeline = hub.view.job_timeline(job_after.name)
    assert [e["phase"] for e in timeline][:5] == ["detecting", "draining", "restoring", "warming_up", "running"]
    assert timeline[0]["ts"] == T0 + timedelta(seconds=10)


@pytest.mark.slow
def test_the_whole_job_power_dips_while_it_restarts_and_surges_back(tmp_path):
    """The synthetic plant's job stops on the same cycle: the twin sees the site's IT load dip and recover."""
    hub = build_hub(
        "demo", f"sqlite:///{tmp_path / 'live.db'}", start=T0, faults=("xid:h1-r01-k02-n0/5@10=79",), record=False
    )
    t = hub.ticker.jobs.runs[0].timings
    it_mw = {}
    total_s = int(10 + t.xid_detection_s + t.drain_swap_s + t.restore_s + t.warmup_s + 30)
    for i in range(total_s):
        it_mw[i] = hub.step(T0 + timedelta(seconds=i)).it_power_mw
    before = np.mean([it_mw[i] for i in range(3, 9)])
    stopped = np.mean([it_mw[i] for i in range(int(10 + t.xid_detection_s + 5), int(10 + t.xid_detection_s + 60))])
    after = np.mean([it_mw[i] for i in range(total_s - 20, total_s)])
    assert stopped < 0.6 * before  # every GPU of the job near idle while it is stopped
    assert after > 0.9 * before  # back at training power on the spare
