"""Slurm JSON of two releases read alike: a 22.05 capture and a 24.11 document built from the schema.

``data/slurm-22.05`` was captured from the real test cluster; ``data/slurm-24.11`` is the
same cluster re-shaped into data_parser v0.0.42 as Slurm 24.11.0's source defines it (its
README lists the differences).  Both must give the same jobs, nodes and partitions.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingest.sources import slurm_json
from ingest.sources.inventory import Inventory
from ingest.sources.slurm import SlurmTarget, read_slurm
from ingest.sources.slurm_records import SlurmCounts
from twin.site.load import load_site

DATA = Path(__file__).resolve().parents[1] / "data"
V22, V24 = DATA / "slurm-22.05", DATA / "slurm-24.11"
JOB_FIELDS = (
    "job_id",
    "name",
    "user",
    "account",
    "partition",
    "state",
    "reason",
    "array_job_id",
    "array_task_id",
    "array_tasks",
    "submitted_at",
    "started_at",
    "expected_start_at",
    "expected_end_at",
    "time_limit_s",
    "n_nodes_requested",
    "n_nodes_allocated",
    "n_gpus_requested",
    "n_gpus_allocated",
    "node_names",
    "depends_on",
    "priority",
)
NODE_FIELDS = (
    "state",
    "state_flags",
    "reason",
    "reason_set_at",
    "reason_set_by",
    "n_gpus_configured",
    "n_gpus_allocated",
)


def _jobs(path: Path):
    return {j.display_id: tuple(getattr(j, f) for f in JOB_FIELDS) for j in slurm_json.parse_jobs(path.read_text())}


def _nodes(path: Path):
    return {n.name: tuple(getattr(n, f) for f in NODE_FIELDS) for n in slurm_json.parse_nodes(path.read_text())}


def test_the_two_documents_differ_in_the_documented_ways():
    j22 = json.loads((V22 / "squeue.json").read_text())["jobs"][0]
    j24 = json.loads((V24 / "squeue.json").read_text())["jobs"][0]
    assert isinstance(j22["job_state"], str) and isinstance(j24["job_state"], list)
    assert isinstance(j22["time_limit"], int) and set(j24["time_limit"]) == {"set", "infinite", "number"}
    n24 = json.loads((V24 / "sinfo.json").read_text())
    assert "sinfo" in n24 and "nodes" in n24["sinfo"][0] and "state" in n24["sinfo"][0]["node"]


def test_jobs_read_alike():
    assert _jobs(V22 / "squeue.json") == _jobs(V24 / "squeue.json")


@pytest.mark.parametrize("doc24", ["nodes.json", "sinfo.json"])
def test_nodes_read_alike_from_per_node_and_grouped_documents(doc24):
    n22, n24 = _nodes(V22 / "sinfo.json"), _nodes(V24 / doc24)
    assert n22 == n24 and len(n22) == 32
    assert n22["h1-r01-k04-n3"][:3] == ("drained", ("drain",), "xid 79 on gpu3")


def test_sinfo_groups_give_each_node_its_partitions():
    nodes = {n.name: n for n in slurm_json.parse_nodes((V24 / "sinfo.json").read_text())}
    assert nodes["spare1"].partitions == ("debug",) and nodes["h1-r01-k01-n0"].partitions == ("train",)


def test_partitions_read_alike_from_text_and_nested_json():
    text = read_slurm(SlurmTarget(mode="recorded", path=str(V22))).snapshot.partitions
    nested = slurm_json.parse_partitions((V24 / "partitions.json").read_text())
    keys = ("name", "state", "node_names", "max_time_s", "priority_tier", "n_nodes", "n_cpus")
    assert [tuple(getattr(p, k) for k in keys) for p in text] == [tuple(getattr(p, k) for k in keys) for p in nested]


@pytest.mark.parametrize("directory", [V22, V24])
def test_recorded_directory_as_a_source(directory):
    inventory = Inventory.from_site(load_site("demo"))
    result = read_slurm(SlurmTarget(mode="recorded", path=str(directory)), inventory)
    assert result.ok, result.error
    snap = result.snapshot
    assert snap.slurm_version.startswith(directory.name.split("-")[1])
    assert snap.counts.n_unknown_hosts == 2 and len(snap.nodes) == 30
    assert snap.jobs_by_state()["pending"] >= 3 and snap.nodes_by_state()["drained"] == 1
    assert result.warnings == []


def test_a_release_not_checked_is_read_with_one_warning(tmp_path):
    doc = json.loads((V24 / "squeue.json").read_text())
    doc["meta"]["slurm"]["release"] = "26.05.1"
    (tmp_path / "squeue.json").write_text(json.dumps(doc))
    (tmp_path / "sinfo.json").write_text((V24 / "sinfo.json").read_text())
    result = read_slurm(SlurmTarget(mode="recorded", path=str(tmp_path)))
    assert result.ok and len(result.snapshot.jobs) == 9
    assert result.warnings == [
        "Slurm 26.05.1: not a release this reader was checked against (22.05, 23.02, 23.11, 24.05, 24.11); "
        "read by field names"
    ]


def test_entries_without_ids_are_counted_and_the_rest_kept():
    doc = json.loads((V22 / "squeue.json").read_text())
    doc["jobs"][0] = {"name": "no id"}
    doc["jobs"].append("not an object")
    counts = SlurmCounts()
    jobs = slurm_json.parse_jobs(doc, counts)
    assert len(jobs) == 8 and counts.n_malformed_records == 2 and counts.n_records == 10


@pytest.mark.parametrize(
    "text, message",
    [
        ("not json", "not JSON"),
        ("[1, 2]", "squeue JSON: expected a JSON object, got list"),
        ('{"meta": {}, "jobs": {"a": 1}}', "squeue JSON: no 'jobs' list in the document (keys: jobs, meta)"),
        (
            '{"errors": [{"error": "Invalid user", "source": "auth"}], "jobs": []}',
            "Slurm answered with an error: Invalid user (auth)",
        ),
    ],
)
def test_documents_that_are_not_squeue_json_fail_in_one_line(text, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        slurm_json.parse_jobs(text)


def _keys(obj, out: set[str]) -> set[str]:
    if isinstance(obj, dict):
        for key, value in obj.items():
            out.add(key)
            if not key.endswith("_by_state"):  # keyed by state names
                _keys(value, out)
    elif isinstance(obj, list):
        for item in obj:
            _keys(item, out)
    return out


def test_every_json_field_is_in_the_glossary(fixtures_dir):
    from ingest.sources import slurm_acct
    from ingest.sources.slurm_records import record_json, snapshot_json
    from twin.quantities import BY_NAME, NOT_QUANTITIES

    result = read_slurm(SlurmTarget(mode="recorded", path=str(V22)), Inventory.from_site(load_site("demo")))
    doc = {"source": "", "target": "", "ok": True, "error": "", "warnings": [], **snapshot_json(result.snapshot)}
    gcm = fixtures_dir / "slurm-meta-gcm"
    doc["qos"] = [
        record_json(q) for q in slurm_acct.parse_sacctmgr_qos((gcm / "sample-sacctmgr-qos.txt").read_text())[1]
    ]
    doc["accounts"] = [
        record_json(a) for a in slurm_acct.parse_sacctmgr_users((gcm / "sample-sacctmgr-user-info.txt").read_text())[1]
    ]
    assert doc["qos"] and doc["accounts"] and doc["partitions"] and doc["jobs"] and doc["nodes"]
    assert sorted(k for k in _keys(doc, set()) if k not in BY_NAME and k not in NOT_QUANTITIES) == []
