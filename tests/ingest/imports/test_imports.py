"""Imports from real systems: MLPerf power logs, nvidia-smi CSV/XML, dcgmi dmon, Prometheus history, --site auto."""

import json
from datetime import UTC, datetime

import numpy as np
import pandas as pd
import pytest

from ingest.imports import dcgmi, mlperf, nvidia_smi
from ingest.imports.derived import hot_rack_events, throttle_from_readings
from ingest.imports.series import util_from_node_power
from ingest.replay.bundle import read_bundle
from ingest.replay.library import find_incident, validate
from twin.cli import main
from twin.site.load import load_site

MLPERF = "mlperf-power/dell-8xXE9680-8xH100-llama2_70b_lora"
T0 = datetime(2024, 7, 22, 15, 0, tzinfo=UTC)

# Written for these tests from the documented nvidia-smi CSV layout (not a capture).
CSV_HEADER_UNITS = """timestamp, index, name, temperature.gpu, temperature.memory, power.draw [W], utilization.gpu [%], clocks.sm [MHz]
2024/07/22 15:00:00.100, 0, NVIDIA H100 80GB HBM3, 61, 55, 650.12 W, 97 %, 1980 MHz
2024/07/22 15:00:00.100, 1, NVIDIA H100 80GB HBM3, 63, 57, 655.40 W, 98 %, 1980 MHz
2024/07/22 15:00:05.100, 0, NVIDIA H100 80GB HBM3, 62, 55, [N/A], 96 %, 1965 MHz
2024/07/22 15:00:05.100, 1, NVIDIA H100 80GB HBM3, 64, 58, 660.00 W, 99 %, 1980 MHz
"""
CSV_BARE = """2024/07/22 15:00:00.100, 0, 61, 55, 650.12, 97, 1980
2024/07/22 15:00:05.100, 0, 62, 55, 648.00, 96, 1965
"""
# Written for these tests from the documented `dcgmi dmon` layout [DCGMI-Dmon] (no licensed capture exists).
DMON = """#Entity   TMPTR  POWER    GPUTL  SMCLK  XIDER
ID        C      W
GPU 0     61     650.1    97     1980   0
GPU 1     63     655.4    98     1980   0
GPU 0     62     N/A      96     1965   0
GPU 1     64     0.0      0      0      79
GPU-I 1   N/A    N/A      N/A    N/A    N/A
"""


def test_mlperf_power_log_is_node_ac_power_in_watts(fixtures_dir):
    series = mlperf.read_power_logs(fixtures_dir / MLPERF / "result_0")
    assert set(series["host"]) == {f"node_{i}" for i in range(8)} and set(series["metric"]) == {"node_power_w"}
    node0 = series[series["host"] == "node_0"]["value"]
    assert 2500 < node0.min() < 3600 and 8000 < node0.max() < 10500  # idle ~2.9 kW, training 8.4–9.9 kW
    events = mlperf.parse_run_log((fixtures_dir / MLPERF / "result_0.txt").read_text())
    assert [e["metric"] for e in events].count("eval_start") == 5 and events[0]["metric"] == "init_start"


def test_util_from_node_power_inverts_the_power_model():
    state = load_site("demo")
    idle = util_from_node_power(state, np.full((1, state.n_nodes), 1000.0))
    busy = util_from_node_power(state, np.full((1, state.n_nodes), 9000.0))
    assert np.all(idle == 0.0) and np.all(busy > 0.9)


@pytest.mark.slow
def test_mlperf_import_with_site_auto_replays(fixtures_dir, tmp_path, capsys):
    lib, src = tmp_path / "lib", fixtures_dir / MLPERF
    argv = [
        "incidents",
        "--dir",
        str(lib),
        "import",
        "--format",
        "mlperf-power",
        str(src / "result_0"),
        "--run-log",
        str(src / "result_0.txt"),
        "--site",
        "auto",
        "--name",
        "dell-lora",
        "--db",
        f"sqlite:///{tmp_path / 'twin.db'}",
        "--json",
    ]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["name"] == "dell-lora" and out["site"] == "auto-dell-lora" and out["site_version"] == 1
    bundle = read_bundle(find_incident("dell-lora", lib))
    state = validate(bundle)
    assert state.n_nodes == 8 and state.n_gpus == 64
    assert bundle.metadata["host_map"]["node_0"] == "h1-r01-k01-n0"
    assert (bundle.frame("events")["metric"] == "eval_start").sum() == 5
    rack_kw = bundle.frame("rack")["rack_power_kw"]
    assert 60 < rack_kw.max() < 85  # 8 nodes of 8.4–9.9 kW
    assert main(["replay", "dell-lora", "--dir", str(lib), "--json"]) == 0
    replayed = json.loads(capsys.readouterr().out)
    assert abs(replayed["signals"]["rack_power_kw"]["nmbe"]) < 15
    # the same name again is refused and the stored incident is untouched
    before = find_incident("dell-lora", lib).read_bytes()
    assert main(argv) == 1
    assert "already stored" in capsys.readouterr().err
    assert find_incident("dell-lora", lib).read_bytes() == before


def test_nvidia_smi_csv_with_header_and_units_and_without():
    a = nvidia_smi.parse_csv(CSV_HEADER_UNITS, "h1-r01-k01-n0")
    power = a[a["metric"] == "gpu_power_w"]
    assert len(power) == 3 and power["value"].max() == pytest.approx(660.0)  # [N/A] left out
    util = a[(a["metric"] == "gpu_util_frac") & (a["gpu"] == 1)]["value"]
    assert list(util) == pytest.approx([0.98, 0.99])
    b = nvidia_smi.parse_csv(CSV_BARE, "h1-r01-k01-n0")
    assert set(b["metric"]) == {"gpu_temp_c", "hbm_temp_c", "gpu_power_w", "gpu_util_frac", "sm_clock_mhz"}
    assert b["ts"].iloc[0] == datetime(2024, 7, 22, 15, 0, 0, 100000, tzinfo=UTC)


def test_nvidia_smi_xml_fixture(fixtures_dir):
    text = (fixtures_dir / "nvidia-smi-telegraf" / "a100-sxm4-v12.xml").read_text()
    s = nvidia_smi.parse_xml(text, "gpu-box")
    values = dict(zip(s["metric"], s["value"]))
    assert values["gpu_temp_c"] == 27 and values["hbm_temp_c"] == 44 and values["gpu_power_w"] == pytest.approx(67.03)
    assert nvidia_smi.product_name(text) == "NVIDIA A100-SXM4-80GB"
    t4 = nvidia_smi.parse_xml((fixtures_dir / "nvidia-smi-telegraf" / "tesla-t4.xml").read_text(), "t4")
    assert "gpu_temp_c" in set(t4["metric"])


def test_dcgmi_dmon_rows_become_loops_at_the_interval():
    s = dcgmi.parse_dmon(DMON, "h1-r01-k01-n0", T0, interval_s=5.0)
    assert sorted(s["ts"].unique()) == [T0, T0.replace(second=5)]
    gpu1 = s[(s["gpu"] == 1) & (s["ts"] == T0.replace(second=5))]
    assert dict(zip(gpu1["metric"], gpu1["value"]))["last_xid_code"] == 79
    assert not ((s["gpu"] == 0) & (s["metric"] == "gpu_power_w") & (s["ts"] > T0)).any()  # N/A


def test_unknown_hosts_are_reported_and_skipped(tmp_path, capsys):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "h1-r01-k01-n0.csv").write_text(CSV_HEADER_UNITS)
    (logs / "not-in-demo.csv").write_text(CSV_HEADER_UNITS)
    argv = [
        "incidents",
        "--dir",
        str(tmp_path / "lib"),
        "import",
        "--format",
        "nvidia-smi-csv",
        str(logs),
        "--site",
        "demo",
        "--name",
        "csv-demo",
        "--json",
    ]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["skipped"] == ["host 'not-in-demo': not a node of site 'demo'"]
    gpu = read_bundle(find_incident("csv-demo", tmp_path / "lib")).frame("gpu")
    assert sorted(gpu["gpu_id"].unique()) == [0, 1]


# GPU 1 heats to 92 °C under load and its clock falls to 1,400 MHz, then cools below 87 °C less 2 K
CSV_HOT = """timestamp, index, name, temperature.gpu, temperature.memory, power.draw [W], utilization.gpu [%], clocks.sm [MHz]
2024/07/22 15:00:00.100, 0, NVIDIA H100 80GB HBM3, 61, 55, 650.0 W, 97 %, 1980 MHz
2024/07/22 15:00:00.100, 1, NVIDIA H100 80GB HBM3, 70, 60, 650.0 W, 97 %, 1980 MHz
2024/07/22 15:00:05.100, 0, NVIDIA H100 80GB HBM3, 61, 55, 650.0 W, 0 %, 345 MHz
2024/07/22 15:00:05.100, 1, NVIDIA H100 80GB HBM3, 88, 70, 640.0 W, 97 %, 1700 MHz
2024/07/22 15:00:10.100, 0, NVIDIA H100 80GB HBM3, 61, 55, 650.0 W, 97 %, 1980 MHz
2024/07/22 15:00:10.100, 1, NVIDIA H100 80GB HBM3, 92, 75, 600.0 W, 97 %, 1400 MHz
2024/07/22 15:00:15.100, 0, NVIDIA H100 80GB HBM3, 61, 55, 650.0 W, 97 %, 1980 MHz
2024/07/22 15:00:15.100, 1, NVIDIA H100 80GB HBM3, 80, 65, 650.0 W, 97 %, 1980 MHz
"""


def test_a_hot_slow_gpu_is_imported_as_throttled_with_its_alert(tmp_path, capsys):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "h1-r01-k01-n0.csv").write_text(CSV_HOT)
    argv = ["incidents", "--dir", str(tmp_path / "lib"), "import", "--format", "nvidia-smi-csv", str(logs)]
    assert main([*argv, "--site", "demo", "--name", "hot", "--step", "5", "--json"]) == 0
    capsys.readouterr()
    bundle = read_bundle(find_incident("hot", tmp_path / "lib"))
    gpu = bundle.frame("gpu").sort_values(["ts", "gpu_id"])
    throttle = gpu.pivot(index="ts", columns="gpu_id", values="throttle_frac").to_numpy()
    # GPU 0 idles at 345 MHz in frame 1: not throttled; GPU 1 is held to 1,700 then 1,400 of 1,980 MHz
    assert throttle[:, 0].tolist() == [1.0, 1.0, 1.0, 1.0]
    assert throttle[:, 1] == pytest.approx([1.0, 1700 / 1980, 1400 / 1980, 1.0], abs=1e-6)
    events = bundle.frame("events")
    # one warning at 88 °C (max operating 87 °C), one critical at 92 °C (slowdown 89 °C); 80 °C does not clear
    # the warning (87 − 2 K), so no second opening
    assert events["severity"].tolist() == ["warning", "critical"]
    assert events["entity_kind"].tolist() == ["rack", "rack"] and set(events["entity_name"]) == {"H1-R01-K01"}
    assert events["value"].tolist() == pytest.approx([88.0, 92.0])


def test_hot_rack_episodes_open_once_and_reopen_after_clearing():
    state = load_site("demo")
    ts = pd.date_range("2024-07-22 15:00", periods=6, freq="5s", tz="UTC")
    temp = np.full((6, state.n_gpus), np.nan)
    temp[:, 0] = [88, 90, 86, 84, 88, 60]  # opens, holds at 86 (above 85), clears at 84, opens again
    events = hot_rack_events(state, ts, temp)
    assert [(e["ts_ms"], e["severity"]) for e in events] == [
        (ts[0].value // 10**6, "warning"),
        (ts[1].value // 10**6, "critical"),
        (ts[4].value // 10**6, "warning"),
    ]
    assert hot_rack_events(state, ts, np.full((6, state.n_gpus), np.nan)) == []
    nan = np.full((1, state.n_gpus), np.nan)
    recorded = nan.copy()
    recorded[0, 0] = 0.5
    # a recorded throttle factor is kept; a GPU with neither clock nor factor stays unknown
    kept = throttle_from_readings(state, nan, nan, nan, recorded)
    assert kept[0, 0] == 0.5 and np.isnan(kept[0, 1])


def test_dcgmi_import_replays_on_a_site(tmp_path, capsys):
    src = tmp_path / "h1-r01-k01-n0.txt"
    src.write_text(DMON)
    argv = [
        "incidents",
        "--dir",
        str(tmp_path / "lib"),
        "import",
        "--format",
        "dcgmi-dmon",
        str(src),
        "--site",
        "demo",
        "--start",
        "2024-07-22T15:00:00Z",
        "--step",
        "5",
        "--json",
    ]
    assert main(argv) == 0
    name = json.loads(capsys.readouterr().out)["name"]
    assert main(["replay", name, "--dir", str(tmp_path / "lib"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["frames"] == 2


@pytest.mark.prometheus
def test_prometheus_history_import(prometheus_server, tmp_path, capsys):
    end = prometheus_server.history_end_s
    start = end - 600
    iso = lambda s: datetime.fromtimestamp(s, tz=UTC).isoformat()  # noqa: E731
    argv = [
        "incidents",
        "--dir",
        str(tmp_path / "lib"),
        "import",
        "--format",
        "prometheus",
        prometheus_server.url,
        "--site",
        "demo",
        "--start",
        iso(start),
        "--end",
        iso(end),
        "--step",
        "15",
        "--name",
        "prom",
        "--json",
    ]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["name"] == "prom"
    bundle = read_bundle(find_incident("prom", tmp_path / "lib"))
    gpu = bundle.frame("gpu")
    assert sorted(gpu["gpu_id"].unique()) == list(range(8))  # h1-r01-k01-n0 is demo's first node
    g3 = gpu[gpu["gpu_id"] == 3]
    assert g3["gpu_power_w"].between(630, 634).all() and g3["gpu_temp_c"].between(53, 57).all()
    assert main(["replay", "prom", "--dir", str(tmp_path / "lib"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["signals"]["gpu_power_w"]["n"] > 0
