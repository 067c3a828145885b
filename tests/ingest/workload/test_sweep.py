"""Fleet sweeps on a real Dask cluster started here (127.0.0.1), and on local processes: the same rows."""

from __future__ import annotations

import pytest

from ingest.workload import sweep
from ingest.workload.common import WorkloadInputError

distributed = pytest.importorskip("distributed")

SPEC = sweep.SweepSpec(
    site="demo",
    generate="llm-lab:jobs=600,n_pretrain=0",
    days=0.1,
    grid=sweep.parse_grid(["backfill=none,easy", "power_margin_frac=0.01,0.6"]),
    failures=False,
)


def _figures(rows):
    return [{k: v for k, v in r.items() if k != "sim_wall_s"} for r in rows]


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    ) as c:
        yield c


@pytest.mark.slow
def test_a_dask_sweep_returns_every_point_in_grid_order_as_one_process_computes_it(cluster):
    rows = sweep.run_sweep(SPEC, scheduler=cluster.scheduler_address)
    assert [r["point"] for r in rows] == [
        {"backfill": "none", "power_margin_frac": "0.01"},
        {"backfill": "none", "power_margin_frac": "0.6"},
        {"backfill": "easy", "power_margin_frac": "0.01"},
        {"backfill": "easy", "power_margin_frac": "0.6"},
    ]
    assert _figures(rows) == _figures([sweep.run_point(SPEC, p) for p in SPEC.points()])
    # a budget of 40 % of the generation holds jobs back: the site does less work, and they wait longer
    assert rows[1]["utilisation_frac"] < rows[0]["utilisation_frac"]
    assert rows[1]["mean_wait_s"] > rows[0]["mean_wait_s"]
    assert len(cluster.scheduler_info["workers"]) == 2
    assert "run_point" in cluster.scheduler.task_prefixes  # the points ran as the cluster's tasks


@pytest.mark.slow
def test_local_processes_give_the_same_rows(cluster):
    dask_rows = sweep.run_sweep(SPEC, scheduler=cluster.scheduler_address)
    assert _figures(sweep.run_sweep(SPEC, processes=2)) == _figures(dask_rows)


@pytest.mark.parametrize(
    ("items", "message"),
    [
        (["backfill"], "--grid: expected KEY=V1,V2,…, got 'backfill'"),
        (["backfill=none", "backfill=easy"], "--grid: 'backfill' given twice"),
        (["bf_interval_s=" + ",".join(str(i) for i in range(1001))], "--grid: 1001 points; a sweep takes 1 … 1,000"),
    ],
)
def test_bad_grids_are_refused_in_one_line(items, message):
    with pytest.raises(WorkloadInputError) as exc:
        sweep.parse_grid(items)
    assert str(exc.value) == message


def test_an_unknown_policy_key_is_refused_before_any_task():
    bad = sweep.SweepSpec("demo", "llm-lab", 1.0, sweep.parse_grid(["lunch=1,2"]))
    with pytest.raises(WorkloadInputError, match="--grid: unknown policy key 'lunch'"):
        sweep.run_sweep(bad, processes=1)


@pytest.mark.slow
def test_the_command_writes_strict_json_with_listed_keys():
    import json
    import subprocess
    import sys

    from tests.conftest import REPO_DIR
    from tests.ingest.workload.test_whatif_cli import _keys
    from twin.quantities import BY_NAME, NOT_QUANTITIES

    cmd = [sys.executable, "-m", "twin.cli", "workload", "sweep", "--site", "demo", "--days", "0.05"]
    cmd += ["--generate", "llm-lab:jobs=100,n_pretrain=0", "--grid", "backfill=none,easy", "--processes", "1", "--json"]
    done = subprocess.run(cmd, cwd=REPO_DIR, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["points_count"] == 2 and [p["point"] for p in report["points"]] == [
        {"backfill": "none"},
        {"backfill": "easy"},
    ]
    assert sorted(k for k in _keys(report, set()) if k not in BY_NAME and k not in NOT_QUANTITIES) == []
