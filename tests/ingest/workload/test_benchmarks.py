"""The fleet benchmarks run and read RAPS's report (the figures themselves come from ``clustertwin bench``)."""

from __future__ import annotations

from ingest.workload import benchmarks

RAPS_TAIL = """Average Wait Time: 5710.32
Average Turnaround Time: 12688.32
Area Weighted Avg Response Time: 40682.55
Jobs Completed: 9921
	User time (seconds): 304.07
	System time (seconds): 8.01
	Elapsed (wall clock) time (h:mm:ss or m:ss): 14:33.46
	Maximum resident set size (kbytes): 6213780
"""


def test_raps_log_is_read():
    got = benchmarks.parse_raps_log(RAPS_TAIL)
    assert got["mean_wait_s"] == 5710.32 and got["mean_turnaround_s"] == 12688.32
    assert got["wall_s"] == 14 * 60 + 33.46 and got["peak_rss_kb"] == 6213780 and got["cpu_user_s"] == 304.07


def test_raps_bench_says_what_it_needs(monkeypatch):
    monkeypatch.delenv("CLUSTERTWIN_RAPS_SWF", raising=False)
    assert "CLUSTERTWIN_RAPS_SWF" in benchmarks.fleet_raps()["skipped"]


def test_pass_bench_runs_on_a_small_queue():
    out = benchmarks.fleet_pass(pending=300, repeat=1)
    assert out["pending_count"] > 0 and out["pass_best_ms"] > 0
