"""Hypothesis strategies for every ingest input format, and the property each parser must hold.

Each strategy mixes well-formed pieces of the format (real metric, label, sensor and
property names; plausible and absurd values) with arbitrary text, so that generated
inputs reach deep into the parsers instead of failing on the first byte.  The
properties: a parser returns (never raises) a consistent :class:`SampleBatch` — parallel
arrays of one length, entity references inside the entity table, values NaN or inside
their physical range, ``counts.samples`` equal to the batch length.

Used by the property tests (``tests/ingest/sources/test_fuzz_parsers.py``) and by the
``fuzz`` benchmark; needs the ``test`` extra (hypothesis).
"""

from __future__ import annotations

import json
import math

import numpy as np
from hypothesis import strategies as st

from ingest.sources import dcgm, ipmi, prometheus_api, redfish
from ingest.sources.names import DCGM_FIELDS, VALID_RANGE
from ingest.sources.samples import METRICS, IngestCounts, SampleBatch

# --- shared pieces -----------------------------------------------------------------------
_NUMBERS = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(
        [
            "NaN",
            "+Inf",
            "-Inf",
            "nan",
            "1e309",
            "-0",
            "0x1F",
            "1_000",
            "",
            "9" * 5000,
            "140737488355328",
            "9223372036854775794",
            "2147483647",
            "2147483648",
        ]
    ),
)
_WORDS = st.text(alphabet=st.characters(codec="utf-8"), max_size=12)


# --- dcgm-exporter text ---------------------------------------------------------------------
_METRIC_NAMES = st.one_of(
    st.sampled_from(sorted(DCGM_FIELDS)), st.from_regex(r"[a-zA-Z_:][a-zA-Z0-9_:]{0,20}", fullmatch=True)
)
_LABEL_NAMES = st.one_of(
    st.sampled_from(
        [
            "gpu",
            "UUID",
            "uuid",
            "gpu_uuid",
            "Hostname",
            "hostname",
            "GPU_I_ID",
            "nvlink",
            "nvswitch",
            "pod",
            "namespace",
            "container",
            "exported_pod",
            "exported_namespace",
            "device",
            "modelName",
        ]
    ),
    st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_]{0,8}", fullmatch=True),
)
_INDEXES = st.one_of(st.integers(0, 9).map(str), st.integers(0, 2**80).map(str), _NUMBERS)
_LABEL_VALUES = st.one_of(_NUMBERS, _WORDS, st.sampled_from(['a\\"b', "x\\\\", "n\\n", "GPU-1234", "h1-r01-k01-n0"]))


@st.composite
def _dcgm_line(draw) -> str:
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(st.text(max_size=80))  # anything at all
    if kind == 1:
        return draw(st.sampled_from(["# HELP X y", "# TYPE X gauge", "#", "", "   ", "\t"]))
    name = draw(_METRIC_NAMES)
    pairs = draw(st.lists(st.tuples(_LABEL_NAMES, _LABEL_VALUES), max_size=6))
    if draw(st.booleans()):  # the entity-naming labels, with values anywhere from 0 to absurd
        pairs.append(("gpu", draw(_INDEXES)))
    block = ",".join(f'{k}="{v.replace(chr(34), "")}"' for k, v in pairs)
    if draw(st.booleans()):
        block = draw(st.sampled_from([block, block + ",", "{" + block, block + "}", block.replace("=", " = ")]))
    labels = "" if not pairs and draw(st.booleans()) else "{" + block + "}"
    stamp = draw(st.one_of(st.just(""), st.integers(-(2**70), 2**70).map(lambda t: f" {t}")))
    return f"{name}{labels} {draw(_NUMBERS)}{stamp}"


dcgm_text = st.builds(
    lambda lines, sep: sep.join(lines), st.lists(_dcgm_line(), max_size=40), st.sampled_from(["\n", "\r\n", "\n\n"])
)


# --- Prometheus HTTP API JSON ----------------------------------------------------------------
_JSON_LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    _WORDS,
    _NUMBERS,
)
json_values = st.recursive(
    _JSON_LEAF,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_WORDS, inner, max_size=4)),
    max_leaves=20,
)
_POINT = st.one_of(
    st.tuples(st.one_of(st.floats(allow_nan=False), st.integers(-(2**70), 2**70), _NUMBERS), _NUMBERS).map(list),
    json_values,
)


@st.composite
def _prom_series(draw) -> dict:
    labels = draw(st.dictionaries(_LABEL_NAMES, st.one_of(_LABEL_VALUES, json_values), max_size=5))
    if draw(st.booleans()):
        labels["gpu"] = draw(_INDEXES)
    if draw(st.booleans()):
        labels["__name__"] = draw(_METRIC_NAMES)
    item = {"metric": labels}
    if draw(st.booleans()):
        item["value"] = draw(_POINT)
    else:
        item["values"] = draw(st.lists(_POINT, max_size=5))
    return item if draw(st.integers(0, 9)) else draw(json_values)


@st.composite
def _prom_answer(draw):
    status = draw(st.sampled_from(["success", "success", "success", "error", None]))
    rtype = draw(st.sampled_from(["vector", "matrix", "scalar", "string", "histogram", None]))
    result = draw(st.one_of(st.lists(_prom_series(), max_size=6), _POINT, json_values))
    doc = {"status": status, "data": {"resultType": rtype, "result": result}}
    if draw(st.booleans()):
        doc["warnings"] = draw(json_values)
    if status == "error":
        doc["errorType"], doc["error"] = draw(json_values), draw(json_values)
    return doc


prometheus_json = st.one_of(
    _prom_answer().map(json.dumps),
    _prom_answer().map(json.dumps).flatmap(lambda t: st.integers(0, len(t)).map(lambda n: t[:n])),  # truncated
    json_values.map(json.dumps),
    st.text(max_size=200),
)


# --- Redfish JSON ------------------------------------------------------------------------------
_REDFISH_TYPES = sorted(redfish._PARSERS) + ["Processor", "Chassis", "ServiceRoot", ""]
_REDFISH_KEYS = st.sampled_from(
    [
        "@odata.id",
        "@odata.type",
        "Id",
        "Name",
        "Reading",
        "ReadingUnits",
        "ReadingType",
        "ReadingCelsius",
        "Temperatures",
        "Fans",
        "PowerControl",
        "PowerSupplies",
        "Voltages",
        "PowerConsumedWatts",
        "PowerInputWatts",
        "LastPowerOutputWatts",
        "InputPowerWatts",
        "TemperatureCelsius",
        "PowerWatts",
        "PowerLimitWatts",
        "ProcessorType",
        "UUID",
        "OperatingSpeedMHz",
        "ThrottleReasons",
        "Oem",
        "Nvidia",
        "SpeedPercent",
        "SpeedRPM",
        "PumpSpeedPercent",
        "DetectorState",
        "Detectors",
        "LeakDetectorGroups",
        "MetricValues",
        "MetricId",
        "MetricProperty",
        "MetricValue",
        "Members",
        "Message",
        "Created",
        "Links",
        "Status",
        "State",
        "MemberId",
        "TemperatureReadingsCelsius",
        "TemperatureSummaryCelsius",
        "Intake",
        "SetPoint",
        "DeviceName",
        "FanName",
        "DataSourceUri",
        "CoolingCapacityWatts",
        "NVLinkErrors",
        "FlitCRCCount",
        "MetricValueStale",
        "Members@odata.nextLink",
    ]
)
_URIS = st.one_of(
    st.sampled_from(
        [
            "/redfish/v1",
            "/redfish/v1/Chassis/HGX_GPU_SXM_1/Sensors/HGX_GPU_SXM_1_Power_0",
            "/redfish/v1/Systems/HGX_Baseboard_0/Processors/GPU_SXM_3/EnvironmentMetrics",
            "/redfish/v1/ThermalEquipment/CDUs/1/Pumps/2",
            "/redfish/v1/PowerEquipment/RackPDUs/1/Outlets/A7",
            "/redfish/v1/Chassis/1/PowerSubsystem/PowerSupplies/99999999999999999999/Metrics",
            "/redfish/v1/Systems/1/Processors/GPU" + "9" * 30,
        ]
    ),
    _WORDS.map(lambda w: "/redfish/v1/" + w),
)
_REDFISH_VALUES = st.one_of(
    json_values, _URIS, st.sampled_from(["Cel", "W", "%", "RPM", "Temperature", "Power", "GPU"])
)


@st.composite
def redfish_doc(draw) -> dict:
    doc = draw(
        st.dictionaries(
            _REDFISH_KEYS,
            st.recursive(
                _REDFISH_VALUES,
                lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_REDFISH_KEYS, inner, max_size=4)),
                max_leaves=6,
            ),
            max_size=6,
        )
    )
    t = draw(st.sampled_from(_REDFISH_TYPES))
    if t:
        doc["@odata.type"] = f"#{t}.v1_0_0.{t}"
    return doc


redfish_tree = st.dictionaries(_URIS, redfish_doc(), max_size=3)
redfish_json = st.one_of(redfish_doc().map(json.dumps), st.text(max_size=200), json_values.map(json.dumps))


# --- ipmitool text ------------------------------------------------------------------------------
_SENSORS = st.one_of(
    st.sampled_from(
        [
            "GPU3 Temp",
            "PSU Power",
            "Inlet Temp",
            "CPU0_TEMP",
            "PSU1 Power",
            "Fan1",
            "GPU99999999999999999999 Temp",
            "SEL",
            "Pwr Consumption",
        ]
    ),
    _WORDS,
)
_READINGS = st.one_of(
    st.builds(
        lambda n, u: f"{n} {u}",
        _NUMBERS,
        st.sampled_from(["degrees C", "Watts", "RPM", "Volts", "percent", "discrete", ""]),
    ),
    st.sampled_from(["No Reading", "0x01", "Presence detected", "na", "110 Watts, Presence detected"]),
    _WORDS,
)


@st.composite
def _ipmi_line(draw) -> str:
    kind = draw(st.integers(0, 4))
    name = draw(_SENSORS)
    status = draw(st.sampled_from(["ok", "ns", "nc", "cr", "na", ""]))
    if kind == 0:
        sensor_no = draw(st.one_of(st.sampled_from(["04h", "0ah", "FFh"]), _WORDS))
        return " | ".join([name, sensor_no, status, draw(_WORDS), draw(_READINGS)])
    if kind == 1:
        return " | ".join([name, draw(_READINGS), status])
    if kind == 2:
        cols = [name, draw(_NUMBERS), draw(st.sampled_from(["degrees C", "Watts", "discrete"])), status]
        return " | ".join(cols + [draw(st.one_of(_NUMBERS, st.just("na"))) for _ in range(6)])
    if kind == 3:
        head = f"Sensor ID              : {name} ({draw(st.sampled_from(['0x4', '0xff', '0x' + '9' * 40]))})"
        body = draw(
            st.lists(
                st.builds(
                    lambda k, v: f" {k} : {v}",
                    st.sampled_from(
                        [
                            "Entity ID",
                            "Sensor Reading",
                            "Status",
                            "Upper critical",
                            "Lower non-critical",
                            "Sensor Type (Discrete)",
                        ]
                    ),
                    st.one_of(_READINGS, _NUMBERS),
                ),
                max_size=5,
            )
        )
        return "\n".join([head, *body]) + "\n"
    return draw(st.text(max_size=60))


ipmi_text = st.builds("\n".join, st.lists(_ipmi_line(), max_size=30))


# --- the properties -----------------------------------------------------------------------------
_LO = np.array([VALID_RANGE.get(m, (-math.inf, math.inf))[0] for m in METRICS])
_HI = np.array([VALID_RANGE.get(m, (-math.inf, math.inf))[1] for m in METRICS])


def check_batch(batch: SampleBatch) -> None:
    """Raise ``AssertionError`` unless ``batch`` is internally consistent (see module docstring)."""
    n = len(batch)
    assert batch.entity_ref.shape == batch.metric.shape == batch.value.shape == batch.timestamp_s.shape == (n,)
    assert batch.counts.samples == n
    if n:
        assert 0 <= int(batch.entity_ref.min()) and int(batch.entity_ref.max()) < len(batch.entities)
        finite = ~np.isnan(batch.value)
        m = batch.metric[finite]
        assert ((batch.value[finite] >= _LO[m]) & (batch.value[finite] <= _HI[m])).all()
    assert len(batch.entities.host) == len(batch.entities.uuid) == len(batch.entities.name) == len(batch.entities)


def dcgm_property(text: str) -> None:
    check_batch(dcgm.parse_dcgm(text, default_host="n0"))


def prometheus_property(text: str) -> None:
    resp = prometheus_api.parse_response(text)
    if resp.ok:
        check_batch(prometheus_api.to_samples(resp, default_host="n0"))
    else:
        assert resp.error_type and resp.error


def redfish_property(text: str) -> None:
    doc, err = redfish.load_document(text, "/redfish/v1/x")
    assert (doc is None) == bool(err)
    if doc is not None:
        check_batch(redfish.parse_tree({"/redfish/v1/x": doc}, "n0"))
        redfish.links(doc)


def redfish_tree_property(docs: dict) -> None:
    check_batch(redfish.parse_tree(docs, "n0", IngestCounts()))
    for doc in docs.values():
        redfish.links(doc)


def ipmi_property(text: str) -> None:
    check_batch(ipmi.parse_ipmi(text, "n0"))


# name → (strategy, property): the fuzz set, one entry per parser and format
FUZZ_SET = {
    "dcgm_text": (dcgm_text, dcgm_property),
    "prometheus_json": (prometheus_json, prometheus_property),
    "redfish_json": (redfish_json, redfish_property),
    "redfish_tree": (redfish_tree, redfish_tree_property),
    "ipmitool_text": (ipmi_text, ipmi_property),
}
