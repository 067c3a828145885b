"""Columnar frame storage on SQLite and a real PostgreSQL."""

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from sqlalchemy.exc import IntegrityError

from ingest.store.db import open_database
from ingest.store.frames import FrameError, FrameLayout, FrameStore

T0 = datetime(2024, 7, 22, 9, 20, tzinfo=UTC)
LAYOUT = FrameLayout("gpu", ("gpu_temp_c", "gpu_power_w"), n_entities=1000, block_size=128)


def frame(t: int) -> np.ndarray:
    ids = np.arange(1000)
    return np.stack([40.0 + ids % 50 + t, 100.0 + ids + 10 * t]).astype(np.float32)


@pytest.fixture
def store(db_url):
    engine = open_database(db_url)
    yield FrameStore(engine, "demo", [LAYOUT])
    engine.dispose()


def test_window_of_some_entities_reads_back_exactly_what_was_written(store):
    for t in range(5):
        store.write_frame(T0 + timedelta(seconds=t), {"gpu": frame(t)})
    ids = np.array([5, 127, 128, 999])  # straddles blocks, includes the short last block
    ts, values = store.read_window("gpu", ids, T0 + timedelta(seconds=1), T0 + timedelta(seconds=3))
    assert ts.tolist() == [np.datetime64(T0.replace(tzinfo=None) + timedelta(seconds=s), "ms") for s in (1, 2, 3)]
    assert values.shape == (3, 2, 4)
    for i, t in enumerate((1, 2, 3)):
        np.testing.assert_array_equal(values[i], frame(t)[:, ids])
    ts, power = store.read_window("gpu", ids, T0, T0 + timedelta(seconds=10), fields=("gpu_power_w",))
    np.testing.assert_array_equal(power[:, 0, 0], [105.0, 115.0, 125.0, 135.0, 145.0])
    assert store.latest_ts("gpu") == T0 + timedelta(seconds=4)


def test_nan_is_kept_as_missing_not_zero(store):
    f = frame(0)
    f[0, 10] = np.nan
    store.write_frame(T0, {"gpu": f})
    _, values = store.read_window("gpu", np.array([10]), T0, T0)
    assert np.isnan(values[0, 0, 0]) and values[0, 1, 0] == f[1, 10]


def test_bad_frames_are_refused_and_nothing_is_written(store):
    store.write_frame(T0, {"gpu": frame(0)})
    with pytest.raises(FrameError, match=r"shape \(2, 999\)"):
        store.write_frame(T0 + timedelta(seconds=1), {"gpu": frame(1)[:, :999]})
    with pytest.raises(FrameError, match="no layout for frame kind 'cdu'"):
        store.write_frame(T0 + timedelta(seconds=1), {"cdu": frame(1)})
    with pytest.raises(FrameError, match="timezone-aware"):
        store.write_frame(datetime(2024, 1, 1), {"gpu": frame(1)})
    with pytest.raises(IntegrityError):  # the same instant twice violates the primary key
        store.write_frame(T0, {"gpu": frame(9)})
    ts, values = store.read_window("gpu", np.arange(1000), T0 - timedelta(1), T0 + timedelta(1))
    assert len(ts) == 1
    np.testing.assert_array_equal(values[0], frame(0))


def test_a_different_layout_for_the_same_site_is_refused(store):
    other = FrameLayout("gpu", ("gpu_temp_c",), n_entities=1000, block_size=128)
    with pytest.raises(FrameError, match="refusing to mix"):
        FrameStore(store.engine, "demo", [other])
    FrameStore(store.engine, "other-site", [other])  # another site may use it


def test_layouts_only_take_canonical_quantities():
    with pytest.raises(KeyError, match="gpu_temperature"):
        FrameLayout("gpu", ("gpu_temperature",), 10, 10)


def test_prune_before_deletes_only_older_chunks(store):
    for t in range(3):
        store.write_frame(T0 + timedelta(seconds=t), {"gpu": frame(t)})
    deleted = store.prune_before(T0 + timedelta(seconds=2))
    assert deleted == 2 * LAYOUT.n_blocks
    ts, _ = store.read_window("gpu", np.array([0]), T0, T0 + timedelta(seconds=5))
    assert len(ts) == 1


def test_shards_write_disjoint_blocks_that_together_make_the_frame(store):
    for i in range(3):
        store.write_frame(T0, {"gpu": frame(0)}, shard=(i, 3))
    _, values = store.read_window("gpu", np.arange(1000), T0, T0)
    np.testing.assert_array_equal(values[0], frame(0))
    with pytest.raises(FrameError, match="shard 3/3"):
        store.write_frame(T0, {"gpu": frame(0)}, shard=(3, 3))
