"""Property tests of the recording importers: any text gives a series or the documented error, fast.

MLPerf power logs, nvidia-smi CSV and XML and ``dcgmi dmon`` output are fed real-looking
pieces of their formats mixed with arbitrary text.  The only exception allowed is
:class:`RecordingImportError` (a one-line message); every input finishes well within the
deadline.  ``CLUSTERTWIN_FUZZ_EXAMPLES`` sets the number of inputs per parser.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.imports import dcgmi, mlperf, nvidia_smi
from ingest.imports.series import RecordingImportError

EXAMPLES = int(os.environ.get("CLUSTERTWIN_FUZZ_EXAMPLES", "60"))
T0 = datetime(2024, 7, 22, 15, 0, tzinfo=UTC)

PIECES = {
    "mlperf": [
        ':::MLLOG {"key": "power_reading", "value": "712.5", "time_ms": 1700000000000, "metadata": {"host": "n1"}}',
        ':::MLLOG {"key": "run_start", "time_ms": 1700000000000}',
        ':::MLLOG {"key": "power_reading", "value": "nan"}',
        ":::MLLOG {",
        ":::MLLOG []",
        ':::MLLOG {"key": "power_reading", "value": 1e400, "time_ms": "x"}',
    ],
    "nvidia-smi-csv": [
        "timestamp, index, temperature.gpu, power.draw [W], utilization.gpu [%]",
        "2024/07/22 15:00:00.000, 0, 61, 650.10 W, 97 %",
        "2024/07/22 15:00:01.000, 1, [N/A], , 100",
        "timestamp, index",
        "2024/13/45 99:99:99, x, y",
        '"a,b", "c',
    ],
    "nvidia-smi-xml": [
        '<?xml version="1.0"?><nvidia_smi_log><timestamp>Mon Jul 22 15:00:00 2024</timestamp>',
        '<gpu id="00000000:18:00.0"><minor_number>0</minor_number><temperature><gpu_temp>61 C'
        "</gpu_temp></temperature></gpu>",
        "</nvidia_smi_log>",
        "<gpu>",
        "<!DOCTYPE x [<!ENTITY a 'b'>]>",
        "&a;",
    ],
    "dcgmi-dmon": [
        "#Entity   TMPTR  POWER    GPUTL  SMCLK  XIDER",
        "ID        C      W",
        "GPU 0     61     650.1    97     1980   0",
        "GPU x     N/A    -1e999   97",
        "GPU 99999999999999999999 1 1 1 1 1",
    ],
}
PARSERS = {
    "mlperf": lambda text: mlperf.parse_power_log(text, "n1"),
    "nvidia-smi-csv": lambda text: nvidia_smi.parse_csv(text, "n1"),
    "nvidia-smi-xml": lambda text: nvidia_smi.parse_xml(text, "n1"),
    "dcgmi-dmon": lambda text: dcgmi.parse_dmon(text, "n1", T0),
}


def _documents(kind: str):
    line = st.one_of(st.sampled_from(PIECES[kind]), st.text(max_size=80))
    return st.lists(line, max_size=30).map("\n".join)


@pytest.mark.parametrize("kind", sorted(PARSERS))
def test_importer_gives_a_series_or_the_documented_error(kind):
    @settings(
        max_examples=EXAMPLES,
        deadline=timedelta(seconds=5),
        database=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(_documents(kind))
    def run(text):
        try:
            frame = PARSERS[kind](text)
        except RecordingImportError as exc:
            assert "\n" not in str(exc).strip()
            return
        assert {"ts", "host", "gpu", "metric", "value"} <= set(frame.columns)

    run()
