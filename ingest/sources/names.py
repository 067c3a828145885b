"""Vendor → canonical name tables: every source's field names, scales and units in one place.

Each source (dcgm-exporter, Prometheus, Redfish, IPMI) names its fields its own way.
The tables below turn a vendor name into a canonical quantity of
:mod:`twin.quantities` and a factor that converts the vendor unit into the canonical
unit (``canonical = vendor * scale``).  Nothing outside ``ingest/`` sees vendor names.

Field meanings and units follow the DCGM field list and the dcgm-exporter CSVs
(``DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION`` is mJ, ``DCGM_FI_DEV_GPU_UTIL`` is percent,
``DCGM_FI_PROF_*`` are 0–1 ratios), the Redfish schemas (DSP2046) and the BMC sensor
names of an NVIDIA DGX H100 (AMI host BMC; the same names serve IPMI and Redfish).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from twin.quantities import BY_NAME


@dataclass(frozen=True)
class FieldMap:
    """How one vendor field becomes a canonical quantity.

    ``scale`` multiplies the vendor value into the canonical unit.  ``counter`` marks
    monotone counters (reset detection applies).  ``zero_is_missing`` marks fields
    where 0 means "not supported" (HBM temperature on GDDR parts and vGPU guests).
    """

    canonical: str
    scale: float = 1.0
    vendor_unit: str = ""
    counter: bool = False
    zero_is_missing: bool = False


def _check(table: dict[str, FieldMap]) -> dict[str, FieldMap]:
    for vendor, fm in table.items():
        if fm.canonical not in BY_NAME:
            raise KeyError(f"{vendor} maps to {fm.canonical!r}, which is not in twin/quantities.py")
    return table


# --- DCGM / dcgm-exporter ------------------------------------------------------------
# Current exporter names, old names of renamed fields, DCGM 4 canonical aliases and the
# lowercase 1.x exporter names (etc/1.x-compatibility-metrics.csv).
_TEMP = FieldMap("gpu_temp_c", 1.0, "°C")
_HBM = FieldMap("hbm_temp_c", 1.0, "°C", zero_is_missing=True)
_POWER = FieldMap("gpu_power_w", 1.0, "W")
_ENERGY_MJ = FieldMap("gpu_energy_j", 1e-3, "mJ", counter=True)
_UTIL_PCT = FieldMap("gpu_util_frac", 0.01, "%")
_TENSOR = FieldMap("tensor_active_frac", 1.0, "1")
_SMCLK = FieldMap("sm_clock_mhz", 1.0, "MHz")
_MEMCLK = FieldMap("mem_clock_mhz", 1.0, "MHz")
_PLIMIT = FieldMap("power_limit_w", 1.0, "W")
_FBUSED = FieldMap("fb_used_mib", 1.0, "MiB")
_CLOCKEV = FieldMap("clock_event_mask", 1.0, "bitmask")
_XID = FieldMap("last_xid_code", 1.0, "code")
_DBE = FieldMap("ecc_dbe_total", 1.0, "count", counter=True)
_REPLAY = FieldMap("pcie_replay_total", 1.0, "count", counter=True)
_NVCRC = FieldMap("nvlink_crc_error_total", 1.0, "count", counter=True)

DCGM_FIELDS: dict[str, FieldMap] = _check(
    {
        "DCGM_FI_DEV_GPU_TEMP": _TEMP,
        "DCGM_FI_DEV_GPU_TEMP_CELSIUS": _TEMP,
        "dcgm_gpu_temp": _TEMP,
        "DCGM_FI_DEV_MEMORY_TEMP": _HBM,
        "dcgm_memory_temp": _HBM,
        "DCGM_FI_DEV_POWER_USAGE": _POWER,
        "DCGM_FI_DEV_BOARD_POWER_WATTS": _POWER,
        "dcgm_power_usage": _POWER,
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": _ENERGY_MJ,
        "dcgm_total_energy_consumption": _ENERGY_MJ,
        "DCGM_FI_DEV_GPU_UTIL": _UTIL_PCT,
        "dcgm_gpu_utilization": _UTIL_PCT,
        # DCGM 4 ratio field (0–1).  Sources disagree whether it is a new id or an alias of
        # the percent field 203; the range check turns a percent value into NaN, not 50×.
        "DCGM_FI_DEV_GPU_UTIL_RATIO": FieldMap("gpu_util_frac", 1.0, "1"),
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": _TENSOR,
        "DCGM_FI_PROF_TENSOR_UTIL_RATIO": _TENSOR,
        "dcgm_fi_prof_pipe_tensor_active": _TENSOR,
        "DCGM_FI_DEV_SM_CLOCK": _SMCLK,
        "dcgm_sm_clock": _SMCLK,
        "DCGM_FI_DEV_MEM_CLOCK": _MEMCLK,
        "dcgm_memory_clock": _MEMCLK,
        "DCGM_FI_DEV_ENFORCED_POWER_LIMIT": _PLIMIT,
        "DCGM_FI_DEV_POWER_MGMT_LIMIT": _PLIMIT,
        "DCGM_FI_DEV_FB_USED": _FBUSED,
        "dcgm_fb_used": _FBUSED,
        "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": _CLOCKEV,
        "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": _CLOCKEV,
        "dcgm_clock_throttle_reasons": _CLOCKEV,
        "DCGM_FI_DEV_XID_ERRORS": _XID,
        "dcgm_xid_errors": _XID,
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": _DBE,
        "dcgm_ecc_dbe_volatile_total": _DBE,
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": _REPLAY,
        "dcgm_pcie_replay_counter": _REPLAY,
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL": _NVCRC,
        "dcgm_nvlink_flit_crc_error_count_total": _NVCRC,
    }
)

# DCGM in-band "no value" sentinels (dcgm_structs.h): the blank value and the next few
# codes above it (NOT_FOUND, NOT_SUPPORTED, NOT_PERMISSIONED, ...).
DCGM_INT32_BLANK = 0x7FFFFFF0  # 2147483632
DCGM_INT64_BLANK = float(0x7FFFFFFFFFFFFFF0)  # 9223372036854775792 (as a double)
DCGM_FP64_BLANK = 140737488355328.0  # 2**47
_SENTINEL_SPAN = 16


def dcgm_blank_mask(values, counter_field: bool = False):
    """Boolean mask of DCGM blank/error sentinels in a float array.

    The int32 sentinel range (2147483632–2147483647) is only checked on non-counter
    fields: a counter such as the mJ energy counter legitimately passes 2^31.
    """
    import numpy as np

    v = np.asarray(values, dtype=np.float64)
    mask = (v >= DCGM_FP64_BLANK) & (v < DCGM_FP64_BLANK + _SENTINEL_SPAN)
    mask |= (v >= DCGM_INT64_BLANK * (1 - 1e-15)) & np.isfinite(v)
    if not counter_field:
        mask |= (v >= DCGM_INT32_BLANK) & (v < DCGM_INT32_BLANK + _SENTINEL_SPAN)
    return mask


# --- physically possible ranges (canonical units) ----------------------------------------
# A value outside becomes NaN and is counted: dcgm-exporter 3.3.5 reported GPU temperatures
# of 345 / 82505 / 644245923 °C (issue #312); sensors glitch the same way elsewhere.
_INF = math.inf
VALID_RANGE: dict[str, tuple[float, float]] = {
    "gpu_temp_c": (-40.0, 150.0),
    "hbm_temp_c": (-40.0, 150.0),
    "gpu_power_w": (0.0, 2000.0),
    "gpu_energy_j": (0.0, _INF),
    "gpu_util_frac": (0.0, 1.0),
    "tensor_active_frac": (0.0, 1.0),
    "sm_clock_mhz": (0.0, 10000.0),
    "mem_clock_mhz": (0.0, 50000.0),
    "power_limit_w": (0.0, 2000.0),
    "fb_used_mib": (0.0, 1e7),
    "clock_event_mask": (0.0, 2.0**32),
    "last_xid_code": (0.0, 65535.0),
    "ecc_dbe_total": (0.0, _INF),
    "pcie_replay_total": (0.0, _INF),
    "nvlink_crc_error_total": (0.0, _INF),
    "node_power_w": (0.0, 100000.0),
    "cpu_temp_c": (-40.0, 150.0),
    "inlet_temp_c": (-40.0, 100.0),
    "fan_speed_rpm": (0.0, 100000.0),
    "psu_power_w": (0.0, 20000.0),
    "rack_power_kw": (0.0, 10000.0),
    "coolant_supply_temp_c": (-20.0, 120.0),
    "coolant_return_temp_c": (-20.0, 120.0),
    "coolant_flow_lpm": (0.0, 1e6),
    "coolant_delta_t_k": (-50.0, 100.0),
    "coolant_pressure_kpa": (-2000.0, 10000.0),
    "facility_supply_temp_c": (-20.0, 120.0),
    "facility_return_temp_c": (-20.0, 120.0),
    "facility_flow_lpm": (0.0, 1e7),
    "cdu_heat_kw": (-1e5, 1e5),
    "cdu_capacity_kw": (0.0, 1e5),
    "pump_speed_frac": (0.0, 1.0),
    "pumps_running_count": (0.0, 1000.0),
    "leak_detected_flag": (0.0, 1.0),
    "feed_power_kw": (-1e5, 1e6),
    "feed_current_a": (0.0, 1e6),
    "feed_voltage_v": (0.0, 1e6),
}


# --- BMC sensor names (IPMI SDR and Redfish Sensors/Thermal) ------------------------------
@dataclass(frozen=True)
class SensorRule:
    """A regex over a BMC sensor name → (entity kind, canonical metric, unit).

    ``index_group`` names the regex group holding the instance number; ``index_base``
    is subtracted so that GPU instances come out 0-based like DCGM's ``gpu`` label
    (``TEMP_GB_SXM1`` and ``GPU1 Temp`` are GPU 0, ``GPU0 Temp`` is GPU 0).
    ``unit`` is the unit the reading must be in ("" accepts any); a reading in another
    unit is rejected, never silently rescaled.
    """

    pattern: re.Pattern[str]
    kind: str
    canonical: str
    unit: str
    index_base: int | None = None  # None: no index


def _rule(regex: str, kind: str, canonical: str, unit: str, index_base: int | None = None) -> SensorRule:
    return SensorRule(re.compile(regex, re.IGNORECASE), kind, canonical, unit, index_base)


# Order matters: the first matching rule wins.  Rules for headroom ("T.Limit") sensors map
# to nothing: they are °C of margin, not a temperature.
SENSOR_RULES: tuple[SensorRule | tuple[re.Pattern[str], None], ...] = (
    (re.compile(r"^TLIMIT_|T\.?LIMIT|_TEMP_1$", re.IGNORECASE), None),
    # DGX H100 host BMC (AMI): TEMP_GB_SXMn (die), TEMP_GB_SXMn_M (HBM), PWR_GB_SXMn (W), 1-based.
    _rule(r"^TEMP_GB_SXM(?P<i>\d+)_M$", "gpu", "hbm_temp_c", "C", 1),
    _rule(r"^TEMP_GB_SXM(?P<i>\d+)$", "gpu", "gpu_temp_c", "C", 1),
    _rule(r"^PWR_GB_SXM(?P<i>\d+)$", "gpu", "gpu_power_w", "W", 1),
    _rule(r"^ENERGY_GB_SXM(?P<i>\d+)$", "gpu", "gpu_energy_j", "J", 1),
    # HGX HMC sensors: HGX_GPU_SXM_n_TEMP_0, _DRAM_0_Temp_0, _Power_0, _Energy_0 (1-based).
    _rule(r"^HGX_GPU_SXM_(?P<i>\d+)_DRAM_\d+_Temp_\d+$", "gpu", "hbm_temp_c", "C", 1),
    _rule(r"^HGX_GPU_SXM_(?P<i>\d+)_TEMP_0$", "gpu", "gpu_temp_c", "C", 1),
    _rule(r"^HGX_GPU_SXM_(?P<i>\d+)_Power_0$", "gpu", "gpu_power_w", "W", 1),
    _rule(r"^HGX_GPU_SXM_(?P<i>\d+)_Energy_0$", "gpu", "gpu_energy_j", "J", 1),
    # GB200 HMC sensors: HGX_GPU_n_TEMP_0, _DRAM_0_Temp_0, _Power_0, _Energy_0 (0-based: HGX_GPU_0..3).
    _rule(r"^HGX_GPU_(?P<i>\d+)_DRAM_\d+_Temp_\d+$", "gpu", "hbm_temp_c", "C", 0),
    _rule(r"^HGX_GPU_(?P<i>\d+)_TEMP_0$", "gpu", "gpu_temp_c", "C", 0),
    _rule(r"^HGX_GPU_(?P<i>\d+)_Power_0$", "gpu", "gpu_power_w", "W", 0),
    _rule(r"^HGX_GPU_(?P<i>\d+)_Energy_0$", "gpu", "gpu_energy_j", "J", 0),
    # Generic per-slot names: "GPU0 Temp" (0-based), "GPU1 Temp" on Dell (1-based slots) —
    # the index base of these is site-specific; default 0-based, override per site.
    _rule(r"^GPU\s?(?P<i>\d+)[ _](?:HBM|Mem(?:ory)?)[ _]Temp$", "gpu", "hbm_temp_c", "C", 0),
    _rule(r"^GPU\s?(?P<i>\d+)[ _]Temp$", "gpu", "gpu_temp_c", "C", 0),
    _rule(r"^GPU\s?(?P<i>\d+)[ _](?:Power|Pwr)$", "gpu", "gpu_power_w", "W", 0),
    # PSUs and node power.
    _rule(r"^PWR_PSU(?P<i>\d+)$", "psu", "psu_power_w", "W", 0),  # DGX: PWR_PSU0..5
    _rule(r"^(?:PSU|PS)\s?(?P<i>\d+)[ _](?:Input[ _])?(?:Power|Pwr|PIN)$", "psu", "psu_power_w", "W", 1),
    _rule(r"^Power Supply (?P<i>\d+)$", "psu", "psu_power_w", "W", 1),
    _rule(r"^PSU Power$", "node", "node_power_w", "W"),
    _rule(
        r"^(?:Total[ _]Power|Sys(?:tem)?[ _]Power|Pwr Consumption|Avg Power|PWR_TOTAL|TOTAL_POWER|PWR_SYSTEM)$",
        "node",
        "node_power_w",
        "W",
    ),
    # Inlet / CPU temperatures and fans.
    _rule(
        r"^(?:Inlet[ _]Temp|Ambient[ _]Temp|TEMP_INLET\w*|Sys(?:tem)?[ _]Inlet\w*|Front[ _]Panel[ _]Temp|TEMP_MB_INLET|TEMP_AMBIENT)$",
        "node",
        "inlet_temp_c",
        "C",
    ),
    _rule(
        r"^(?:CPU\s?(?P<i>\d+)[ _]Temp|TEMP_CPU(?P<j>\d+)|CPU(?P<l>\d)_TEMP|P(?P<k>\d) Temp)$",
        "node",
        "cpu_temp_c",
        "C",
    ),
    _rule(r"^(?:SPD_FAN_|System Fan |Fan\s?)(?P<i>[\w ]+?)(?: Tach)?$", "node", "fan_speed_rpm", "RPM"),
)


@dataclass(frozen=True)
class SensorMatch:
    """Result of :func:`match_sensor`: where a named BMC reading goes."""

    kind: str
    canonical: str
    unit: str
    index: int  # instance (GPU 0..7, PSU 0..n, fan …); -1 when the name carries none


def match_sensor(name: str) -> SensorMatch | None:
    """Map a BMC sensor name (IPMI SDR or Redfish) to its canonical metric, or ``None``."""
    name = name.strip()
    for rule in SENSOR_RULES:
        if isinstance(rule, tuple):
            if rule[0].search(name):
                return None
            continue
        m = rule.pattern.match(name)
        if m is None:
            continue
        index = -1
        groups = {k: v for k, v in m.groupdict().items() if v is not None}
        if groups and rule.index_base is not None:
            raw = next(iter(groups.values()))
            if raw.isdigit():
                index = int(raw) - rule.index_base
        elif groups:
            digits = re.findall(r"\d+", next(iter(groups.values())))
            index = int(digits[0]) if digits else -1
        return SensorMatch(rule.kind, rule.canonical, rule.unit, index)
    return None


# --- GPU naming conventions of BMCs (Redfish) ----------------------------------------------
# A GPU Processor Id that is an ordinal: GPU_SXM_1 (DGX H100, 1-based), GPU_0 (GB200, 0-based), GPU1.
_GPU_ORDINAL = re.compile(r"^(?:(?:HGX_)?GPU(?:_SXM)?[_ ]?)?(\d{1,9})$", re.IGNORECASE)
# GPU chassis and processors in URIs: HGX_GPU_SXM_n and /Processors/GPU_SXM_n or GPUn are 1-based
# (DGX H100); GB200 names its GPUs HGX_GPU_n and /Processors/GPU_n from 0.
_GPU_IN_URI = (
    (re.compile(r"HGX_GPU_SXM_(\d{1,9})|/Processors/(?:GPU_SXM_|GPU)(\d{1,9})\b", re.IGNORECASE), 1),
    (re.compile(r"HGX_GPU_(\d{1,9})|/Processors/GPU_(\d{1,9})\b", re.IGNORECASE), 0),
)
# Dell iDRAC names a GPU by its PCIe slot: Processor "Video.Slot.2-1", sensor "System Board GPU2 Temp".
_DELL_SLOT_ID = re.compile(r"^Video\.Slot\.(\d{1,9})-\d+$", re.IGNORECASE)
_DELL_SLOT_SENSOR = re.compile(r"^System\s?Board\s?GPU\s?(\d{1,9})\s?Temp$", re.IGNORECASE)
# Per-GPU values inside a sensor's OEM block, keyed "GPU1", "GPU_2", "Gpu3Temp", "HGX_GPU_SXM_4" …
_OEM_GPU_KEY = re.compile(
    r"^(?:HGX_)?GPU(?:_SXM)?[_ ]?(\d+)(?:[_ ]?(?:Temp|Temperature|Reading|Value))?$", re.IGNORECASE
)
# Temperatures of one GPU (a Thermal resource under its Processor): die, memory; a board sensor is neither.
_GPU_BOARD = re.compile(r"board|inlet|exhaust", re.IGNORECASE)
_GPU_MEMORY = re.compile(r"HBM|MEM|DRAM", re.IGNORECASE)

# Dell iDRAC ``DellGPUSensor`` (Systems/…/Oem/Dell/DellGPUSensors/<device>) fields.
DELL_GPU_SENSOR_FIELDS: dict[str, FieldMap] = _check(
    {
        "PrimaryGPUTemperatureCelsius": FieldMap("gpu_temp_c", 1.0, "°C"),
        "MemoryTemperatureCelsius": FieldMap("hbm_temp_c", 1.0, "°C"),
        "PowerConsumptionmW": FieldMap("gpu_power_w", 1e-3, "mW"),
    }
)


def gpu_ordinal(processor_id: str) -> int | None:
    """The number of a GPU Processor Id that is an ordinal (``GPU_SXM_3`` → 3, ``GPU_0`` → 0), else None."""
    m = _GPU_ORDINAL.match(processor_id.strip())
    return int(m.group(1)) if m else None


def gpu_index_in_uri(uri: str) -> int:
    """0-based GPU index named by a URI's HGX chassis or GPU processor segment, or -1."""
    for pattern, base in _GPU_IN_URI:
        m = pattern.search(uri)
        if m:
            return int(m.group(1) or m.group(2)) - base
    return -1


def gpu_slot(name: str) -> int | None:
    """The PCIe slot a Dell GPU Processor Id or GPU temperature sensor name refers to, else None."""
    m = _DELL_SLOT_ID.match(name.strip()) or _DELL_SLOT_SENSOR.match(name.strip())
    return int(m.group(1)) if m else None


def oem_gpu_number(key: str) -> int | None:
    """The GPU number of a per-GPU key in a sensor's OEM block (``"GPU3"`` → 3), else None."""
    m = _OEM_GPU_KEY.match(key.strip())
    return int(m.group(1)) if m else None


def gpu_thermal_metric(name: str) -> str | None:
    """``gpu_temp_c`` or ``hbm_temp_c`` for a temperature reading of one GPU by its name; None for board sensors."""
    if _GPU_BOARD.search(name):
        return None
    return "hbm_temp_c" if _GPU_MEMORY.search(name) else "gpu_temp_c"


# Units as ipmitool prints them and as Redfish ReadingUnits (UCUM) spell them → one symbol.
UNIT_ALIASES: dict[str, str] = {
    "degrees c": "C",
    "cel": "C",
    "c": "C",
    "watts": "W",
    "w": "W",
    "kw": "kW",
    "j": "J",
    "kw.h": "kWh",
    "volts": "V",
    "v": "V",
    "amps": "A",
    "a": "A",
    "rpm": "RPM",
    "{rev}/min": "RPM",
    "percent": "%",
    "%": "%",
    "l/min": "L/min",
    "kpa": "kPa",
    "hz": "Hz",
    "v.a": "VA",
}


def normalise_unit(unit: str | None) -> str:
    """One spelling per unit (``"degrees C"``/``"Cel"`` → ``"C"``); unknown units pass through."""
    if not unit:
        return ""
    return UNIT_ALIASES.get(unit.strip().lower(), unit.strip())


# Redfish ReadingType → unit, for BMCs that omit ReadingUnits (the DGX H100 AMI BMC).
READING_TYPE_UNITS: dict[str, str] = {
    "Temperature": "C",
    "Power": "W",
    "EnergyJoules": "J",
    "EnergykWh": "kWh",
    "Voltage": "V",
    "Current": "A",
    "Rotational": "RPM",
    "Percent": "%",
    "LiquidFlowLPM": "L/min",
    "LiquidFlow": "L/min",
    "PressurekPa": "kPa",
    "Pressure": "kPa",
    "Frequency": "Hz",
    "Humidity": "%",
}
