"""Every recorded Slurm output of Meta's research clusters (shared fixtures ``slurm-meta-gcm/``).

Where the fixture has an ``*-expected.*`` file (GCM's own parse), the result is checked
against it; for ``squeue`` and ``sinfo`` GCM keeps its expectations in its test code
(gcm/tests/test_slurm.py @ 1b7bde9), and the values below are those.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from ingest.sources import slurm_acct, slurm_text
from ingest.sources.slurm_records import JOB_STATES, SlurmCounts


@pytest.fixture(scope="module")
def gcm(fixtures_dir):
    return fixtures_dir / "slurm-meta-gcm"


def test_squeue_with_hash_separators(gcm):
    counts = SlurmCounts()
    jobs = slurm_text.parse_squeue_text((gcm / "sample-squeue-output.txt").read_text(), counts)
    assert counts.n_records == 5 and counts.n_malformed_records == 0
    by_display = {j.display_id: j for j in jobs}
    assert list(by_display) == ["45704744", "42953390_320", "42956774_3", "22783212", "42271120_[7-8%1]"]
    first = by_display["45704744"]
    assert (first.state, first.user, first.account, first.partition, first.qos) == (
        "running",
        "test_user",
        "account",
        "partition",
        "normal",
    )
    assert first.n_gpus_allocated == 2 and first.n_gpus_requested == 0  # TRES-PER-NODE N/A, TRES-ALLOC gres/gpu=2
    assert first.started_at == datetime(2025, 4, 10, 13, 44, 41, tzinfo=UTC) and first.time_limit_s == 14 * 86400
    task = by_display["42953390_320"]
    assert (task.job_id, task.array_job_id, task.array_task_id) == (42953598, 42953390, 320)
    big = by_display["42956774_3"]
    assert big.n_nodes_allocated == 32 and big.n_gpus_allocated == 256 and big.n_gpus_requested == 8 * 32
    assert big.node_names[:2] == ("node1281", "node1282") and big.node_names[-1] == "node1384"
    dep = by_display["22783212"]
    assert (dep.state, dep.reason, dep.depends_on) == ("pending", "DependencyNeverSatisfied", (22783211,))
    assert dep.dependency == "afterok:22783211_*(failed)" and dep.node_names == () and dep.started_at is None
    held = by_display["42271120_[7-8%1]"]
    assert (held.reason, held.array_tasks, held.n_gpus_requested, held.n_gpus_allocated) == (
        "JobArrayTaskLimit",
        "7-8%1",
        160,
        0,
    )


def test_squeue_times_in_the_controllers_zone_become_utc(gcm):
    from zoneinfo import ZoneInfo

    jobs = slurm_text.parse_squeue_text(
        (gcm / "sample-squeue-output.txt").read_text(), tz=ZoneInfo("America/Los_Angeles")
    )
    assert jobs[0].started_at == datetime(2025, 4, 10, 20, 44, 41, tzinfo=UTC)  # PDT is UTC-7


def test_sinfo_all_columns_with_repeated_headers(gcm):
    counts = SlurmCounts()
    nodes = slurm_text.parse_sinfo_text((gcm / "sample-sinfo-output.txt").read_text(), counts)
    assert counts.n_records == 4 and [n.name for n in nodes] == ["node0201", "node1537", "node4180"]
    drained = nodes[0]
    assert (drained.state, drained.reason, drained.reason_set_by) == ("drained", "replace", "root")
    assert set(drained.state_flags) == {"drain", "not_responding"}  # drained*
    assert drained.reason_set_at == datetime(2022, 6, 2, 5, 54, 34, tzinfo=UTC)
    assert (nodes[1].state, nodes[1].n_gpus_configured, nodes[1].n_cpus_allocated) == ("allocated", 8, 80)
    assert nodes[2].n_gpus_configured == 2 and nodes[2].gpu_type == "gen"


def test_sinfo_structured_fields_match_gcm(gcm):
    fields = ("nodelist", "gres", "gresused", "cpus", "cpusstate", "statelong", "partitionname")
    nodes = slurm_text.parse_sinfo_text((gcm / "sinfo-output-for-structured.txt").read_text(), fields=fields)
    # GCM's SinfoNode list: name, state, alloc_cpus; GPUs used from gres_used
    expected = [
        ("node1074", "idle", 0, 0),
        ("node1221", "allocated", 256, 8),
        ("node1492", "mixed", 64, 8),
        ("node1814", "mixed", 80, 8),
        ("node2002", "mixed", 80, 8),
        ("node2351", "mixed", 96, 8),
        ("node2578", "mixed", 96, 8),
        ("node2626", "idle", 0, 0),
        ("node2654", "drained", 0, 0),
        ("node2757", "mixed", 96, 8),
    ]
    assert [(n.name, n.state, n.n_cpus_allocated, n.n_gpus_allocated) for n in nodes] == expected
    assert all(n.n_gpus_configured == 8 and n.gpu_type == "ampere" and n.partitions == ("learn",) for n in nodes)
    assert "maintenance" in nodes[8].state_flags  # drained$: a maintenance reservation


def test_scontrol_partitions_match_gcm(gcm):
    parts = slurm_text.parse_scontrol_partitions((gcm / "sample-scontrol-output.txt").read_text())
    assert [p.name for p in parts] == ["partition1", "partition2", "partition3"]
    p1, p2, p3 = parts
    assert (p1.n_gpus, p1.n_cpus, p1.n_nodes, p1.qos, p1.default_flag, p1.priority_tier) == (
        22384,
        251200,
        3140,
        "qos1",
        1,
        10,
    )
    assert len(p1.node_names) == 3140 and p1.max_time_s == 3 * 86400 and p1.preempt_mode == "requeue"
    assert (p2.max_nodes_per_job_count, p2.priority_tier, p2.qos, p2.n_nodes, len(p2.node_names)) == (
        64,
        25,
        "",
        1469,
        1469,
    )
    assert p3.preempt_mode == "off" and p1.max_nodes_per_job_count is None


def test_scontrol_partitions_large(gcm):
    parts = slurm_text.parse_scontrol_partitions((gcm / "sample-scontrol-output-large.txt").read_text())
    assert len(parts) == 8 and all(len(p.node_names) == p.n_nodes for p in parts)
    assert parts[0].n_gpus == 10864


def test_scontrol_config(gcm):
    cfg = slurm_text.parse_scontrol_config((gcm / "sample-scontrol-show-config-output.txt").read_text())
    assert cfg["AccountingStorageType"] == "accounting_storage/slurmdbd"
    assert cfg["AccountingStoragePort"] == "6819" and cfg["ClusterName"] == "cluster_name"
    assert cfg["SlurmctldHost[1]"] == "h4slurmdb" and cfg["JobCompType"] == "jobcomp/none"
    assert cfg["SLURM_VERSION"] == "23.02.2" and cfg["PowerPlugin"] == ""
    assert not any(k.startswith("Configuration") for k in cfg)


@pytest.mark.parametrize(
    "name", ["sample-sacct-one-multiline", "sample-sacct-fake-line-break", "sample-sacct-multiple-multiline"]
)
def test_sacct_multiline_records_joined_as_gcm_does(gcm, name):
    lines = (gcm / f"{name}.txt").read_text().splitlines(keepends=True)
    expected = (gcm / f"{name}-expected.txt").read_text().strip().split("\n")
    assert list(slurm_acct.sacct_lines(lines, "|#")) == expected
    counts = SlurmCounts()
    jobs = slurm_acct.parse_sacct((gcm / f"{name}.txt").read_bytes(), counts)
    assert counts.n_malformed_records == 0 and jobs and all(j.state for j in jobs)
    requeued = [j for j in jobs if j.state == "requeued"]
    assert requeued and requeued[0].n_gpus_allocated == 256 and len(requeued[0].node_names) == 32


def test_sacct_midnight_window_drops_what_ended_after_it(gcm):
    rows = slurm_acct.sacct_rows(
        (gcm / "sample-sacct-output-midnight-edge-case-small.txt").read_text(),
        window_end=datetime(2021, 4, 7, 23, 59, 59, tzinfo=UTC),
    )
    expected = (gcm / "sample-sacct-output-midnight-edge-case-small-expected.txt").read_text().strip().split("\n")
    assert [f"{r['JobID']}|{r['State']}" for r in rows] == expected[1:]


def test_sacct_midnight_large(gcm):
    end = datetime(2021, 4, 7, 23, 59, 59, tzinfo=UTC)
    text = (gcm / "sample-sacct-output-midnight-edge-case.txt").read_text()
    rows = slurm_acct.sacct_rows(text, window_end=end)
    assert rows and all("2021-04-08" not in r.get("End", "") for r in rows)
    assert "2021-04-08" in text
    jobs = slurm_acct.parse_sacct(text, window_end=end)
    states = {j.state for j in jobs}
    assert states <= set(JOB_STATES) - {"unknown"} and {"cancelled", "out_of_memory", "requeued"} <= states


def test_sacct_invalid_utf8_keeps_every_record(gcm):
    counts = SlurmCounts()
    rows = slurm_acct.sacct_rows((gcm / "sample-sacct-output-invalid-utf8.txt").read_bytes(), counts=counts)
    assert len(rows) == 11 and counts.n_malformed_records == 0  # GCM: 11 payloads with errors=replace
    assert any("\ufffd" in v for r in rows for v in r.values())
    jobs = slurm_acct.parse_sacct((gcm / "sample-sacct-output-invalid-utf8.txt").read_bytes())
    assert [j.job_id for j in jobs] == sorted({j.job_id for j in jobs})


def test_sacct_invalid_line_is_counted_and_skipped(gcm):
    counts = SlurmCounts()
    rows = slurm_acct.sacct_rows((gcm / "sample-sacct-output-with-invalid-lines.txt").read_text(), counts=counts)
    assert rows == [] and counts.n_malformed_records == 1


@pytest.mark.parametrize(
    "name, n_rows",
    [("sample-sacct-output", 68), ("sample-sacct-running-output", 10), ("sample-sacct-running-output-large", 5040)],
)
def test_sacct_step_records_parse_and_are_skipped_as_steps(gcm, name, n_rows):
    counts = SlurmCounts()
    text = (gcm / f"{name}.txt").read_bytes()
    assert len(slurm_acct.sacct_rows(text)) == n_rows
    jobs = slurm_acct.parse_sacct(text, counts)
    assert jobs == [] and counts.n_skipped_steps == n_rows and counts.n_malformed_records == 0


def test_sacctmgr_qos_rows_and_records(gcm):
    rows, qos = slurm_acct.parse_sacctmgr_qos((gcm / "sample-sacctmgr-qos.txt").read_text())
    assert rows == json.loads((gcm / "sample-sacctmgr-qos-expected.json").read_text())
    by = {q.name: q for q in qos}
    assert (by["normal2"].group_gpus_limit_count, by["normal2"].per_user_gpus_limit_count) == (8192, 1024)
    assert by["normal3"].priority == 100 and by["normal3"].preempt == ("lowest",)
    assert by["normal1"].group_gpus_limit_count is None and by["normal1"].flags == ()
    assert by["normal5"].group_gpus_limit_count == 512 and by["normal2"].flags == ("overpartqos",)


def test_sacctmgr_users_rows_and_accounts(gcm):
    rows, accounts = slurm_acct.parse_sacctmgr_users((gcm / "sample-sacctmgr-user-info.txt").read_text())
    assert rows == json.loads((gcm / "sample-sacctmgr-user-expected.json").read_text())
    by = {a.name: a for a in accounts}
    assert set(by) == {"everyone", "test_account1", "test_account2", "fair-sc-researchers", "nuclide"}
    assert by["test_account2"].qos == ("normal", "lowest") and by["test_account1"].default_qos == "normal"
    assert all(a.users == ("test_user1",) for a in accounts)
    assert (gcm / "sample-sacctmgr-user.txt").read_text().split() == ["test_user1"]
