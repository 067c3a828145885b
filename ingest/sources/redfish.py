"""Redfish resources → canonical readings; a budgeted crawler from ``/redfish/v1``.

:func:`parse_resource` reads one JSON resource (dispatching on ``@odata.type``) into
:class:`RedfishReading` rows:

* BMC ``Sensor`` resources and legacy ``Thermal``/``Power`` arrays by sensor name
  (:func:`ingest.sources.names.match_sensor`; one table for the DGX AMI names and IPMI), with
  units from ``ReadingUnits`` or, when a BMC omits it, from ``ReadingType``;
* ``PowerSupply``/``PowerSupplyMetrics`` (PSU input power);
* GPU ``Processor`` sub-resources (``EnvironmentMetrics``, ``ProcessorMetrics``, NVLink
  ``PortMetrics``) and the HGX per-GPU chassis.  **Trap**: on the DGX H100 the GPU
  ``EnvironmentMetrics.TemperatureCelsius`` points at the synthesised T.Limit sensor
  (``…_TEMP_1``): °C of headroom, not a temperature.  It is skipped and counted;
* CDUs under ``ThermalEquipment/CDUs`` (``CoolingUnit``, primary = facility side and
  secondary = rack side ``CoolantConnector``, ``Pump``, ``LeakDetector``) → ``coolant_*``,
  ``facility_*``, ``pump_speed_frac``, ``leak_detected_flag``, ``pumps_running_count``;
* rack PDUs under ``PowerEquipment`` (``PowerDistributionMetrics``, mains/branch
  ``Circuit``, ``Outlet``) → ``feed_power_kw``, ``feed_current_a``, ``feed_voltage_v``;
* ``MetricReport`` values (strings) by the sensor id inside ``MetricProperty`` (NVIDIA HMCs flag
  values not refreshed in the last sensing interval ``MetricValueStale``: they are kept, the last
  reading the controller has, and counted in ``stale_values``);
* per-GPU temperatures and power as other vendors name them: Dell's ``DellGPUSensor`` OEM
  resource and the ``Thermal``/``Power`` resources under a GPU ``Processor``, GPU sensors named
  by PCIe slot, and one sensor whose OEM block holds the per-GPU values as strings (HBM under a
  ``Memory`` physical context);
* XID codes inside ``LogEntry`` messages (``… XID 62 …``) → ``last_xid_code``.

The same quantity often appears several times in one tree (a GPU's power in the HMC
sensor, the processor's EnvironmentMetrics, the host BMC's rounded sensor, a metric
report).  :func:`to_samples` keeps the reading from the most direct source (see
``_PRIORITY``) rather than counting these views as duplicates.
"""

from __future__ import annotations

import json
import logging
import math
import re
import time
from collections import deque
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlparse

from ingest.sources import http, names
from ingest.sources.jsondoc import JsonError, load_json
from ingest.sources.names import READING_TYPE_UNITS, match_sensor, normalise_unit
from ingest.sources.samples import BatchBuilder, FetchResult, IngestCounts, SampleBatch, failed, redact_url

log = logging.getLogger(__name__)

ROOT = "/redfish/v1"
MAX_DEPTH = 32  # JSON nesting of one resource; real trees stay under 15
# One resource page: BMC collections with $expand run to a few MB; 16 MiB bounds a runaway body.
MAX_BYTES = 16 * 2**20
# A whole crawl (thousands of pages on a DGX BMC) must end: this bounds it in seconds.
CRAWL_DEADLINE_S = 120.0

# Higher wins when one tree reports the same (entity, metric) several times.
_PRIORITY = {"sensor": 4, "hmc_sensor": 5, "metrics": 3, "legacy": 2, "report": 1, "log": 1}


@dataclass
class RedfishReading:
    """One value found in a resource, already in canonical units."""

    uri: str  # resource (with #fragment for array members)
    kind: str  # entity kind (gpu, node, psu, cdu, pump, power_element)
    owner: str  # equipment inside the service: chassis id, "CDUs/1", "RackPDUs/1" …
    index: int  # GPU 0..7, PSU, pump …; -1 if none
    name: str  # sub-entity (sensor, outlet, connector …) or ""
    metric: str
    value: float
    via: str = "sensor"  # key into _PRIORITY
    uuid: str = ""


def odata_type(doc: dict) -> str:
    """``"#Sensor.v1_2_0.Sensor"`` → ``"Sensor"``."""
    t = doc.get("@odata.type")
    return t.rsplit(".", 1)[-1] if isinstance(t, str) else ""


def _reading(obj) -> float:
    """A number from ``{"Reading": x}`` / a bare number / a numeric string; NaN otherwise."""
    if isinstance(obj, dict):
        obj = obj.get("Reading")
    if isinstance(obj, bool) or obj is None:
        return math.nan
    try:
        return float(obj)
    except (TypeError, ValueError):
        return math.nan


_SEG = re.compile(r"/redfish/v1/(?:Chassis|Systems)/([^/#]+)")
_CDU = re.compile(r"/ThermalEquipment/CDUs/([^/#]+)")
_PDU = re.compile(r"/PowerEquipment/(RackPDUs|FloorPDUs|PowerShelves|TransferSwitches)/([^/#]+)")
_XID = re.compile(r"\bXID\s+(\d+)\b", re.IGNORECASE)
_HEADROOM = re.compile(r"_TEMP_1$|TLIMIT|T\.?LIMIT", re.IGNORECASE)

# NVML clock-event reason names (as NVIDIA's Redfish OEM lists them) → bits of field 112.
THROTTLE_BITS = {
    "NA": 0,
    "None": 0,
    "GpuIdle": 0x1,
    "ApplicationsClocksSetting": 0x2,
    "SwPowerCap": 0x4,
    "HwSlowdown": 0x8,
    "SyncBoost": 0x10,
    "SwThermalSlowdown": 0x20,
    "HwThermalSlowdown": 0x40,
    "HwPowerBrakeSlowdown": 0x80,
    "DisplayClockSetting": 0x100,
}


# GPU processors of one service: Processor URI → (0-based index, "GPU-<uuid>" or "").
GpuMap = dict[str, tuple[int, str]]


def gpu_processors(docs: dict[str, dict]) -> GpuMap:
    """Find ``Processor`` resources with ``ProcessorType: GPU`` and give each an index and UUID.

    The index comes from the Id when it is a GPU ordinal (``GPU_SXM_1``/``GPU1`` → 0, HGX H100
    numbering is 1-based; ``GPU_0`` → 0 where any Id counts from 0, as on GB200), else from the
    order of Ids (Dell's slot names).  Redfish prints the bare UUID;
    DCGM's label is ``GPU-<uuid>``, which is what the inventory joins on.
    """
    found = []
    for uri, doc in docs.items():
        if isinstance(doc, dict) and odata_type(doc) == "Processor" and doc.get("ProcessorType") == "GPU":
            found.append((str(doc.get("@odata.id") or uri), str(doc.get("Id", "")), str(doc.get("UUID") or "")))
    out: GpuMap = {}
    numbers = [names.gpu_ordinal(pid) for _, pid, _ in found]
    base = 0 if 0 in numbers else 1  # GB200 counts GPU_0..3, the DGX H100 GPU_SXM_1..8
    by_id = sorted(zip(found, numbers), key=lambda f: f[0][1])
    for ordinal, ((uri, _pid, uuid), number) in enumerate(by_id):
        idx = number - base if number is not None else ordinal  # Dell's "Video.Slot.2-1" is a slot, not a GPU number
        if uuid and not uuid.upper().startswith("GPU-"):
            uuid = f"GPU-{uuid.lower()}"
        out[uri.rstrip("/")] = (idx, uuid)
    return out


def _gpu_index(uri: str, gpus: GpuMap | None = None) -> int:
    """0-based GPU index of a URI: under a known GPU processor, else from HGX/processor names."""
    if gpus:
        m = re.search(r"^(.*?/Processors/[^/#]+)", uri)
        if m and m.group(1) in gpus:
            return gpus[m.group(1)][0]
        if m:
            return -1  # a processor that is not a GPU (a CPU)
    return names.gpu_index_in_uri(uri)


def _owner(uri: str) -> str:
    m = _SEG.search(uri)
    return m.group(1) if m else ""


def _sensor_reading(
    name: str, value: float, unit: str, uri: str, via: str, counts: IngestCounts
) -> RedfishReading | None:
    m = match_sensor(name)
    if m is None:
        counts.unmapped_series += 1
        counts.unmapped_names[name] += 1
        return None
    if unit and m.unit and unit != m.unit:
        counts.unmapped_series += 1
        counts.unmapped_names[f"{name} [{unit}]"] += 1
        return None
    if via == "sensor" and name.upper().startswith("HGX_"):
        via = "hmc_sensor"
    if m.kind == "node":
        return RedfishReading(uri, "node", _owner(uri), -1, name, m.canonical, value, via)
    return RedfishReading(uri, m.kind, _owner(uri), m.index, "", m.canonical, value, via)


def _parse_sensor(doc: dict, uri: str, counts: IngestCounts, gpus: GpuMap) -> list[RedfishReading]:
    if _CDU.search(uri) or "/PowerEquipment/" in uri:
        return []
    name = doc.get("Id") or doc.get("Name") or uri.rsplit("/", 1)[-1]
    unit = normalise_unit(doc.get("ReadingUnits")) or READING_TYPE_UNITS.get(doc.get("ReadingType") or "", "")
    per_gpu = _oem_per_gpu_readings(doc, str(name), unit, uri)
    if per_gpu is not None:
        return per_gpu
    if not unit and doc.get("Reading") is None:
        return []  # discrete sensor (STATUS_*, POWER_STATE): no value to map
    if doc.get("PhysicalContext") in _GPU_CONTEXTS and unit == "C" and match_sensor(str(name)) is None:
        index = _gpu_context_index(doc, str(name), gpus, 1)
        if index >= 0 and not re.search(r"T\.?LIMIT", str(name), re.IGNORECASE):
            metric = "hbm_temp_c" if _HBM_NAME.search(str(name)) else "gpu_temp_c"
            return [RedfishReading(uri, "gpu", _owner(uri), index, "", metric, _reading(doc.get("Reading")), "sensor")]
    r = _sensor_reading(name, _reading(doc.get("Reading")), unit, uri, "sensor", counts)
    return [r] if r else []


_GPU_CONTEXTS = {"GPU", "Accelerator", "GPUSubsystem"}  # Redfish PhysicalContext values of a GPU
_HBM_NAME = re.compile(r"HBM|MEM|DRAM", re.IGNORECASE)
_GPU_NAME = re.compile(r"GPU|HBM", re.IGNORECASE)


def _related_items(entry: dict) -> list:
    """``RelatedItem`` links; Dell's iDRAC sends some as a JSON-encoded string."""
    items = entry.get("RelatedItem") or []
    if isinstance(items, str):
        try:
            items = json.loads(items)
        except ValueError:
            return []
    return items if isinstance(items, list) else []


def _gpu_context_index(entry: dict, name: str, gpus: GpuMap, base: int) -> int:
    """GPU index of a reading with a GPU ``PhysicalContext``: its ``RelatedItem`` GPU, else the GPU in
    the PCIe slot its name gives (Dell), else its name's number."""
    for item in _related_items(entry):
        ref = item.get("@odata.id") if isinstance(item, dict) else None
        if isinstance(ref, str):
            index = _gpu_index(ref, gpus)
            if index >= 0:
                return index
    slot = names.gpu_slot(name)
    if slot is not None:
        for uri, (index, _) in gpus.items():
            if names.gpu_slot(uri.rsplit("/", 1)[-1]) == slot:
                return index
    digits = _digits(name)
    return digits - base if digits >= base else -1


def _oem_per_gpu_readings(doc: dict, name: str, unit: str, uri: str) -> list[RedfishReading] | None:
    """One sensor for all GPUs whose OEM block holds each GPU's value as a string (``{"GPU1": "45.5"}``).

    The GPU physical context gives die temperatures, ``Memory`` with a GPU/HBM name HBM
    temperatures; the sensor's own ``Reading`` (an aggregate) is not a GPU's.  None when the
    sensor is not of that kind.  GPU numbers are 0-based when any key says 0, else 1-based.
    """
    context = doc.get("PhysicalContext")
    is_gpu = context in _GPU_CONTEXTS
    is_hbm = context == "Memory" and bool(_GPU_NAME.search(name))
    if unit != "C" or not (is_gpu or is_hbm) or not isinstance(doc.get("Oem"), dict):
        return None
    values: dict[int, float] = {}
    for block in doc["Oem"].values():
        if isinstance(block, dict):
            for key, value in block.items():
                number = names.oem_gpu_number(str(key))
                if number is not None and not isinstance(value, (dict, list)):
                    values[number] = _reading(value)
    if not values:
        return None
    base = 0 if 0 in values else 1
    metric = "hbm_temp_c" if is_hbm or _HBM_NAME.search(name) else "gpu_temp_c"
    owner = _owner(uri)
    return [
        RedfishReading(f"{uri}#/Oem/GPU{n}", "gpu", owner, n - base, "", metric, v, "sensor")
        for n, v in sorted(values.items())
    ]


def _gpu_context_readings(entries: list, uri: str, gpus: GpuMap, counts: IngestCounts) -> tuple[list, set]:
    """Readings of temperatures whose ``PhysicalContext`` is a GPU but whose names no rule knows.

    HGX BMCs of server vendors (e.g. Supermicro) name GPU sensors freely but tag them with
    ``PhysicalContext: GPU``; the HBM one carries "HBM"/"Mem"/"DRAM" in its name.  Without a
    ``RelatedItem`` the number in the name is the GPU: 0-based when any GPU entry of the
    document says 0, else 1-based (the slot numbering BMCs use).
    """
    gpu_entries = [
        (i, t)
        for i, t in enumerate(entries)
        if isinstance(t, dict)
        and t.get("PhysicalContext") in _GPU_CONTEXTS
        and match_sensor(str(t.get("Name") or t.get("MemberId") or "")) is None
    ]
    names = [str(t.get("Name") or t.get("MemberId") or "") for _, t in gpu_entries]
    base = 0 if any(_digits(n) == 0 for n in names) else 1
    out, used = [], set()
    for (i, t), name in zip(gpu_entries, names):
        index = _gpu_context_index(t, name, gpus, base)
        if _HEADROOM.search(name) or re.search(r"T\.?LIMIT", name, re.IGNORECASE) or index < 0:
            continue
        metric = "hbm_temp_c" if _HBM_NAME.search(name) else "gpu_temp_c"
        out.append(
            RedfishReading(
                f"{uri}#/Temperatures/{i}",
                "gpu",
                _owner(uri),
                index,
                "",
                metric,
                _reading(t.get("ReadingCelsius")),
                "legacy",
            )
        )
        used.add(i)
    return out, used


def _one_gpu_thermal(temps: list, uri: str, gpu: int, counts: IngestCounts) -> list[RedfishReading]:
    """A ``Thermal`` resource of one GPU (Dell: ``Processors/<GPU>/Oem/Dell/ThermalMetrics``): die and memory by name."""
    out = []
    for i, t in enumerate(temps):
        name = str(t.get("Name") or t.get("MemberId") or f"Temperature{i}")
        metric = names.gpu_thermal_metric(name)
        if metric is None:
            counts.unmapped_series += 1
            counts.unmapped_names[name] += 1
            continue
        value = _reading(t.get("ReadingCelsius"))
        out.append(RedfishReading(f"{uri}#/Temperatures/{i}", "gpu", _owner(uri), gpu, "", metric, value, "legacy"))
    return out


def _parse_thermal(doc: dict, uri: str, counts: IngestCounts, gpus: GpuMap) -> list[RedfishReading]:
    temps = doc.get("Temperatures") or []
    if not isinstance(temps, list):
        raise TypeError(f"Temperatures is a {type(temps).__name__}, not a list")
    gpu = _gpu_index(uri, gpus) if "/Processors/" in uri else -1
    if gpu >= 0:
        return _one_gpu_thermal(temps, uri, gpu, counts)
    out, by_context = _gpu_context_readings(temps, uri, gpus, counts)
    for i, t in enumerate(temps):
        if i in by_context:
            continue
        name = t.get("Name") or t.get("MemberId") or f"Temperature{i}"
        r = _sensor_reading(name, _reading(t.get("ReadingCelsius")), "C", f"{uri}#/Temperatures/{i}", "legacy", counts)
        if r:
            out.append(r)
    for i, f in enumerate(doc.get("Fans") or []):
        name = f.get("Name") or f.get("FanName") or f.get("MemberId") or f"Fan{i}"
        unit = normalise_unit(f.get("ReadingUnits")) or "RPM"
        if unit != "RPM":
            counts.unmapped_series += 1
            counts.unmapped_names[f"{name} [{unit}]"] += 1
            continue
        out.append(
            RedfishReading(
                f"{uri}#/Fans/{i}", "node", _owner(uri), -1, name, "fan_speed_rpm", _reading(f.get("Reading")), "legacy"
            )
        )
    return out


def _parse_fan(doc: dict, uri: str, counts: IngestCounts, gpus: GpuMap) -> list[RedfishReading]:
    """New-model ``ThermalSubsystem/Fans/{id}``: ``SpeedPercent.SpeedRPM`` (percent alone is not rpm)."""
    name = str(doc.get("Name") or doc.get("Id") or uri.rsplit("/", 1)[-1])
    speed = doc.get("SpeedPercent")
    if isinstance(speed, dict) and "SpeedRPM" in speed:
        return [
            RedfishReading(
                uri, "node", _owner(uri), -1, name, "fan_speed_rpm", _reading(speed.get("SpeedRPM")), "metrics"
            )
        ]
    counts.unmapped_series += 1
    counts.unmapped_names[f"{name} [%]"] += 1
    return []


def _parse_thermal_metrics(doc: dict, uri: str, counts: IngestCounts, gpus: GpuMap) -> list[RedfishReading]:
    """``ThermalMetrics``: the intake summary, and named readings through the sensor table."""
    out = []
    summary = doc.get("TemperatureSummaryCelsius") or {}
    intake = summary.get("Intake") if isinstance(summary, dict) else None
    if isinstance(intake, dict):
        out.append(
            RedfishReading(
                uri, "node", _owner(uri), -1, "TemperatureSummary.Intake", "inlet_temp_c", _reading(intake), "metrics"
            )
        )
    for i, t in enumerate(doc.get("TemperatureReadingsCelsius") or []):
        name = str(t.get("DataSourceUri") or "").rsplit("/", 1)[-1] or str(t.get("DeviceName") or f"Temperature{i}")
        r = _sensor_reading(name, _reading(t), "C", f"{uri}#/TemperatureReadingsCelsius/{i}", "metrics", counts)
        if r:
            out.append(r)
    return out


def _digits(text: str, base: int = 0) -> int:
    d = re.findall(r"\d+", text or "")
    if not d or len(d[-1]) > 9:  # no number, or none that can be an instance index
        return -1
    return int(d[-1]) - base


def _parse_power(doc: dict, uri: str, counts: IngestCounts, gpus: GpuMap) -> list[RedfishReading]:
    out = []
    owner = _owner(uri)
    gpu = _gpu_index(uri, gpus) if "/Processors/" in uri else -1
    if gpu >= 0:  # a GPU's own Power resource (Dell: Processors/<GPU>/Oem/Dell/PowerMetrics)
        return [
            RedfishReading(
                f"{uri}#/PowerControl/{i}",
                "gpu",
                owner,
                gpu,
                "",
                "gpu_power_w",
                _reading(pc.get("PowerConsumedWatts")),
                "legacy",
            )
            for i, pc in enumerate(doc.get("PowerControl") or [])
            if isinstance(pc, dict)
        ][:1]
    for i, pc in enumerate(doc.get("PowerControl") or []):
        if i == 0:
            out.append(
                RedfishReading(
                    f"{uri}#/PowerControl/0",
                    "node",
                    owner,
                    -1,
                    "PowerControl",
                    "node_power_w",
                    _reading(pc.get("PowerConsumedWatts")),
                    "legacy",
                )
            )
    for i, ps in enumerate(doc.get("PowerSupplies") or []):
        value = _reading(ps.get("PowerInputWatts"))
        if math.isnan(value):
            value = _reading(ps.get("LastPowerOutputWatts"))
        out.append(RedfishReading(f"{uri}#/PowerSupplies/{i}", "psu", owner, i, "", "psu_power_w", value, "legacy"))
    n_volt = len(doc.get("Voltages") or [])
    if n_volt:
        counts.unmapped_series += n_volt
        counts.unmapped_names["Power.Voltages"] += n_volt
    return out


def _psu_index(uri: str) -> int:
    m = re.search(r"/PowerSupplies/([^/#]+)", uri)
    return _digits(m.group(1)) if m else -1


def _parse_psu(doc: dict, uri: str, counts: IngestCounts, gpus: GpuMap) -> list[RedfishReading]:
    if "/PowerEquipment/" in uri:
        return []  # power-shelf supplies are not node PSUs
    value = _reading(doc.get("InputPowerWatts"))
    if math.isnan(value):
        return []
    return [RedfishReading(uri, "psu", _owner(uri), _psu_index(uri), "", "psu_power_w", value, "metrics")]


def _parse_environment(doc: dict, uri: str, counts: IngestCounts, gpus: GpuMap) -> list[RedfishReading]:
    gpu = _gpu_index(uri, gpus)
    if gpu < 0:
        # chassis / CDU / PDU environment: nothing the twin tracks by name here
        return []
    out = []
    owner = _owner(uri)
    temp = doc.get("TemperatureCelsius")
    if isinstance(temp, dict):
        if _HEADROOM.search(str(temp.get("DataSourceUri", ""))):
            counts.unmapped_series += 1
            counts.unmapped_names["EnvironmentMetrics.TemperatureCelsius (T.Limit headroom)"] += 1
        else:
            out.append(RedfishReading(uri, "gpu", owner, gpu, "", "gpu_temp_c", _reading(temp), "metrics"))
    for key, metric in (("PowerWatts", "gpu_power_w"), ("EnergyJoules", "gpu_energy_j")):
        if key in doc:
            out.append(RedfishReading(uri, "gpu", owner, gpu, "", metric, _reading(doc[key]), "metrics"))
    limit = doc.get("PowerLimitWatts")
    if isinstance(limit, dict) and "SetPoint" in limit:
        out.append(
            RedfishReading(uri, "gpu", owner, gpu, "", "power_limit_w", _reading(limit.get("SetPoint")), "metrics")
        )
    return out


def _parse_dell_gpu_sensor(doc: dict, uri: str, counts: IngestCounts, gpus: GpuMap) -> list[RedfishReading]:
    """Dell's ``DellGPUSensor`` (``Systems/…/Oem/Dell/DellGPUSensors/<device>``): die, memory and power of one GPU."""
    device = str(doc.get("DeviceID") or doc.get("Id") or "")
    gpu = next((i for u, (i, _) in gpus.items() if u.rsplit("/", 1)[-1] == device), -1)
    if gpu < 0:
        counts.unmapped_entities += 1
        return []
    out = []
    for key, fm in names.DELL_GPU_SENSOR_FIELDS.items():
        if key in doc:
            value = _reading(doc[key]) * fm.scale
            out.append(RedfishReading(uri, "gpu", _owner(uri), gpu, "", fm.canonical, value, "metrics"))
    return out


def _parse_processor_metrics(doc: dict, uri: str, counts: IngestCounts, gpus: GpuMap) -> list[RedfishReading]:
    gpu = _gpu_index(uri, gpus)
    if gpu < 0:
        return []
    out = []
    owner = _owner(uri)
    if "OperatingSpeedMHz" in doc:
        out.append(
            RedfishReading(uri, "gpu", owner, gpu, "", "sm_clock_mhz", _reading(doc["OperatingSpeedMHz"]), "metrics")
        )
    reasons = ((doc.get("Oem") or {}).get("Nvidia") or {}).get("ThrottleReasons")
    if isinstance(reasons, list) and all(r in THROTTLE_BITS for r in reasons):
        mask = 0
        for r in reasons:
            mask |= THROTTLE_BITS[r]
        out.append(RedfishReading(uri, "gpu", owner, gpu, "", "clock_event_mask", float(mask), "metrics"))
    elif isinstance(reasons, list):
        counts.unmapped_names[f"ThrottleReasons {reasons}"] += 1
        counts.unmapped_series += 1
    return out


def _parse_port_metrics(doc: dict, uri: str, counts: IngestCounts, gpus: GpuMap) -> list[RedfishReading]:
    gpu = _gpu_index(uri, gpus)
    errors = ((doc.get("Oem") or {}).get("Nvidia") or {}).get("NVLinkErrors")
    if gpu < 0 or not isinstance(errors, dict) or "FlitCRCCount" not in errors:
        return []
    port = re.search(r"/Ports/([^/#]+)", uri)
    return [
        RedfishReading(
            uri,
            "gpu",
            _owner(uri),
            gpu,
            port.group(1) if port else "",
            "nvlink_crc_error_total",
            _reading(errors["FlitCRCCount"]),
            "metrics",
        )
    ]


def _cdu_name(uri: str) -> str:
    m = _CDU.search(uri)
    return f"CDUs/{m.group(1)}" if m else ""


_CONNECTOR_FIELDS = {
    "secondary": (
        ("SupplyTemperatureCelsius", "coolant_supply_temp_c", 1.0),
        ("ReturnTemperatureCelsius", "coolant_return_temp_c", 1.0),
        ("FlowLitersPerMinute", "coolant_flow_lpm", 1.0),
        ("DeltaTemperatureCelsius", "coolant_delta_t_k", 1.0),
        ("DeltaPressurekPa", "coolant_pressure_kpa", 1.0),
        ("HeatRemovedkW", "cdu_heat_kw", 1.0),
    ),
    "primary": (
        ("SupplyTemperatureCelsius", "facility_supply_temp_c", 1.0),
        ("ReturnTemperatureCelsius", "facility_return_temp_c", 1.0),
        ("FlowLitersPerMinute", "facility_flow_lpm", 1.0),
    ),
}


def _parse_connector(doc: dict, uri: str, counts: IngestCounts, gpus: GpuMap) -> list[RedfishReading]:
    cdu = _cdu_name(uri)
    if not cdu:
        return []  # a server cold-plate connector: not a CDU quantity
    side = (
        "secondary"
        if "/SecondaryCoolantConnectors/" in uri
        else "primary"
        if "/PrimaryCoolantConnectors/" in uri
        else ""
    )
    if not side:
        return []
    return [
        RedfishReading(uri, "cdu", cdu, -1, "", metric, _reading(doc[key]) * scale, "metrics")
        for key, metric, scale in _CONNECTOR_FIELDS[side]
        if key in doc
    ]


def _parse_cooling_unit(doc: dict, uri: str, counts: IngestCounts, gpus: GpuMap) -> list[RedfishReading]:
    cdu = _cdu_name(uri)
    if not cdu or "CoolingCapacityWatts" not in doc:
        return []
    return [
        RedfishReading(
            uri, "cdu", cdu, -1, "", "cdu_capacity_kw", _reading(doc["CoolingCapacityWatts"]) / 1000.0, "metrics"
        )
    ]


def _parse_pump(doc: dict, uri: str, counts: IngestCounts, gpus: GpuMap) -> list[RedfishReading]:
    cdu = _cdu_name(uri)
    if not cdu:
        return []
    pid = uri.rstrip("/").rsplit("/", 1)[-1]
    index = _digits(pid)
    speed = _reading(doc.get("PumpSpeedPercent")) / 100.0
    state = (doc.get("Status") or {}).get("State", "Enabled")
    running = 1.0 if state == "Enabled" and speed > 0 else 0.0
    # "pump_running" is rolled up into pumps_running_count by to_samples
    return [
        RedfishReading(uri, "pump", cdu, index, "", "pump_speed_frac", speed, "metrics"),
        RedfishReading(uri, "cdu", cdu, -1, f"pump{pid}", "pumps_running_count", running, "rollup_sum"),
    ]


_LEAK_STATE = {"OK": 0.0, "Warning": 1.0, "Critical": 1.0}


def _parse_leak_detector(doc: dict, uri: str, counts: IngestCounts, gpus: GpuMap) -> list[RedfishReading]:
    cdu = _cdu_name(uri)
    if not cdu:
        return []
    state = doc.get("DetectorState")
    value = _LEAK_STATE.get(state, math.nan) if state is not None else math.nan
    return [RedfishReading(uri, "cdu", cdu, -1, uri.rsplit("/", 1)[-1], "leak_detected_flag", value, "rollup_max")]


def _parse_leak_detection(doc: dict, uri: str, counts: IngestCounts, gpus: GpuMap) -> list[RedfishReading]:
    """``LeakDetection.LeakDetectorGroups[].Detectors[]`` excerpts carry each detector's state."""
    cdu = _cdu_name(uri)
    if not cdu:
        return []
    out = []
    for group in doc.get("LeakDetectorGroups") or []:
        for d in group.get("Detectors") or []:
            state = d.get("DetectorState")
            value = _LEAK_STATE.get(state, math.nan) if state is not None else math.nan
            name = d.get("DeviceName") or str(d.get("DataSourceUri", "")).rsplit("/", 1)[-1]
            out.append(RedfishReading(uri, "cdu", cdu, -1, name, "leak_detected_flag", value, "rollup_max"))
    return out


def _pdu_name(uri: str) -> str:
    m = _PDU.search(uri)
    return f"{m.group(1)}/{m.group(2)}" if m else ""


def _parse_power_distribution_metrics(doc: dict, uri: str, counts: IngestCounts, gpus: GpuMap) -> list[RedfishReading]:
    pdu = _pdu_name(uri)
    if not pdu or "PowerWatts" not in doc:
        return []
    return [
        RedfishReading(
            uri, "power_element", pdu, -1, "", "feed_power_kw", _reading(doc["PowerWatts"]) / 1000.0, "metrics"
        )
    ]


def _parse_circuit_or_outlet(doc: dict, uri: str, counts: IngestCounts, gpus: GpuMap) -> list[RedfishReading]:
    pdu = _pdu_name(uri)
    if not pdu:
        return []
    sub = uri.split(pdu, 1)[-1].strip("/")
    out = []
    for key, metric, scale in (
        ("PowerWatts", "feed_power_kw", 1e-3),
        ("CurrentAmps", "feed_current_a", 1.0),
        ("Voltage", "feed_voltage_v", 1.0),
    ):
        if key in doc:
            out.append(
                RedfishReading(uri, "power_element", pdu, -1, sub, metric, _reading(doc[key]) * scale, "metrics")
            )
    return out


def _parse_metric_report(doc: dict, uri: str, counts: IngestCounts, gpus: GpuMap) -> list[RedfishReading]:
    out = []
    for mv in doc.get("MetricValues") or []:
        prop = str(mv.get("MetricProperty") or mv.get("MetricId") or "")
        path = prop.split("#", 1)[0]
        if "/Sensors/" not in path:
            counts.unmapped_series += 1
            counts.unmapped_names[prop[-60:] or "<no MetricProperty>"] += 1
            continue
        value = _reading(mv.get("MetricValue"))
        if ((mv.get("Oem") or {}).get("Nvidia") or {}).get("MetricValueStale"):
            counts.stale_values += 1  # not refreshed in the last sensing interval: the last reading held
        r = _sensor_reading(path.rsplit("/", 1)[-1], value, "", path, "report", counts)
        if r:
            out.append(r)
    return out


def _parse_log_entries(doc: dict, uri: str, counts: IngestCounts, gpus: GpuMap) -> list[RedfishReading]:
    entries = doc.get("Members") if odata_type(doc) == "LogEntryCollection" else [doc]
    last: dict[int, tuple[str, int, str]] = {}
    for e in entries or []:
        if not isinstance(e, dict) or "Message" not in e:
            continue
        m = _XID.search(str(e.get("Message", "")))
        if m is None:
            continue
        origin = json.dumps(e.get("Links") or {}) + str(e.get("@odata.id", "")) + uri + str(e.get("Message", ""))
        gpu = _gpu_index(origin)
        if gpu < 0:
            continue
        created = str(e.get("Created", ""))
        if gpu not in last or created >= last[gpu][0]:
            last[gpu] = (created, int(m.group(1)), str(e.get("@odata.id", uri)))
    return [
        RedfishReading(u, "gpu", _owner(u), g, "", "last_xid_code", float(code), "log")
        for g, (_, code, u) in last.items()
    ]


_PARSERS = {
    "Sensor": _parse_sensor,
    "Thermal": _parse_thermal,
    "ThermalMetrics": _parse_thermal_metrics,
    "Fan": _parse_fan,
    "Power": _parse_power,
    "PowerSupply": _parse_psu,
    "PowerSupplyMetrics": _parse_psu,
    "EnvironmentMetrics": _parse_environment,
    "ProcessorMetrics": _parse_processor_metrics,
    "DellGPUSensor": _parse_dell_gpu_sensor,
    "PortMetrics": _parse_port_metrics,
    "CoolantConnector": _parse_connector,
    "CoolingUnit": _parse_cooling_unit,
    "Pump": _parse_pump,
    "LeakDetector": _parse_leak_detector,
    "LeakDetection": _parse_leak_detection,
    "PowerDistributionMetrics": _parse_power_distribution_metrics,
    "Circuit": _parse_circuit_or_outlet,
    "Outlet": _parse_circuit_or_outlet,
    "MetricReport": _parse_metric_report,
    "LogEntry": _parse_log_entries,
    "LogEntryCollection": _parse_log_entries,
}


def parse_resource(
    doc: dict, uri: str | None = None, counts: IngestCounts | None = None, gpus: GpuMap | None = None
) -> list[RedfishReading]:
    """Readings in one resource (empty for resources that carry none).  Never raises on odd JSON.

    ``gpus`` (from :func:`gpu_processors`) tells which processors are GPUs; without it
    GPU sub-resources are recognised by HGX/``GPU…`` names in the URI.
    """
    counts = counts if counts is not None else IngestCounts()
    if not isinstance(doc, dict):
        counts.malformed_lines += 1
        return []
    uri = str(doc.get("@odata.id") or uri or "")
    parser = _PARSERS.get(odata_type(doc))
    if parser is None:
        return []
    counts.lines += 1
    try:
        return parser(doc, uri, counts, gpus or {})
    except (AttributeError, TypeError, ValueError) as exc:  # a vendor shape we did not expect
        counts.malformed_lines += 1
        log.debug("redfish: %s (%s) not understood: %s", uri, odata_type(doc), exc)
        return []


def load_document(text: str | bytes, where: str = "") -> tuple[dict | None, str]:
    """JSON text → ``(doc, "")`` or ``(None, error naming the problem)``."""
    try:
        doc = load_json(text, MAX_DEPTH)
    except JsonError as exc:
        return None, f"{where or 'document'}: invalid JSON: {exc}"
    if not isinstance(doc, dict):
        return None, f"{where or 'document'}: JSON is a {type(doc).__name__}, not an object"
    return doc, ""


def _better(new: RedfishReading, old: RedfishReading) -> bool:
    """A reading with a value beats one without (a null in a higher-priority view); then the priority."""
    if math.isnan(new.value) != math.isnan(old.value):
        return math.isnan(old.value)
    return _PRIORITY.get(new.via, 0) >= _PRIORITY.get(old.via, 0)


def to_samples(readings: list[RedfishReading], host: str, counts: IngestCounts | None = None) -> SampleBatch:
    """Readings of one Redfish service → samples.

    ``host`` names the service (the node's BMC for servers; the CDU or PDU controller for
    facility equipment).  Node, GPU and PSU readings belong to ``host``; CDU, pump and
    power-element readings keep their equipment name (``CDUs/1``) as ``name``.
    """
    b = BatchBuilder("redfish")
    if counts is not None:
        b.counts.merge(counts)
    best: dict[tuple, RedfishReading] = {}
    sums: dict[tuple, list[float]] = {}
    for r in readings:
        if r.via in ("rollup_sum", "rollup_max"):
            sums.setdefault((r.kind, r.owner, r.metric, r.via), []).append(r.value)
            continue
        key = (r.kind, r.owner if r.kind in ("cdu", "pump", "power_element") else "", r.index, r.name, r.metric)
        old = best.get(key)
        if old is None or _better(r, old):
            best[key] = r
    for (kind, owner, metric, via), values in sums.items():
        finite = [v for v in values if not math.isnan(v)]
        value = (sum(finite) if via == "rollup_sum" else max(finite)) if finite else math.nan
        b.add(kind, host, metric, value, name=owner)
    for (kind, equipment, index, name, metric), r in best.items():
        if kind in ("cdu", "pump", "power_element"):
            b.add(kind, host, metric, r.value, index=index, name=f"{equipment}/{name}" if name else equipment)
        else:
            b.add(kind, host, metric, r.value, index=index, name=name, uuid=r.uuid)
    return b.build()


# --- crawler --------------------------------------------------------------------------
_SKIP = re.compile(
    r"/(AccountService|SessionService|Registries|JsonSchemas|EventService|TaskService|UpdateService|"
    r"CertificateService|KeyService|\$metadata|odata|Actions|Assembly|Certificates|SecureBoot|Bios)\b"
)


@dataclass
class CrawlResult:
    """Documents fetched by :func:`crawl` and what went wrong on the way."""

    docs: dict[str, dict] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)  # uri → error
    attempts: int = 0
    truncated: bool = False  # the page budget ran out


def links(doc, depth_limit: int = 12) -> list[str]:
    """Every ``@odata.id`` and ``Members@odata.nextLink`` inside ``doc`` (fragments removed)."""
    out: list[str] = []
    stack = [(doc, 0)]
    while stack:
        node, d = stack.pop()
        if d > depth_limit:
            continue
        if isinstance(node, dict):
            for k, v in node.items():
                if k in ("@odata.id", "Members@odata.nextLink", "@odata.nextLink") and isinstance(v, str):
                    out.append(v.split("#", 1)[0])
                elif isinstance(v, (dict, list)):
                    stack.append((v, d + 1))
        elif isinstance(node, list):
            stack.extend((v, d + 1) for v in node)
    return out


def crawl(
    base_url: str,
    *,
    start: str = ROOT,
    max_pages: int = 3000,
    max_depth: int = 10,
    crawl_deadline_s: float = CRAWL_DEADLINE_S,
    fetch=None,
    **http_kw,
) -> CrawlResult:
    """Breadth-first walk from ``start`` following ``@odata.id`` links, within budgets.

    ``max_pages`` bounds the GETs, ``max_depth`` the link distance from the root and
    ``crawl_deadline_s`` the seconds of the whole walk (each page is bounded by
    ``timeout_s`` and ``max_bytes``, default :data:`MAX_BYTES`).  Paginated collections
    are followed through ``Members@odata.nextLink``.  A failing page is recorded in
    ``errors`` and the walk goes on.  ``fetch(url) -> (text, attempts)`` may replace
    HTTP (tests, captured trees).
    """
    result = CrawlResult()
    seen = {start}
    queue: deque[tuple[str, int]] = deque([(start, 0)])
    origin = base_url.rstrip("/")
    prefix = start.rstrip("/")  # "/redfish/v1", or "/hmc/redfish/v1" for a proxied HMC tree
    end_s = time.monotonic() + crawl_deadline_s
    http_kw = {"max_bytes": MAX_BYTES, **http_kw}
    own_session = fetch is None and "session" not in http_kw
    if own_session:
        http_kw["session"] = http.Session()  # one connection for the whole walk

    def http_fetch(url: str) -> tuple[str, int]:
        r = http.get(
            url,
            **{**http_kw, "deadline_s": min(http_kw.get("deadline_s", math.inf), max(end_s - time.monotonic(), 0.01))},
        )
        return r.text, r.attempts

    get = fetch or http_fetch
    try:
        while queue and _within_budget(result, len(queue), max_pages, end_s, crawl_deadline_s, base_url):
            path, depth = queue.popleft()
            url = urljoin(origin + "/", path.lstrip("/")) if not path.startswith("http") else path
            try:
                text, attempts = get(url)
            except http.FetchError as exc:
                result.attempts += exc.attempts
                result.errors[path] = str(exc)
                continue
            result.attempts += attempts
            doc, err = load_document(text, path)
            if doc is None:
                result.errors[path] = err
                continue
            result.docs[path] = doc
            if depth < max_depth:
                _queue_links(doc, depth + 1, prefix, seen, queue)
    finally:
        if own_session:
            http_kw["session"].close()
    return result


def _within_budget(
    result: CrawlResult, queued: int, max_pages: int, end_s: float, crawl_deadline_s: float, base_url: str
) -> bool:
    """Whether the walk may fetch another page; marks ``result`` truncated (and logs why) when not."""
    if len(result.docs) + len(result.errors) >= max_pages:
        result.truncated = True
        log.debug(
            "redfish: page budget %d reached at %s; %d link(s) not followed", max_pages, redact_url(base_url), queued
        )
        return False
    if time.monotonic() >= end_s:
        result.truncated = True
        log.debug(
            "redfish: crawl deadline %g s reached at %s; %d link(s) not followed",
            crawl_deadline_s,
            redact_url(base_url),
            queued,
        )
        return False
    return True


def _queue_links(doc, depth: int, prefix: str, seen: set[str], queue: deque[tuple[str, int]]) -> None:
    """Queue the links of ``doc`` under ``prefix`` not seen yet (nor skipped), at link distance ``depth``."""
    for link in links(doc):
        p = urlparse(link)
        link_path = p.path + (f"?{p.query}" if p.query else "")
        if not link_path.startswith(prefix) or link_path in seen or _SKIP.search(link_path):
            continue
        seen.add(link_path)
        queue.append((link_path, depth))


def parse_tree(docs: dict[str, dict], host: str, counts: IngestCounts | None = None) -> SampleBatch:
    """All documents of one service (``uri → doc``) → samples for ``host``."""
    counts = counts if counts is not None else IngestCounts()
    gpus = gpu_processors(docs)
    readings: list[RedfishReading] = []
    for uri, doc in docs.items():
        readings.extend(parse_resource(doc, uri, counts, gpus))
    uuid_of = {idx: uuid for idx, uuid in gpus.values() if uuid}
    for r in readings:
        if r.kind == "gpu" and r.index in uuid_of:
            r.uuid = uuid_of[r.index]
    return to_samples(readings, host, counts)


def fetch_redfish(base_url: str, host: str | None = None, **kw) -> FetchResult:
    """Crawl a Redfish service and normalise it; never raises.  ``ok`` needs the root page."""
    t0 = time.monotonic()
    name = host or (urlparse(base_url).hostname or base_url)
    res = crawl(base_url, **kw)
    start = kw.get("start", ROOT)
    if start not in res.docs:
        return failed(
            "redfish", base_url, res.errors.get(start, "service root not read"), res.attempts, time.monotonic() - t0
        )
    counts = IngestCounts(malformed_lines=len(res.errors))
    batch = parse_tree(res.docs, name, counts)
    warnings = [f"{u}: {e}" for u, e in list(res.errors.items())[:20]]
    if res.truncated:
        warnings.append("page or time budget reached: tree only partly read")
    return FetchResult("redfish", base_url, True, batch, res.attempts, "", time.monotonic() - t0, warnings)
