"""nvidia-smi recordings: ``--query-gpu=… --format=csv`` logs (with or without header and units) and ``-q -x`` XML.

CSV: the header names the query fields, with units in brackets (``power.draw [W]``);
``noheader`` logs need the field list (``fields``); ``nounits`` drops ``W``/``%``/``MHz``
from values.  ``[N/A]``/``N/A`` is missing.  Timestamps print as ``2024/07/22 15:00:00.123``
(local time of the host; we take them as UTC unless told otherwise).

XML: ``-q -x`` documents (several when logged with ``-l``), one ``<gpu>`` element per GPU
in index order, temperatures ``"27 C"``, power ``"67.03 W"``, utilisation ``"45 %"``,
clocks ``"1275 MHz"`` [fixtures: nvidia-smi-telegraf/*.xml].
"""

from __future__ import annotations

import csv
import io
import math
import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime

import pandas as pd

from ingest.imports.series import RecordingImportError, make_series

DEFAULT_FIELDS = (
    "timestamp",
    "index",
    "temperature.gpu",
    "temperature.memory",
    "power.draw",
    "utilization.gpu",
    "clocks.sm",
)
# nvidia-smi query field → (canonical metric, scale to the canonical unit)
CSV_FIELDS = {
    "temperature.gpu": ("gpu_temp_c", 1.0),
    "temperature.memory": ("hbm_temp_c", 1.0),
    "power.draw": ("gpu_power_w", 1.0),
    "power.draw.instant": ("gpu_power_w", 1.0),
    "power.draw.average": ("gpu_power_w", 1.0),
    "utilization.gpu": ("gpu_util_frac", 0.01),
    "clocks.sm": ("sm_clock_mhz", 1.0),
    "clocks.current.sm": ("sm_clock_mhz", 1.0),
}
_NUMBER = re.compile(r"^\s*(-?[\d.]+)")


def _number(text: str | None) -> float | None:
    m = _NUMBER.match(text or "")
    return float(m.group(1)) if m else None


def _timestamp(text: str) -> int:
    text = text.strip()
    for fmt in ("%Y/%m/%d %H:%M:%S.%f", "%Y/%m/%d %H:%M:%S", "%a %b %d %H:%M:%S %Y"):
        try:
            return int(datetime.strptime(text, fmt).replace(tzinfo=UTC).timestamp() * 1000)
        except ValueError:
            continue
    raise RecordingImportError(f"timestamp {text!r} is not in an nvidia-smi format")


MAX_GPU_INDEX = 1023  # GPU indices of one host


def parse_csv(text: str, host: str, fields: tuple[str, ...] | None = None) -> pd.DataFrame:
    """A ``--format=csv`` log (see module docstring) as a series."""
    try:
        rows = [
            r
            for r in csv.reader(io.StringIO(text, newline=""), skipinitialspace=True)
            if r and any(c.strip() for c in r)
        ]
    except csv.Error as exc:
        raise RecordingImportError(f"nvidia-smi CSV does not parse ({exc})") from None
    if not rows:
        raise RecordingImportError("empty nvidia-smi CSV")
    if rows[0][0].strip().startswith("timestamp") or rows[0][0].strip().startswith("index"):
        header = [re.sub(r"\s*\[.*\]$", "", c.strip()) for c in rows[0]]
        rows = rows[1:]
    else:
        header = list(fields or DEFAULT_FIELDS)
    for need in ("timestamp", "index"):
        if need not in header:
            raise RecordingImportError(f"nvidia-smi CSV: the query must include {need!r} (fields: {', '.join(header)})")
    t_col, i_col = header.index("timestamp"), header.index("index")
    known = [(k, CSV_FIELDS[name]) for k, name in enumerate(header) if name in CSV_FIELDS]
    out = []
    for row in rows:
        if len(row) != len(header):
            raise RecordingImportError(
                f"nvidia-smi CSV: a row has {len(row)} values for {len(header)} fields: {', '.join(row)[:200]!r}"
            )
        index = row[i_col].strip()
        if not index.isdigit() or int(index) > MAX_GPU_INDEX:
            raise RecordingImportError(f"nvidia-smi CSV: GPU index {index[:40]!r} is not a GPU index")
        ts, gpu = _timestamp(row[t_col]), int(index)
        for k, (metric, scale) in known:
            value = _number(row[k])
            if value is not None and math.isfinite(value):
                out.append((ts, host, gpu, metric, value * scale))
    return make_series(out)


def parse_xml(text: str, host: str) -> pd.DataFrame:
    """``nvidia-smi -q -x`` output (one or more documents) as a series."""
    docs = [d for d in re.split(r"(?=<\?xml)", text) if d.strip()]
    out = []
    for doc in docs:
        try:
            root = ET.fromstring(doc.strip())
        except ET.ParseError as exc:
            raise RecordingImportError(f"nvidia-smi XML does not parse ({exc})") from None
        if root.tag != "nvidia_smi_log":
            raise RecordingImportError(f"XML root is <{root.tag}>, not <nvidia_smi_log>")
        ts = _timestamp(root.findtext("timestamp", ""))
        for index, gpu in enumerate(root.findall("gpu")):
            minor = _number(gpu.findtext("minor_number"))
            idx = int(minor) if minor is not None else index
            power = gpu.findtext("gpu_power_readings/power_draw") or gpu.findtext("power_readings/power_draw")
            for metric, value in (
                ("gpu_temp_c", _number(gpu.findtext("temperature/gpu_temp"))),
                ("hbm_temp_c", _number(gpu.findtext("temperature/memory_temp"))),
                ("gpu_power_w", _number(power)),
                ("gpu_util_frac", _number(gpu.findtext("utilization/gpu_util"))),
                ("sm_clock_mhz", _number(gpu.findtext("clocks/sm_clock"))),
            ):
                if value is not None:
                    out.append((ts, host, idx, metric, value / 100.0 if metric == "gpu_util_frac" else value))
    return make_series(out)


def product_name(text: str) -> str | None:
    """The first GPU's product name of an XML log (for ``--site auto``)."""
    m = re.search(r"<product_name>([^<]+)</product_name>", text)
    return m.group(1).strip() if m else None
