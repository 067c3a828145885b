"""The leader's published live state: what it holds, how it is stored, what a reader refuses."""

import json
import struct
import zlib
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from sqlalchemy import func, select

from ingest.live.runtime import build_hub
from ingest.store.livestate import MAGIC, LiveStateError, decode_state, encode_state, latest_seq, publish, read_latest
from ingest.store.models import LiveState

T0 = datetime(2024, 7, 22, 15, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def demo_state(tmp_path_factory):
    """A demo hub's live state after 3 ticks with a GPU down (its job restarting)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('ls') / 'twin.db'}"
    hub = build_hub("demo", url, start=T0, faults=("xid:h1-r01-k01-n0/0=79",), record=False)
    for i in range(3):
        hub.step(T0 + timedelta(seconds=i))
    return hub.publisher.live_state()


def test_a_live_state_reads_back_as_the_leader_had_it(demo_state):
    back = decode_state(encode_state(demo_state))
    snap, got = demo_state["tick"].snapshot, back["tick"].snapshot
    assert got.ts == snap.ts and got.it_power_mw == snap.it_power_mw  # scalars exact (float64)
    assert got.facility_power_mw == snap.facility_power_mw and got.source_age_s == snap.source_age_s
    np.testing.assert_allclose(got.gpu_temp_c, snap.gpu_temp_c.astype(np.float32), rtol=0, atol=0)
    assert got.gpu_state.dtype == np.int8 and (got.gpu_state == snap.gpu_state).all()
    assert got.link_up_flag.dtype == bool and (got.link_up_flag == snap.link_up_flag).all()
    assert [j.name for j in got.jobs] == [j.name for j in snap.jobs]
    assert got.jobs[0].restart_phase == snap.jobs[0].restart_phase
    assert got.jobs[0].breakdown_s == snap.jobs[0].breakdown_s
    detail, got_detail = demo_state["tick"].detail, back["tick"].detail
    assert got_detail.balance == detail.balance and got_detail.swing == detail.swing
    assert set(got_detail.projections_s) == set(detail.projections_s)
    assert back["timelines"] == demo_state["timelines"] and back["timelines"]
    got.gpu_temp_c[0] = 1.0  # a reader's arrays are its own, writable


def _blob(head: dict, raw: bytes = b"") -> bytes:
    header = json.dumps(head).encode()
    return MAGIC + zlib.compress(struct.pack("<I", len(header)) + header + raw)


@pytest.mark.parametrize(
    "blob, message",
    [
        (b"not a state", "bad magic"),
        (MAGIC + b"\x00garbage", "unreadable"),
        (_blob({"tree": {"@dc": "os:_wrap_close", "f": {}}, "arrays": []}), "not one of the twin's"),
        (_blob({"tree": {"@dc": "twin.engine.tick:TwinEngine", "f": {}}, "arrays": []}), "not a dataclass"),
        (_blob({"tree": {"@nd": 0}, "arrays": [["<f4", [1000]]]}, b"\x00" * 8), "truncated"),
        (_blob({"tree": {"@nd": 0}, "arrays": [["|O", [1]]]}, b"\x00" * 8), "object arrays"),
    ],
)
def test_a_reader_refuses_what_is_not_a_live_state(blob, message):
    with pytest.raises(LiveStateError, match=message):
        decode_state(blob)


def test_one_row_per_site_however_many_ticks(db_url, demo_state):
    from ingest.store.db import open_database

    engine = open_database(db_url)
    try:
        assert latest_seq(engine, "demo") is None and read_latest(engine, "demo") is None
        payload = encode_state(demo_state)
        for seq in range(1, 6):
            publish(engine, "demo", seq, T0 + timedelta(seconds=seq), "host:1:ab", payload)
        publish(engine, "other", 1, T0, "host:2:cd", b"x")
        with engine.connect() as conn:
            assert conn.execute(select(func.count()).select_from(LiveState)).scalar() == 2
        assert latest_seq(engine, "demo") == (5, "host:1:ab")
        seq, holder, stored = read_latest(engine, "demo")
        assert (seq, holder, stored) == (5, "host:1:ab", payload)
    finally:
        engine.dispose()
