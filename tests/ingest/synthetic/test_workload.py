"""Synthetic training workload: compute/communication phases and synchronous checkpoints."""

import numpy as np
import pytest

from ingest.synthetic.workload import TrainingWorkload, job_util_frac

W = TrainingWorkload(
    step_time_s=10.0,
    compute_frac=0.8,
    busy_util_frac=0.95,
    comm_util_frac=0.2,
    checkpoint_interval_s=100.0,
    checkpoint_write_s=10.0,
)


def test_phases_follow_the_step():
    in_job = np.array([True, True, False])
    jitter = np.zeros(3)
    np.testing.assert_array_equal(job_util_frac(W, 3.0, in_job, jitter), [0.95, 0.95, 0.0])
    np.testing.assert_array_equal(job_util_frac(W, 9.0, in_job, jitter), [0.2, 0.2, 0.0])
    # a GPU running a little behind is still computing when the others communicate
    assert job_util_frac(W, 8.5, in_job, np.array([0.0, -0.1, 0.0]))[1] == 0.95


def test_checkpoint_stalls_every_gpu_at_the_end_of_the_interval():
    util = job_util_frac(W, 95.0, np.ones(4, bool), np.zeros(4))
    assert (util < W.comm_util_frac).all()
    assert (job_util_frac(W, 5.0, np.ones(4, bool), np.zeros(4)) == 0.95).all()


def test_mean_utilisation_is_the_compute_share():
    ts = np.arange(0.25, 90, 0.5)  # off the phase boundaries
    mean = np.mean([job_util_frac(W, t, np.ones(1, bool), np.zeros(1))[0] for t in ts])
    assert mean == pytest.approx(0.8 * 0.95 + 0.2 * 0.2, abs=0.01)


def test_invalid_timing_is_refused():
    with pytest.raises(ValueError, match="step_time_s"):
        TrainingWorkload(step_time_s=0.0)
