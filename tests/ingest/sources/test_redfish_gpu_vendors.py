"""Per-GPU die, HBM and power readings from real BMC captures of three vendors, and one built from the schema.

The captures name GPU temperatures differently: the DGX H100's HGX HMC sensors (1-based
``HGX_GPU_SXM_n``), a GB200 tray's platform metric report (0-based ``HGX_GPU_n``, values
flagged stale), and a Dell iDRAC's standard ``Sensors`` collection plus its OEM
``DellGPUSensor`` and per-GPU ``Thermal``/``Power`` resources.  Expected values are read from
the fixture files themselves.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ingest.sources import names
from ingest.sources.redfish import gpu_processors, load_document, parse_resource, parse_tree, to_samples
from ingest.sources.samples import IngestCounts

LIBREDFISH = "redfish-nvidia-libredfish"
METRICS = ("gpu_temp_c", "hbm_temp_c", "gpu_power_w")


def _tree(root: Path) -> dict[str, dict]:
    docs = {}
    for p in root.rglob("*.json"):
        doc, _ = load_document(p.read_bytes(), str(p))
        if doc is not None:
            docs[doc.get("@odata.id", str(p))] = doc
    return docs


def _per_gpu(batch) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {m: {} for m in METRICS}
    for _, label, metric, value, _ in batch.rows():
        if metric in out:
            out[metric][label] = float(value)
    return out


def _json(root: Path, rel: str) -> dict:
    return json.loads((root / rel / "index.json").read_text())


def test_dgx_h100_hmc_sensors_give_eight_gpus(fixtures_dir):
    root = fixtures_dir / LIBREDFISH / "nvidia_viking_dgx_h100"
    got = _per_gpu(parse_tree(_tree(root), "dgx"))
    assert {m: len(v) for m, v in got.items()} == {"gpu_temp_c": 8, "hbm_temp_c": 8, "gpu_power_w": 8}
    for n in range(1, 9):  # HGX_GPU_SXM_n is GPU n − 1
        sensors = f"Chassis/HGX_GPU_SXM_{n}/Sensors"
        assert got["gpu_temp_c"][f"dgx/gpu{n - 1}"] == _json(root, f"{sensors}/HGX_GPU_SXM_{n}_TEMP_0")["Reading"]
        assert (
            got["hbm_temp_c"][f"dgx/gpu{n - 1}"] == _json(root, f"{sensors}/HGX_GPU_SXM_{n}_DRAM_0_Temp_0")["Reading"]
        )
        assert got["gpu_power_w"][f"dgx/gpu{n - 1}"] == _json(root, f"{sensors}/HGX_GPU_SXM_{n}_Power_0")["Reading"]


def test_gb200_metric_report_gives_four_gpus_counted_from_zero(fixtures_dir):
    root = fixtures_dir / LIBREDFISH / "nvidia_gb200"
    counts = IngestCounts()
    got = _per_gpu(parse_tree(_tree(root), "tray", counts))
    assert {m: len(v) for m, v in got.items()} == {"gpu_temp_c": 4, "hbm_temp_c": 4, "gpu_power_w": 4}
    report = _json(root, "TelemetryService/MetricReports/HGX_PlatformEnvironmentMetrics_0")["MetricValues"]
    value = {m["MetricProperty"].rsplit("/", 1)[-1]: float(m["MetricValue"]) for m in report}
    for n in range(4):  # HGX_GPU_0..3: 0-based, unlike the H100's HGX_GPU_SXM_1..8
        assert got["gpu_temp_c"][f"tray/gpu{n}"] == value[f"HGX_GPU_{n}_TEMP_0"]
        assert got["hbm_temp_c"][f"tray/gpu{n}"] == value[f"HGX_GPU_{n}_DRAM_0_Temp_0"]
        assert got["gpu_power_w"][f"tray/gpu{n}"] == value[f"HGX_GPU_{n}_Power_0"]
    assert 36 < got["gpu_temp_c"]["tray/gpu0"] < 38  # TEMP_0, not the T.Limit headroom TEMP_1 (≈ 50)
    stale = sum(1 for m in report if ((m.get("Oem") or {}).get("Nvidia") or {}).get("MetricValueStale"))
    assert stale == 31 and counts.stale_values == stale  # kept (the last reading the HMC holds) and counted


def test_gb200_gpu_processors_are_numbered_from_zero(fixtures_dir):
    gpus = gpu_processors(_tree(fixtures_dir / LIBREDFISH / "nvidia_gb200"))
    assert sorted(i for i, _ in gpus.values()) == [0, 1, 2, 3]


@pytest.mark.slow
def test_dell_gpu_by_slot_oem_sensor_and_per_gpu_resources(fixtures_dir):
    root = fixtures_dir / LIBREDFISH / "dell"
    docs = _tree(root)
    assert [i for i, _ in gpu_processors(docs).values()] == [0]  # one GPU, in PCIe slot 2
    counts = IngestCounts()
    got = _per_gpu(parse_tree(docs, "idrac", counts))
    assert {m: len(v) for m, v in got.items()} == {"gpu_temp_c": 1, "hbm_temp_c": 1, "gpu_power_w": 1}
    sensor = _json(root, "Chassis/System.Embedded.1/Sensors/SystemBoardGPU2Temp")
    oem = _json(root, "Systems/System.Embedded.1/Oem/Dell/DellGPUSensors/Video.Slot.2-1")
    assert got["gpu_temp_c"]["idrac/gpu0"] == sensor["Reading"] == oem["PrimaryGPUTemperatureCelsius"]
    assert got["hbm_temp_c"]["idrac/gpu0"] == oem["MemoryTemperatureCelsius"]
    assert oem["PowerConsumptionmW"] is None and math.isnan(got["gpu_power_w"]["idrac/gpu0"])  # null: no value
    assert counts.unmapped_names["Gpu board Temperature"] == 1  # the board sensor is not the die


def test_dell_gpu_resources_alone():
    """Each Dell view maps to the GPU on its own (given the processor map)."""
    gpus = {"/redfish/v1/Systems/System.Embedded.1/Processors/Video.Slot.2-1": (0, "")}
    power = {
        "@odata.type": "#Power.v1_7_1.Power",
        "@odata.id": "/redfish/v1/Systems/System.Embedded.1/Processors/Video.Slot.2-1/Oem/Dell/PowerMetrics",
        "PowerControl": [{"PowerConsumedWatts": 312.5, "RelatedItem": '[{"@odata.id":"/redfish/v1/Systems/x"}]'}],
    }
    (r,) = parse_resource(power, None, IngestCounts(), gpus)
    assert (r.kind, r.index, r.metric, r.value) == ("gpu", 0, "gpu_power_w", 312.5)
    sensor = {
        "@odata.type": "#DellGPUSensor.v1_0_1.DellGPUSensor",
        "@odata.id": "/redfish/v1/Systems/System.Embedded.1/Oem/Dell/DellGPUSensors/Video.Slot.2-1",
        "DeviceID": "Video.Slot.2-1",
        "PowerConsumptionmW": 301250,
    }
    (r,) = parse_resource(sensor, None, IngestCounts(), gpus)
    assert (r.index, r.metric, r.value) == (0, "gpu_power_w", pytest.approx(301.25))
    unknown = dict(sensor, DeviceID="Video.Slot.9-1")
    counts = IngestCounts()
    assert parse_resource(unknown, None, counts, gpus) == [] and counts.unmapped_entities == 1


def _vendor_gpu_temp_sensor(context: str, name: str, values: dict[str, str]) -> dict:
    """A Sensor built from the Redfish ``Sensor`` schema (DSP0268: Reading, ReadingUnits, PhysicalContext,
    Oem) as a vendor might send it: one "GPU Temp" sensor whose ``Reading`` is the hottest GPU and whose
    OEM block lists every GPU's value as a string.  No capture of such a BMC was at hand."""
    return {
        "@odata.type": "#Sensor.v1_7_0.Sensor",
        "@odata.id": f"/redfish/v1/Chassis/1/Sensors/{name.replace(' ', '')}",
        "Id": name.replace(" ", ""),
        "Name": name,
        "ReadingType": "Temperature",
        "ReadingUnits": "Cel",
        "Reading": max(float(v) for v in values.values() if v.replace(".", "").isdigit()),
        "PhysicalContext": context,
        "Oem": {"Vendor": {"@odata.type": "#VendorSensor.v1_0_0.VendorSensor", **values}},
    }


def test_one_gpu_temp_sensor_with_per_gpu_strings_and_hbm_under_memory():
    die = _vendor_gpu_temp_sensor("GPU", "GPU Temp", {f"GPU{i}": f"{40 + i}.5" for i in range(1, 9)})
    hbm = _vendor_gpu_temp_sensor("Memory", "GPU HBM Temp", {f"GPU{i}": f"{50 + i}" for i in range(1, 9)})
    dimm = _vendor_gpu_temp_sensor("Memory", "DIMM Temp", {"GPU1": "30"})  # memory, but not a GPU's
    counts = IngestCounts()
    readings = [r for doc in (die, hbm, dimm) for r in parse_resource(doc, None, counts)]
    got = _per_gpu(to_samples(readings, "hgx", counts))
    assert len(got["gpu_temp_c"]) == 8 and len(got["hbm_temp_c"]) == 8
    assert got["gpu_temp_c"]["hgx/gpu0"] == 41.5 and got["gpu_temp_c"]["hgx/gpu7"] == 48.5  # GPU1..8 → 0..7
    assert got["hbm_temp_c"]["hgx/gpu3"] == 54.0
    assert 48.5 == die["Reading"] and list(got["gpu_temp_c"].values()).count(48.5) == 1  # the aggregate is no GPU
    zero_based = _vendor_gpu_temp_sensor("GPU", "GPU Temp", {"GPU_0": "33", "GPU_1": "not read"})
    values = {r.index: r.value for r in parse_resource(zero_based, None, IngestCounts())}
    assert values[0] == 33.0 and math.isnan(values[1])


def test_vendor_gpu_names():
    assert names.gpu_ordinal("GPU_SXM_3") == 3 and names.gpu_ordinal("GPU_0") == 0
    assert names.gpu_ordinal("Video.Slot.2-1") is None
    assert names.gpu_index_in_uri("/redfish/v1/Chassis/HGX_GPU_SXM_1/Sensors") == 0
    assert names.gpu_index_in_uri("/redfish/v1/Chassis/HGX_GPU_3/Sensors") == 3
    assert names.gpu_index_in_uri("/redfish/v1/Systems/HGX_Baseboard_0/Processors/GPU_2") == 2
    assert names.gpu_index_in_uri("/redfish/v1/Systems/1/Processors/GPU5") == 4
    assert names.gpu_slot("Video.Slot.2-1") == names.gpu_slot("System Board GPU2 Temp") == 2
    assert names.gpu_thermal_metric("Gpu Memory Temperature") == "hbm_temp_c"
    assert names.gpu_thermal_metric("Gpu board Temperature") is None
    assert names.match_sensor("HGX_GPU_2_DRAM_0_Temp_0").index == 2
    assert names.match_sensor("HGX_GPU_0_TEMP_1") is None  # T.Limit headroom
