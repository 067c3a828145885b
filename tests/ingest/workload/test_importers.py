"""The workload importers over every shared fixture, Meta's own parses, bad rows and bad files."""

from __future__ import annotations

from datetime import datetime

import pytest

from ingest.workload import gavel, helios, sacct, swf, tiresias
from ingest.workload.common import WorkloadInputError
from ingest.workload.ctfile import read_ct, write_parquet

META = "slurm-meta-gcm"


@pytest.mark.parametrize(
    "broken, expected",
    [
        ("sample-sacct-one-multiline", "sample-sacct-one-multiline-expected"),
        ("sample-sacct-fake-line-break", "sample-sacct-fake-line-break-expected"),
        ("sample-sacct-multiple-multiline", "sample-sacct-multiple-multiline-expected"),
        ("sample-sacct-one-multiline-expected", "sample-sacct-one-multiline-expected"),
    ],
)
def test_sacct_records_join_broken_lines_as_meta_does(fixtures_dir, broken, expected):
    got = "".join(sacct.records((fixtures_dir / META / f"{broken}.txt").read_text()))
    assert got == (fixtures_dir / META / f"{expected}.txt").read_text()


def test_sacct_end_filter_matches_metas_midnight_parse(fixtures_dir):
    lines = sacct.records((fixtures_dir / META / "sample-sacct-output-midnight-edge-case-small.txt").read_text())
    got = sacct.end_between(lines, datetime(2021, 4, 7), datetime(2021, 4, 7, 23, 59, 59))
    assert got == (
        fixtures_dir / META / "sample-sacct-output-midnight-edge-case-small-expected.txt"
    ).read_text().strip().split("\n")


@pytest.mark.parametrize(
    "name, rows, jobs, skipped",
    [
        ("sample-sacct-one-multiline.txt", 4, 3, 0),
        ("sample-sacct-multiple-multiline.txt", 6, 3, 0),
        ("sample-sacct-fake-line-break.txt", 4, 3, 0),
        ("sample-sacct-output-invalid-utf8.txt", 11, 2, 1),  # 11 records, as Meta's parser finds; one CPU job
        ("sample-sacct-output-with-invalid-lines.txt", 1, 0, 1),
        ("sample-sacct-output.txt", 68, 0, 1),  # steps of one CPU job
        ("sample-sacct-running-output.txt", 10, 1, 0),
        ("sample-sacct-running-output-large.txt", 5040, 1, 0),
    ],
)
def test_sacct_imports_every_dump(fixtures_dir, name, rows, jobs, skipped):
    res = sacct.read_sacct(fixtures_dir / META / name)
    assert (res.rows_count, len(res.jobs), res.skipped_count) == (rows, jobs, skipped)


def test_sacct_job_fields(fixtures_dir):
    res = sacct.read_sacct(fixtures_dir / META / "sample-sacct-one-multiline.txt")
    big = max(res.jobs, key=lambda j: j.n_gpus)
    assert big.n_gpus == 2048 and big.team == "project" and big.run_s > 0
    assert "invalid UTF-8" in " ".join(
        sacct.read_sacct(fixtures_dir / META / "sample-sacct-output-invalid-utf8.txt").notes
    )


def test_sacct_refuses_a_file_without_the_fields(fixtures_dir):
    with pytest.raises(WorkloadInputError, match="no Submit field"):
        sacct.read_sacct(fixtures_dir / META / "sample-sacct-output-midnight-edge-case.txt")


@pytest.mark.slow
def test_gavel_directory_one_team_per_file(fixtures_dir):
    res = gavel.read_gavel_dir(fixtures_dir / "job-traces" / "gavel-msr-seed0")
    assert len(res.jobs) == 15264 and res.skipped_count == 0
    assert len({j.team for j in res.jobs}) == 15
    first = res.jobs[0]
    assert first.run_s == pytest.approx(95121 / 5.4461)  # Transformer (batch size 128) on one V100


def test_tiresias_trace(fixtures_dir):
    res = tiresias.read_tiresias(fixtures_dir / "job-traces" / "tiresias-60_job.csv")
    assert len(res.jobs) == 60 and res.jobs[1].n_gpus == 8 and res.jobs[1].submit_s == 30


def test_helios_quotas_over_time(fixtures_dir):
    res = helios.read_helios_quotas(fixtures_dir / "job-traces" / "helios-venus-vc-gpus.csv")
    first_day = [q for q in res.quotas if q[0] == 0.0]
    assert len(first_day) == 25 and ("vcEwI" in {q[1] for q in first_day})
    assert any(q[0] > 0 for q in res.quotas)  # quotas change over the 181 days


def test_swf_rows_descriptor_and_bad_rows(tmp_path):
    p = tmp_path / "t.swf"
    p.write_text(
        "; Version: 2.2\n"
        "1 10 0 100 2 -1 -1 2 300 -1 1 7 3 -1 1 1 -1 -1 -1 -1 syn:excl:2x1\n"
        "2 20 0 50 4 -1 -1 4 -1 -1 0 8 3 -1 1 1 -1 -1\n"
        "3 30 0 -1 4 -1 -1 4 100 -1 1 8 3 -1 1 1 -1 -1\n"
        "4 40 0 50\n"
    )
    res = swf.read_swf(p)
    assert [(j.job_id, j.submit_s, j.n_gpus, j.wall_s, j.end_state) for j in res.jobs] == [
        ("1", 0.0, 16, 300.0, "completed"),
        ("2", 10.0, 32, 50.0, "failed"),
    ]
    assert res.skipped_count == 2 and "not a job that ran" in res.skipped_reasons[0]


def test_reads_are_capped_and_bad_files_are_one_line_errors(tmp_path, fixtures_dir):
    with pytest.raises(WorkloadInputError, match="file not found"):
        swf.read_swf(tmp_path / "missing.swf")
    with pytest.raises(WorkloadInputError, match="is a directory"):
        swf.read_swf(tmp_path)
    with pytest.raises(WorkloadInputError, match="size cap"):
        sacct.read_sacct(fixtures_dir / META / "sample-sacct-running-output-large.txt", max_bytes=1000)
    res = tiresias.read_tiresias(fixtures_dir / "job-traces" / "tiresias-60_job.csv", max_rows=10)
    assert len(res.jobs) == 10 and "row cap" in res.notes[0]


def test_ct_toml_and_parquet_round_trip(tmp_path):
    p = tmp_path / "w.toml"
    p.write_text(
        '[workload]\nname = "x"\n[[teams]]\nname = "a"\nnominal_gpus = 16\ncohort = "lab"\n'
        '[[jobs]]\nid = "j1"\nteam = "a"\nuser = "u"\nsubmit_s = 0\ngpus = 8\nwall_s = 100\nrun_s = 50\nkind = "eval"\n'
        '[[jobs]]\nid = "j2"\nteam = "a"\nuser = "u"\nsubmit_s = 5\ngpus = 16\nwall_s = 100\nrun_s = 50\nafter_ok = ["j1"]\n'
        '[[jobs]]\nid = "bad"\nteam = "a"\nuser = "u"\nsubmit_s = 5\ngpus = 0\nwall_s = 100\nrun_s = 50\n'
    )
    res, quotas = read_ct(p)
    assert [j.job_id for j in res.jobs] == ["j1", "j2"] and res.skipped_count == 1
    assert quotas[0].nominal_gpus == 16 and res.jobs[1].after_ok == ("j1",)
    out = tmp_path / "w.parquet"
    write_parquet(res.jobs, out)
    back, _ = read_ct(out)
    assert [(j.job_id, j.n_gpus, j.run_s) for j in back.jobs] == [(j.job_id, j.n_gpus, j.run_s) for j in res.jobs]


def test_ct_job_file_must_match_its_gpus(tmp_path):
    p = tmp_path / "w.toml"
    p.write_text(
        '[[jobs]]\nid = "pt"\nteam = "a"\nuser = "u"\nsubmit_s = 0\ngpus = 8\nwall_s = 10\nrun_s = 5\n'
        'job_file = "llama3-405b-16k"\n'
    )
    res, _ = read_ct(p)
    assert not res.jobs and "16384 GPUs" in res.skipped_reasons[0]
