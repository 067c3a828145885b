"""The trend buffer: time order, its window, and rows merged from the database."""

import math
from datetime import UTC, datetime, timedelta

from ingest.live.trend import TREND_COLUMNS, TrendBuffer

T0 = datetime(2024, 7, 22, 15, 0, tzinfo=UTC)


def stored(second: int, it_power_mw: float | None = 60.0, **values) -> tuple:
    return T0 + timedelta(seconds=second), {"it_power_mw": it_power_mw, "gpus_down": 2.0, **values}


def test_stored_rows_merge_in_time_order_within_the_window():
    buffer = TrendBuffer(window_s=10.0)
    assert buffer.last_ts() is None and buffer.rows_after(None) == []
    assert buffer.extend([stored(0), stored(1, None), stored(2, float("nan"))]) == 3
    assert buffer.extend([stored(1), stored(2), stored(3)]) == 1  # what it has already is skipped
    frame = buffer.frame(3600)
    assert list(frame.columns) == list(TREND_COLUMNS) and len(frame) == 4
    assert frame["gpus_down"].tolist() == [2, 2, 2, 2] and frame["gpus_down"].dtype.kind == "i"  # counts stay whole
    assert math.isnan(frame["it_power_mw"].iloc[1]) and math.isnan(frame["pue_ratio"].iloc[0])  # unknown, missing
    assert buffer.extend([stored(20)]) == 1
    assert buffer.rows_after(None) == buffer.rows_after(T0 - timedelta(seconds=1))
    assert [ts for ts, _ in buffer.rows_after(None)] == [T0 + timedelta(seconds=20)]  # 0..3 s left the window
    assert buffer.rows_after(T0 + timedelta(seconds=20)) == []
    ts, values = buffer.rows_after(T0)[0]
    assert values["it_power_mw"] == 60.0 and set(values) == set(TREND_COLUMNS)
