"""Prometheus API answers: fixtures, result types, error bodies, odd values, resets, skew."""

from __future__ import annotations

import json
import math
import time

import numpy as np
import pytest

from ingest.sources.counters import power_from_energy, reset_mask
from ingest.sources.prometheus_api import parse_response, to_samples

AICR = "prometheus-api/nvidia-aicr-h100"


@pytest.mark.parametrize("name", ["GPU_UTIL", "FB_USED", "GPU_TEMP", "POWER_USAGE"])
def test_aicr_vectors_map_to_canonical_samples(fixtures_dir, name):
    raw = (fixtures_dir / AICR / f"query_DCGM_FI_DEV_{name}.json").read_text()
    resp = parse_response(raw)
    assert resp.ok and resp.result_type == "vector"
    batch = to_samples(resp)
    payload = json.loads(raw)["data"]["result"]
    assert len(batch) == len(payload) == 16
    assert set(batch.entities.host) == {"gpu-node-1", "gpu-node-2"}
    by_uuid = {batch.entities.uuid[r]: v for r, v in zip(batch.entity_ref.tolist(), batch.value.tolist())}
    scale = 0.01 if name == "GPU_UTIL" else 1.0
    for item in payload:
        assert by_uuid[item["metric"]["UUID"]] == pytest.approx(float(item["value"][1]) * scale)
    assert batch.counts.duplicates == 0 and batch.counts.unmapped_series == 0


def test_docs_vector_and_matrix_parse_but_are_unmapped(fixtures_dir):
    vec = parse_response((fixtures_dir / "prometheus-api/prometheus-docs/query_up_vector.json").read_text())
    mat = parse_response((fixtures_dir / "prometheus-api/prometheus-docs/query_range_up_matrix.json").read_text())
    assert vec.ok and [s.value.tolist() for s in vec.series] == [[1.0], [0.0]]
    assert mat.ok and mat.result_type == "matrix"
    assert [s.value.tolist() for s in mat.series] == [[1, 1, 1], [0, 0, 1]]
    assert mat.series[0].timestamp_s[1] == pytest.approx(1435781445.781)
    batch = to_samples(mat)
    assert len(batch) == 0 and batch.counts.unmapped_series == 2 and batch.counts.unmapped_names["up"] == 2


def test_error_body_scalar_string_and_warnings():
    err = parse_response('{"status":"error","errorType":"bad_data","error":"parse error at char 3"}')
    assert not err.ok and err.error_type == "bad_data" and "char 3" in err.error
    sc = parse_response(
        '{"status":"success","data":{"resultType":"scalar","result":[1435781451.781,"+Inf"]},"warnings":["w1"]}'
    )
    assert sc.ok and sc.scalar == math.inf and sc.warnings == ["w1"]
    st = parse_response('{"status":"success","data":{"resultType":"string","result":[1.5,"hello"]}}')
    assert st.string == "hello" and st.timestamp_s == 1.5
    assert not parse_response("<html>502 Bad Gateway</html>").ok
    assert not parse_response('{"status":"success"}').ok


def _matrix(series: list[tuple[dict, list[tuple[float, str]]]]) -> dict:
    return {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [{"metric": m, "values": [[t, v] for t, v in pts]} for m, pts in series],
        },
    }


LAB = {"gpu": "0", "UUID": "GPU-a", "Hostname": "n1"}


def test_nan_inf_strings_and_bad_points():
    payload = _matrix(
        [({"__name__": "DCGM_FI_DEV_GPU_TEMP", **LAB}, [(1.0, "NaN"), (2.0, "+Inf"), (3.0, "41"), ("x", "1")])]
    )
    resp = parse_response(payload)
    assert resp.malformed_points == 1
    batch = to_samples(resp, now_s=10.0)
    assert len(batch) == 3
    assert math.isnan(batch.value[0]) and math.isnan(batch.value[1]) and batch.value[2] == 41
    assert batch.counts.missing_values == 1 and batch.counts.out_of_range == 1


def test_energy_matrix_counter_reset_and_power_only_across_good_intervals():
    pts = [(0.0, "1000000"), (10.0, "8000000"), (20.0, "500000"), (30.0, "7500000")]  # mJ
    batch = to_samples(
        parse_response(_matrix([({"__name__": "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", **LAB}, pts)])), now_s=100.0
    )
    assert batch.counts.counter_resets == 1
    assert batch.value.tolist() == [1000.0, 8000.0, 500.0, 7500.0]  # J
    t, p, reset = power_from_energy(batch.timestamp_s, batch.value)
    assert reset.tolist() == [False, True, False]
    assert p[0] == pytest.approx(700.0) and math.isnan(p[1]) and p[2] == pytest.approx(700.0)
    assert reset_mask(np.array([5.0, np.nan, 3.0, 4.0])).tolist() == [False, False, True, False]


def test_duplicate_series_and_clock_skew():
    now = time.time()
    payload = {
        "status": "success",
        "data": {
            "resultType": "vector",
            "result": [
                {"metric": {"__name__": "DCGM_FI_DEV_POWER_USAGE", **LAB, "instance": "a"}, "value": [now, "100"]},
                {
                    "metric": {"__name__": "DCGM_FI_DEV_POWER_USAGE", **LAB, "instance": "b"},
                    "value": [now + 3600, "200"],
                },
            ],
        },
    }
    batch = to_samples(parse_response(payload), now_s=now)
    assert batch.counts.duplicates == 1
    assert batch.value.tolist() == [200.0]
    assert batch.counts.future_timestamps == 1


def test_metric_name_for_queries_that_drop_name():
    payload = {"status": "success", "data": {"resultType": "vector", "result": [{"metric": LAB, "value": [1.0, "55"]}]}}
    assert len(to_samples(parse_response(payload))) == 0
    batch = to_samples(parse_response(payload), metric_name="DCGM_FI_DEV_GPU_TEMP")
    assert batch.metric_names() == ["gpu_temp_c"] and batch.value.tolist() == [55.0]
