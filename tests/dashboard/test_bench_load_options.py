"""``clustertwin bench --only load_dashboards --port P --seconds S``: the options reach the load test, checked."""

from __future__ import annotations

import pytest

from dashboard.benchmarks import load
from twin.cli import main
from twin.errors import InputError


def test_port_and_seconds_reach_the_load_test(monkeypatch, capsys):
    seen = {}
    monkeypatch.setattr(load, "load_figures", lambda **kw: seen.update(kw) or {"load_p95_ms": 1.0})
    assert main(["bench", "--only", "load_dashboards", "--port", "18123", "--seconds", "60", "--json"]) == 0
    assert seen == {"load_s": 60, "port": 18123}
    assert '"load_p95_ms": 1.0' in capsys.readouterr().out


@pytest.mark.parametrize(("option", "value"), [("port", 80), ("seconds", 5)])
def test_bad_options_are_one_line(option, value):
    with pytest.raises(InputError, match=f"--{option} {value}"):
        load.load_dashboards_benchmark(**{option: value})


def test_an_option_no_chosen_benchmark_takes_is_refused(capsys):
    assert main(["bench", "--only", "site_load", "--port", "18123"]) == 2
    assert "--port applies to none of site_load" in capsys.readouterr().err
