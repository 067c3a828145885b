"""Redfish: every fixture file parses (or fails with a clear error), values and vendor quirks."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ingest.sources.redfish import crawl, links, load_document, parse_resource, parse_tree, to_samples
from ingest.sources.samples import KIND_CODE, IngestCounts

REPO_FIXTURES = Path(__file__).resolve().parents[3].parent / "shared" / "fixtures"
REDFISH_FILES = sorted(p for d in REPO_FIXTURES.glob("redfish-*") for p in d.rglob("*.json"))


def test_fixture_set_is_present():
    assert len(REDFISH_FILES) > 1500, f"expected the Redfish fixture trees under {REPO_FIXTURES}"


@pytest.mark.parametrize("path", REDFISH_FILES, ids=lambda p: str(p.relative_to(REPO_FIXTURES)))
def test_every_redfish_file_parses(path):
    doc, err = load_document(path.read_bytes(), str(path))
    if "invalid" in path.name:
        assert doc is None and "invalid JSON" in err and path.name in err
        return
    assert doc is not None, err
    counts = IngestCounts()
    readings = parse_resource(doc, None, counts)
    assert counts.malformed_lines == 0
    for r in readings:
        assert r.metric and r.kind
        assert isinstance(r.value, float)


def _tree(root: Path) -> dict[str, dict]:
    docs = {}
    for p in root.rglob("*.json"):
        doc, err = load_document(p.read_bytes(), str(p))
        if doc is not None:
            docs[doc.get("@odata.id", str(p))] = doc
    return docs


def _by(batch) -> dict[tuple[str, str, str], float]:
    return {(k, label, m): v for k, label, m, v, _ in batch.rows()}


def test_cdu_readings_map_to_coolant_names(fixtures_dir):
    root = fixtures_dir / "redfish-dmtf/public-cooling-unit"
    batch = parse_tree(_tree(root), "cdu-ctl-1")
    v = _by(batch)
    sec = json.loads((root / "ThermalEquipment/CDUs/1/SecondaryCoolantConnectors/1/index.json").read_text())
    pri = json.loads((root / "ThermalEquipment/CDUs/1/PrimaryCoolantConnectors/1/index.json").read_text())
    cdu = ("cdu", "cdu-ctl-1/CDUs/1")
    assert v[(*cdu, "coolant_flow_lpm")] == sec["FlowLitersPerMinute"]["Reading"]
    assert v[(*cdu, "coolant_supply_temp_c")] == sec["SupplyTemperatureCelsius"]["Reading"]
    assert v[(*cdu, "coolant_pressure_kpa")] == sec["DeltaPressurekPa"]["Reading"]
    assert v[(*cdu, "facility_flow_lpm")] == pri["FlowLitersPerMinute"]["Reading"] == 42
    assert v[(*cdu, "facility_return_temp_c")] == 40
    # pump 2 failed (UnavailableOffline, 0 %): one pump running, no leak
    assert v[(*cdu, "pumps_running_count")] == 1
    assert v[(*cdu, "leak_detected_flag")] == 0
    assert v[("pump", "cdu-ctl-1/pump2/CDUs/1", "pump_speed_frac")] == 0.0


def test_rack_pdu_outlets_and_metrics(fixtures_dir):
    root = fixtures_dir / "redfish-dmtf/public-pdu"
    batch = parse_tree(_tree(root), "pdu-1")
    v = _by(batch)
    assert v[("power_element", "pdu-1/RackPDUs/1", "feed_power_kw")] == pytest.approx(6.438)
    assert v[("power_element", "pdu-1/RackPDUs/1/Outlets/A1", "feed_current_a")] == pytest.approx(1.68)
    assert v[("power_element", "pdu-1/RackPDUs/1/Outlets/A1", "feed_voltage_v")] == pytest.approx(117.5)
    assert batch.counts.duplicates == 0


def test_dgx_h100_quirks(fixtures_dir):
    root = fixtures_dir / "redfish-nvidia-libredfish/nvidia_viking_dgx_h100"
    batch = parse_tree(_tree(root), "dgx-1")
    v = _by(batch)
    # T.Limit trap: EnvironmentMetrics.TemperatureCelsius reads 60 (headroom); the die is 26.75 °C
    assert v[("gpu", "dgx-1/gpu0", "gpu_temp_c")] == pytest.approx(26.75)
    assert all(v[("gpu", f"dgx-1/gpu{i}", "gpu_temp_c")] < 45 for i in range(8))
    assert batch.counts.unmapped_names["EnvironmentMetrics.TemperatureCelsius (T.Limit headroom)"] == 8
    # HGX numbering is 1-based: HGX_GPU_SXM_1 is GPU 0; the HMC power beats the rounded host-BMC one
    assert v[("gpu", "dgx-1/gpu0", "gpu_power_w")] == pytest.approx(71.675, abs=0.2)
    assert v[("gpu", "dgx-1/gpu0", "power_limit_w")] == 700
    assert v[("gpu", "dgx-1/gpu0", "hbm_temp_c")] == 35
    # the host BMC omits ReadingUnits: units inferred from ReadingType
    assert v[("node", "dgx-1/PWR_SYSTEM", "node_power_w")] > 1000
    psus = [v[("psu", f"dgx-1/psu{i}", "psu_power_w")] for i in range(6)]
    assert sum(psus) == pytest.approx(v[("node", "dgx-1/PWR_SYSTEM", "node_power_w")], rel=0.1)
    # XID codes from LogEntry messages
    assert v[("gpu", "dgx-1/gpu0", "last_xid_code")] == 62
    assert batch.counts.duplicates == 0


def test_legacy_thermal_and_power_dell(fixtures_dir):
    root = fixtures_dir / "redfish-telegraf/dell"
    thermal = json.loads((root / "dell_thermal.json").read_text())
    power = json.loads((root / "dell_power.json").read_text())
    counts = IngestCounts()
    readings = parse_resource(thermal, None, counts) + parse_resource(power, None, counts)
    batch = to_samples(readings, "r640", counts)
    rpm = batch.select("fan_speed_rpm").value
    assert len(rpm) == len(thermal["Fans"]) and rpm.min() > 0
    assert batch.select("node_power_w").value[0] == power["PowerControl"][0]["PowerConsumedWatts"]


def test_missing_readings_are_nan_not_zero():
    doc = {
        "@odata.type": "#Sensor.v1_2_0.Sensor",
        "@odata.id": "/redfish/v1/Chassis/1/Sensors/PWR_PSU0",
        "Id": "PWR_PSU0",
        "ReadingType": "Power",
        "Reading": None,
    }
    batch = to_samples(parse_resource(doc), "n")
    assert len(batch) == 1 and math.isnan(batch.value[0]) and batch.counts.missing_values == 1


def test_wrong_unit_is_not_rescaled():
    doc = {
        "@odata.type": "#Sensor.v1_2_0.Sensor",
        "@odata.id": "/redfish/v1/Chassis/1/Sensors/PWR_SYSTEM",
        "Id": "PWR_SYSTEM",
        "ReadingUnits": "kW",
        "Reading": 2.1,
    }
    counts = IngestCounts()
    assert parse_resource(doc, None, counts) == []
    assert counts.unmapped_names["PWR_SYSTEM [kW]"] == 1


def test_links_follow_pagination():
    doc = {
        "Members": [{"@odata.id": "/redfish/v1/Chassis/DGX/Sensors/A"}],
        "Members@odata.nextLink": "/redfish/v1/Chassis/DGX/Sensors?$skip=75",
        "Thresholds": {"x": {"@odata.id": "/redfish/v1/x#/frag"}},
    }
    assert sorted(links(doc)) == [
        "/redfish/v1/Chassis/DGX/Sensors/A",
        "/redfish/v1/Chassis/DGX/Sensors?$skip=75",
        "/redfish/v1/x",
    ]


def test_crawl_budget_and_errors_with_fake_fetch():
    from ingest.sources.http import FetchError

    pages = {
        "/redfish/v1": {"Chassis": {"@odata.id": "/redfish/v1/Chassis"}},
        "/redfish/v1/Chassis": {"Members": [{"@odata.id": f"/redfish/v1/Chassis/{i}"} for i in range(10)]},
    }

    def fetch(url):
        path = "/" + url.split("/", 3)[3]
        if path not in pages:
            raise FetchError(f"GET {url} failed: HTTP 404", attempts=1, status=404)
        return json.dumps(pages[path]), 1

    res = crawl("http://bmc", fetch=fetch)
    assert set(res.docs) == {"/redfish/v1", "/redfish/v1/Chassis"} and len(res.errors) == 10
    small = crawl("http://bmc", fetch=fetch, max_pages=3)
    assert small.truncated and len(small.docs) + len(small.errors) == 3
    shallow = crawl("http://bmc", fetch=fetch, max_depth=1)
    assert len(shallow.errors) == 0 and len(shallow.docs) == 2


def test_crawl_follows_a_proxied_hmc_prefix():
    pages = {
        "/hmc/redfish/v1": {
            "Chassis": {"@odata.id": "/hmc/redfish/v1/Chassis"},
            "Other": {"@odata.id": "/redfish/v1/Systems"},
        },
        "/hmc/redfish/v1/Chassis": {"Members": []},
    }

    def fetch(url):
        return json.dumps(pages["/" + url.split("/", 3)[3]]), 1

    res = crawl("http://bmc", start="/hmc/redfish/v1", fetch=fetch)
    assert set(res.docs) == {"/hmc/redfish/v1", "/hmc/redfish/v1/Chassis"} and not res.errors


def test_gpu_processors_give_index_and_dcgm_style_uuid(fixtures_dir):
    root = fixtures_dir / "redfish-nvidia-libredfish/nvidia_viking_dgx_h100"
    batch = parse_tree(_tree(root), "dgx-1")
    ents = batch.entities
    uuid_of = {int(ents.index[i]): ents.uuid[i] for i in range(len(ents)) if ents.uuid[i]}
    gpu1 = json.loads((root / "Systems/HGX_Baseboard_0/Processors/GPU_SXM_1/index.json").read_text())
    assert uuid_of[0] == "GPU-" + gpu1["UUID"].lower()
    assert len(set(uuid_of.values())) == 8
    # every GPU entity carries its UUID, so index-only views (HGX chassis sensors) do not split it
    assert all(ents.uuid[i] for i in range(len(ents)) if ents.kind[i] == KIND_CODE["gpu"])


def test_processor_type_decides_what_is_a_gpu():
    docs = {
        "/redfish/v1/Systems/1/Processors/7": {
            "@odata.type": "#Processor.v1_13_0.Processor",
            "@odata.id": "/redfish/v1/Systems/1/Processors/7",
            "Id": "7",
            "ProcessorType": "GPU",
            "UUID": "ABC",
        },
        "/redfish/v1/Systems/1/Processors/7/EnvironmentMetrics": {
            "@odata.type": "#EnvironmentMetrics.v1_3_0.EnvironmentMetrics",
            "@odata.id": "/redfish/v1/Systems/1/Processors/7/EnvironmentMetrics",
            "PowerWatts": {"Reading": 650.0},
        },
        "/redfish/v1/Systems/1/Processors/CPU0": {
            "@odata.type": "#Processor.v1_13_0.Processor",
            "@odata.id": "/redfish/v1/Systems/1/Processors/CPU0",
            "Id": "CPU0",
            "ProcessorType": "CPU",
        },
        "/redfish/v1/Systems/1/Processors/CPU0/EnvironmentMetrics": {
            "@odata.type": "#EnvironmentMetrics.v1_3_0.EnvironmentMetrics",
            "@odata.id": "/redfish/v1/Systems/1/Processors/CPU0/EnvironmentMetrics",
            "PowerWatts": {"Reading": 250.0},
        },
    }
    batch = parse_tree(docs, "n1")
    assert batch.value.tolist() == [650.0]
    assert batch.entities.index.tolist() == [6] and batch.entities.uuid == ["GPU-abc"]


def test_new_model_fans_and_thermal_metrics(fixtures_dir):
    ex = fixtures_dir / "redfish-dmtf/DSP2046-examples"
    fan = json.loads((ex / "Fan-v1-example.json").read_text())
    tm = json.loads((ex / "ThermalMetrics-v1-example.json").read_text())
    hp_fan = json.loads((fixtures_dir / "redfish-telegraf/hp/thermal_subsys/hp_thermal_subsys_fans_0.json").read_text())
    counts = IngestCounts()
    batch = to_samples(
        parse_resource(fan, None, counts) + parse_resource(tm, None, counts) + parse_resource(hp_fan, None, counts),
        "n",
        counts,
    )
    v = _by(batch)
    assert v[("node", "n/Fan Bay 1", "fan_speed_rpm")] == fan["SpeedPercent"]["SpeedRPM"]
    assert (
        v[("node", "n/TemperatureSummary.Intake", "inlet_temp_c")]
        == tm["TemperatureSummaryCelsius"]["Intake"]["Reading"]
    )
    assert counts.unmapped_names["Fan 1 [%]"] == 1  # HP reports percent only: not an rpm


def _gpu_temps(batch) -> dict[tuple[str, str], float]:
    return {
        (metric, label): float(value)
        for kind, label, metric, value, _ in batch.rows()
        if metric in ("gpu_temp_c", "hbm_temp_c")
    }


def test_hgx_gpu_temperatures_by_physical_context():
    """A server-vendor HGX BMC (Supermicro-style; written for this test from the Redfish Thermal schema:
    sensors named freely but tagged ``PhysicalContext: GPU``) gives per-GPU die and HBM temperatures."""
    temps = [{"Name": "CPU1 Temp", "PhysicalContext": "CPU", "ReadingCelsius": 45}]
    temps += [{"Name": f"HGX GPU{i} Die", "PhysicalContext": "GPU", "ReadingCelsius": 60 + i} for i in range(1, 9)]
    temps += [{"Name": f"HGX GPU{i} HBM", "PhysicalContext": "GPU", "ReadingCelsius": 50 + i} for i in range(1, 9)]
    temps += [
        {"Name": "HGX GPU3 T.Limit", "PhysicalContext": "GPU", "ReadingCelsius": 25},
        {
            "Name": "Accelerator Temp",
            "PhysicalContext": "Accelerator",
            "ReadingCelsius": 77,
            "RelatedItem": [{"@odata.id": "/redfish/v1/Systems/1/Processors/GPU_SXM_8"}],
        },
    ]
    doc = {
        "@odata.type": "#Thermal.v1_7_0.Thermal",
        "@odata.id": "/redfish/v1/Chassis/1/Thermal",
        "Temperatures": temps,
    }
    counts = IngestCounts()
    got = _gpu_temps(to_samples(parse_resource(doc, None, counts), "hgx1", counts))
    assert got[("gpu_temp_c", "hgx1/gpu0")] == 61 and got[("hbm_temp_c", "hgx1/gpu0")] == 51
    assert got[("hbm_temp_c", "hgx1/gpu7")] == 58
    assert sum(1 for metric, _ in got if metric == "gpu_temp_c") == 8  # the T.Limit headroom is no temperature
    assert 77.0 in got.values()  # the RelatedItem names the GPU (GPU_SXM_8 is GPU 7)


def test_hgx_gpu_sensor_by_physical_context():
    doc = {
        "@odata.type": "#Sensor.v1_2_0.Sensor",
        "@odata.id": "/redfish/v1/Chassis/HGX_BB/Sensors/GPU_3_Mem",
        "Id": "GPU_3_Mem",
        "ReadingType": "Temperature",
        "ReadingUnits": "Cel",
        "Reading": 66.0,
        "PhysicalContext": "GPU",
    }
    assert _gpu_temps(to_samples(parse_resource(doc), "hgx1")) == {("hbm_temp_c", "hgx1/gpu2"): 66.0}
