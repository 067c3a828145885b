"""dcgm-exporter text parser: every fixture, cross-checked with prometheus_client, plus edge cases."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families

from ingest.benchmarks.parse import synthetic_exposition
from ingest.sources.dcgm import DcgmParser, parse_dcgm, parse_labels, workload_of
from ingest.sources.names import DCGM_FIELDS
from ingest.sources.samples import METRICS

DCGM_DIR = "dcgm-exporter"


def dcgm_fixture_files(fixtures_dir: Path) -> list[Path]:
    root = fixtures_dir / DCGM_DIR
    return sorted([*root.glob("*/*.prom"), *root.glob("*/*.txt")])


def _values(batch) -> dict[tuple[str, int, str, str], float]:
    ents = batch.entities
    return {
        (ents.host[r], int(ents.index[r]), ents.name[r], METRICS[m]): v
        for r, m, v in zip(batch.entity_ref.tolist(), batch.metric.tolist(), batch.value.tolist())
    }


def _peer_expected(text: str) -> dict[tuple[str, int, str, str], float]:
    """What our batch must contain, computed independently via prometheus_client."""
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            # prometheus_client names counter samples <family>_total; the wire name is the family's
            fm = DCGM_FIELDS.get(fam.name if fam.type == "counter" else s.name)
            if fm is None:
                continue
            lab = s.labels
            host = lab.get("Hostname") or lab.get("hostname") or ""
            gpu = lab.get("gpu", "")
            value = s.value * fm.scale
            if fm.zero_is_missing and s.value == 0:
                value = math.nan
            out[(host, int(gpu) if gpu.isdigit() else -1, "", fm.canonical)] = value
    return out


def test_every_fixture_parses_like_prometheus_client(fixtures_dir):
    files = dcgm_fixture_files(fixtures_dir)
    assert len(files) >= 5, files
    for path in files:
        text = path.read_text()
        batch = parse_dcgm(text)
        assert batch.counts.malformed_lines == 0, path
        got = _values(batch)
        expected = _peer_expected(text)
        assert set(got) == set(expected), path
        for key, v in expected.items():
            if math.isnan(v):
                assert math.isnan(got[key]), (path, key)
            else:
                assert got[key] == pytest.approx(v), (path, key)
        n_peer = sum(len(f.samples) for f in text_string_to_metric_families(text))
        assert batch.counts.samples + batch.counts.unmapped_series == n_peer, path


def test_aicr_h100_values_units_and_workload(fixtures_dir):
    text = (fixtures_dir / DCGM_DIR / "nvidia-aicr-h100/metrics-sampled-8xH100.prom").read_text()
    parsed = DcgmParser().parse(text)
    batch = parsed.batch
    power = batch.select("gpu_power_w")
    assert len(power) == 8
    by_index = dict(zip(power.entity_index.tolist(), power.value.tolist()))
    assert by_index[0] == pytest.approx(113.611)
    assert set(batch.entities.host) == {"gpu-node-1"}
    assert batch.entities.uuid[int(power.entity_ref[0])].startswith("GPU-")
    util = batch.select("gpu_util_frac").value
    assert np.all((util >= 0) & (util <= 1))
    # only GPU 0 runs the vLLM pod
    assert [batch.entities.index[r] for r in parsed.workloads] == [0]
    assert next(iter(parsed.workloads.values())).pod.startswith("vllm-agg-0")


def test_energy_mj_to_j_and_memory_temp_zero_is_missing(fixtures_dir):
    text = (fixtures_dir / DCGM_DIR / "cncf-k8s-ai-conformance/kops-L4-full-default.prom").read_text()
    batch = parse_dcgm(text)
    assert batch.select("gpu_energy_j").value[0] == pytest.approx(4742776 / 1000)
    hbm = batch.select("hbm_temp_c")
    assert len(hbm) == 1 and math.isnan(hbm.value[0])
    assert batch.counts.missing_values == 1


def test_vgpu_guest_has_no_power_series(fixtures_dir):
    batch = parse_dcgm((fixtures_dir / DCGM_DIR / "cncf-k8s-ai-conformance/vks-GRID-A100-40C-vgpu.prom").read_text())
    assert len(batch.select("gpu_power_w")) == 0
    assert len(batch.select("gpu_temp_c")) == 0
    assert len(batch.select("sm_clock_mhz")) == 1


def test_datadog_edge_cases_empty_help_notes_and_unlabelled(fixtures_dir):
    text = (fixtures_dir / DCGM_DIR / "datadog-integrations-core/metrics.txt").read_text()
    batch = parse_dcgm(text, default_host="dd-host")
    assert batch.counts.malformed_lines == 0
    # unlabelled MEMORY_TEMP 0 lands on the default host and is missing, not 0 °C
    hbm = batch.select("hbm_temp_c")
    assert [batch.entities.host[r] for r in hbm.entity_ref] == ["dd-host"]
    assert math.isnan(hbm.value[0])
    # old throttle-reasons name maps to the clock-event mask
    assert batch.select("clock_event_mask").value.tolist() == [1.0]
    assert batch.counts.unmapped_names["DCGM_FI_DEV_PSTATE"] == 1


LAB = 'gpu="{g}",UUID="GPU-{g}",Hostname="n1"'


def _line(name: str, value: str, g: int = 0, extra: str = "") -> str:
    return f"{name}{{{LAB.format(g=g)}{extra}}} {value}\n"


def test_blank_sentinels_and_impossible_values_are_nan():
    text = (
        _line("DCGM_FI_DEV_MEMORY_TEMP", "9223372036854775794", 0)
        + _line("DCGM_FI_DEV_GPU_TEMP", "2147483632", 0)
        + _line("DCGM_FI_DEV_POWER_USAGE", "140737488355328.000000", 0)
        + _line("DCGM_FI_DEV_GPU_TEMP", "82505", 1)
        + _line("DCGM_FI_DEV_POWER_USAGE", "-5", 1)
        + _line("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "2147483640", 1)
        + _line("DCGM_FI_DEV_GPU_TEMP", "55", 2)
    )
    batch = parse_dcgm(text)
    v = _values(batch)
    for key in [
        ("n1", 0, "", "hbm_temp_c"),
        ("n1", 0, "", "gpu_temp_c"),
        ("n1", 0, "", "gpu_power_w"),
        ("n1", 1, "", "gpu_temp_c"),
        ("n1", 1, "", "gpu_power_w"),
    ]:
        assert math.isnan(v[key]), key
    # a counter may legitimately pass 2^31 mJ: not the int32 sentinel
    assert v[("n1", 1, "", "gpu_energy_j")] == pytest.approx(2147483.640)
    assert v[("n1", 2, "", "gpu_temp_c")] == 55
    assert batch.counts.out_of_range == 2
    assert batch.counts.missing_values == 3
    assert batch.counts.samples == 7


def test_label_variants_lowercase_hostname_old_uuid_and_1x_names():
    text = (
        'dcgm_gpu_temp{gpu="3",uuid="GPU-old",hostname="h1-r01-k01-n0"} 41\n'
        'DCGM_FI_DEV_CLOCKS_EVENT_REASONS{gpu="3",UUID="GPU-new",hostname="h1-r01-k01-n0"} 4\n'
        'DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{gpu="4",UUID="GPU-x",Hostname="h1-r01-k01-n0"} 72\n'
        'DCGM_FI_DEV_XID_ERRORS{gpu="4",UUID="GPU-x",Hostname="h1-r01-k01-n0"} 79\n'
    )
    batch = parse_dcgm(text)
    rows = {(h, m): v for _, h, m, v, _ in batch.rows()}
    assert rows[("h1-r01-k01-n0/gpu3", "gpu_temp_c")] == 41
    assert rows[("h1-r01-k01-n0/gpu3", "clock_event_mask")] == 4
    assert rows[("h1-r01-k01-n0/gpu4", "clock_event_mask")] == 72  # HW_SLOWDOWN|HW_THERMAL
    assert rows[("h1-r01-k01-n0/gpu4", "last_xid_code")] == 79  # the code, not a count
    assert "GPU-old" in batch.entities.uuid


def test_escaped_label_values_and_honor_labels_false():
    text = (
        'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-a",modelName="H100 \\"SXM\\" \\\\ x",Hostname="n2",'
        'exported_pod="train-7",exported_namespace="jobs",exported_container="c",pod="dcgm-exporter-abc",namespace="gpu-operator"} 33\n'
    )
    labels = parse_labels(text[text.index("{") : text.index("}") + 1])
    assert labels["modelName"] == 'H100 "SXM" \\ x'
    assert workload_of(labels).pod == "train-7"
    parsed = DcgmParser().parse(text)
    assert parsed.batch.value.tolist() == [33.0]
    assert list(parsed.workloads.values())[0].namespace == "jobs"
    # idle GPU under honorLabels: the exporter's own pod is not a workload
    assert workload_of({"pod": "nvidia-dcgm-exporter-wqqqn", "namespace": "gpu-operator"}) is None


def test_malformed_lines_are_skipped_and_counted_rest_kept():
    text = (
        "# HELP DCGM_FI_DEV_GPU_TEMP\n# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
        + _line("DCGM_FI_DEV_GPU_TEMP", "40", 0)
        + "this is not a metric line\n"
        + 'DCGM_FI_DEV_GPU_TEMP{gpu="1",UUID="GPU-1",Hostname="n1"}\n'  # no value
        + 'DCGM_FI_DEV_GPU_TEMP{gpu="2",UUID=GPU-2,Hostname="n1"} 42\n'  # unquoted label
        + _line("DCGM_FI_DEV_GPU_TEMP", "forty-three", 3)
        + _line("DCGM_FI_DEV_GPU_TEMP", "44", 4)
    )
    batch = parse_dcgm(text)
    temps = dict(zip(batch.entity_index.tolist(), batch.value.tolist()))
    assert temps[0] == 40 and temps[4] == 44
    assert math.isnan(temps[3])
    assert 1 not in temps and 2 not in temps
    assert batch.counts.malformed_lines == 4


def test_duplicate_series_keep_last_and_count():
    text = (
        _line("DCGM_FI_DEV_GPU_TEMP", "40")
        + _line("DCGM_FI_DEV_GPU_TEMP", "41")
        + _line("DCGM_FI_DEV_POWER_USAGE", "100")
    )
    batch = parse_dcgm(text)
    assert batch.select("gpu_temp_c").value.tolist() == [41.0]
    assert batch.counts.duplicates == 1


def test_nvlink_per_link_series_stay_separate_entities():
    text = "".join(
        f'DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL{{gpu="0",gpu_uuid="GPU-a",nvlink="{k}",Hostname="n1"}} {k}\n'
        for k in range(3)
    )
    batch = parse_dcgm(text)
    assert sorted(batch.entities.name) == ["nvlink0", "nvlink1", "nvlink2"]
    assert batch.counts.duplicates == 0
    assert batch.value.sum() == 3


def test_future_timestamps_flag_clock_skew():
    import time

    now_ms = int(time.time() * 1000)
    text = _line("DCGM_FI_DEV_GPU_TEMP", f"40 {now_ms + 3_600_000}", 0) + _line(
        "DCGM_FI_DEV_GPU_TEMP", f"41 {now_ms}", 1
    )
    batch = parse_dcgm(text)
    assert batch.counts.future_timestamps == 1
    assert batch.timestamp_s.max() == pytest.approx(now_ms / 1000 + 3600)


def test_synthetic_site_page_matches_peer_and_memo_gives_same_result():
    text = synthetic_exposition(0, 3)
    parser = DcgmParser()
    first = parser.parse(text).batch
    second = parser.parse(text).batch  # label memo warm
    assert _values(first) == _values(second)
    expected = _peer_expected(text)
    got = _values(first)
    assert set(got) == set(expected)
    assert all(got[k] == pytest.approx(v) for k, v in expected.items())
    assert len(set(first.entities.host)) == 3 and len(first.entities) == 24


def test_crlf_line_endings_brace_in_label_and_trailing_comma():
    text = (
        "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\r\n"
        'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-a",modelName="odd } name",Hostname="n1",} 40\r\n'
        'DCGM_FI_DEV_GPU_TEMP{gpu="1",UUID="GPU-b",Hostname="n1"} 41'  # no final newline
    )
    batch = parse_dcgm(text)
    assert batch.counts.malformed_lines == 0
    assert dict(zip(batch.entity_index.tolist(), batch.value.tolist())) == {0: 40.0, 1: 41.0}


def test_entities_only_with_unmapped_series_are_not_listed():
    text = (
        'DCGM_FI_DEV_NVSWITCH_TEMPERATURE{nvswitch="0",Hostname="n1"} 40\n'
        + _line("DCGM_FI_DEV_GPU_TEMP", "40", 0)
        + _line("DCGM_FI_DEV_FB_FREE", "100", 1)
    )
    parsed = DcgmParser().parse(text)
    assert len(parsed.batch.entities) == 1 and parsed.batch.counts.unmapped_series == 2
    assert parsed.batch.entity_ref.tolist() == [0]


def test_the_label_memo_hits_on_repeated_scrapes_and_stays_bounded():
    """The memo is looked up by (block, host), as it is stored: a second scrape of the same page only hits.

    A source whose labels change every scrape (a new pod each time) fills the memo up to its
    bound and no further.
    """
    text = synthetic_exposition(0, 3)
    parser = DcgmParser()
    parser.parse(text)
    misses, cached = parser.label_misses_total, parser.cached_labels_count
    assert misses > 0 and cached == misses
    parser.parse(text)
    assert parser.label_misses_total == misses  # every block of the second scrape was a hit
    assert parser.label_hits_total >= misses
    small = DcgmParser(max_cached_labels=64)
    for scrape in range(40):
        small.parse(text.replace('Hostname="', f'pod="job-{scrape}",Hostname="'))
        assert small.cached_labels_count <= 64
