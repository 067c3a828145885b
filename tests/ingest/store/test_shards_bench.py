"""The shards benchmark's machinery on the demo site: shard processes, CPU per tick, writes per tick."""

import pytest
from sqlalchemy import create_engine, text

from ingest.store.layouts import GPU_BLOCK
from ingest.store.shards_bench import run_shards
from twin.site.load import load_site

pytestmark = pytest.mark.postgres


def test_two_demo_shards_write_every_block_once_a_tick(postgres_url):
    engine = create_engine(postgres_url)
    with engine.begin() as conn:
        conn.execute(text("DROP SCHEMA public CASCADE; CREATE SCHEMA public"))
    engine.dispose()
    ticks = 2
    report = run_shards("demo", postgres_url, 2, ticks)
    demo = load_site("demo")
    gpu_blocks = -(-demo.n_gpus // GPU_BLOCK)
    assert report["shards_count"] == 2 and report["gpus_count"] == demo.n_gpus == report["gpus_powered_count"]
    assert report["db_chunk_rows_per_tick"] == gpu_blocks + 4  # GPU blocks split by shard, cdu/rack/power/source once
    assert report["frame_raw_bytes"] == 4 * (
        7 * demo.n_gpus + 6 * demo.n_cdus + demo.n_racks + 2 * demo.n_power + 2 * demo.n_sources
    )
    assert 0 < report["cpu_s_per_shard_tick_median"] <= report["cpu_s_per_shard_tick_max"]
    assert report["db_wal_bytes_per_tick"] > 0 and report["live_state_bytes"] > 0  # shard 0 published
