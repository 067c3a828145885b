"""The ``clustertwin`` entry point: bad input is one line on stderr and exit 2; JSON output is strict."""

from __future__ import annotations

import json
import logging

import pytest

from twin import bench as bench_registry
from twin.cli import EXIT_BAD_INPUT, main
from twin.commands.jsonout import dumps, finite_or_null
from twin.site.load import SITES_DIR


def strict_json(text: str):
    """Parse JSON refusing NaN and ±Infinity, which Python's parser accepts by default."""

    def refuse(token):
        raise ValueError(f"not JSON: {token}")

    return json.loads(text, parse_constant=refuse)


def one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    assert captured.err.startswith("error: ") and captured.err.count("\n") == 1, captured.err
    assert "Traceback" not in captured.err
    return captured.err


def test_json_helper_turns_non_finite_numbers_into_null():
    import numpy as np

    value = {
        "a": float("nan"),
        "b": [float("inf"), -float("inf"), 1.5],
        "c": np.float64("inf"),
        "d": np.array([1.0, np.nan]),
        "e": np.int64(3),
        4: (float("nan"),),
    }
    assert finite_or_null(value) == {
        "a": None,
        "b": [None, None, 1.5],
        "c": None,
        "d": [1.0, None],
        "e": 3,
        "4": [None],
    }
    assert strict_json(dumps(value)) == finite_or_null(value)


def test_unknown_site_is_one_line_for_show_and_exit_1_for_validate(capsys):
    assert main(["sites", "show", "atlantis"]) == EXIT_BAD_INPUT
    assert "no such site file" in one_error_line(capsys)
    assert main(["sites", "validate", "atlantis"]) == 1
    assert "no such site file" in one_error_line(capsys)


def test_traceback_only_with_debug_logging(capsys, caplog):
    with caplog.at_level(logging.DEBUG, logger="clustertwin"):
        assert main(["--log-level", "debug", "sites", "show", "atlantis"]) == EXIT_BAD_INPUT
    assert any(r.exc_info for r in caplog.records if r.name == "clustertwin")
    assert "no such site file" in capsys.readouterr().err


def test_unknown_log_level_is_an_argument_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--log-level", "loud", "units"])
    assert info.value.code == 2 and "invalid choice" in capsys.readouterr().err


def _site_with(tmp_path, old: str, new: str):
    text = (SITES_DIR / "demo.toml").read_text()
    assert old in text
    path = tmp_path / "edited.toml"
    path.write_text(text.replace(old, new, 1))
    return path


def test_validate_checks_the_default_job_as_serve_does(tmp_path, capsys):
    missing = _site_with(tmp_path, 'default_job = "demo-70b-1k"', 'default_job = "no-such-job"')
    assert main(["sites", "validate", str(missing)]) == 1
    assert "default_job: no job file 'no-such-job'" in one_error_line(capsys)
    too_big = _site_with(tmp_path, 'default_job = "demo-70b-1k"', 'default_job = "llama3-405b-16k"')
    assert main(["sites", "validate", str(too_big)]) == 1
    assert "default_job: 'llama3-405b-16k' needs 16,384 GPUs, the site has 1,024" in one_error_line(capsys)
    weather = _site_with(tmp_path, 'weather = "memphis"', 'weather = "atlantis"')
    assert main(["sites", "validate", str(weather)]) == 1
    assert "weather: no weather curve 'atlantis'" in one_error_line(capsys)
    assert main(["sites", "validate", "demo"]) == 0


def test_validate_refuses_non_utf8_and_deep_files(tmp_path, capsys):
    latin = tmp_path / "latin1.toml"
    latin.write_bytes(b'[site]\nname = "d\xe9mo"\n')
    assert main(["sites", "validate", str(latin)]) == 1
    assert "not UTF-8" in one_error_line(capsys)
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    assert main(["sites", "validate", str(deep)]) == 1
    assert "nested too deeply" in one_error_line(capsys)


def test_validate_refuses_absurd_counts_quickly(tmp_path, capsys):
    for racks in ("100000000", "9223372036854775807"):
        assert main(["sites", "validate", str(_site_with(tmp_path, "racks = 8", f"racks = {racks}"))]) == 1
        assert "racks: Input should be less than or equal to 15680" in one_error_line(capsys)


def test_show_and_units_print_strict_json(capsys):
    assert main(["sites", "show", "demo", "--json"]) == 0
    assert strict_json(capsys.readouterr().out)["n_gpus"] == 1024
    assert main(["units", "--json"]) == 0
    units = strict_json(capsys.readouterr().out)
    assert {"name", "unit", "entity", "description"} == set(units[0]) and len(units) > 10


def test_project_prints_strict_json(tmp_path, capsys):
    path = tmp_path / "cool.toml"
    path.write_text("[conditions]\ngpu_util_frac = 0.1\noutdoor_dry_bulb_c = -10.0\n")
    assert main(["project", "--site", "demo", "--scenario", str(path), "--json"]) == 0
    out = strict_json(capsys.readouterr().out)
    assert set(out) == {"baseline", "scenario", "diff"}
    assert "time_to_throttle_s" in out["baseline"] and "time_to_throttle_s" in out["scenario"]


def test_project_with_a_non_utf8_scenario(tmp_path, capsys):
    path = tmp_path / "latin1.toml"
    path.write_bytes(b'[scenario]\nname = "caf\xe9"\n')
    assert main(["project", "--site", "demo", "--scenario", str(path)]) == EXIT_BAD_INPUT
    assert "not UTF-8" in one_error_line(capsys)


def test_bench_json_is_strict_and_unknown_benchmarks_are_one_line(monkeypatch, capsys):
    monkeypatch.setattr(
        bench_registry, "_REGISTRY", {"fake": lambda: {"rate_per_s": float("inf"), "ratio": float("nan")}}
    )
    monkeypatch.setattr(bench_registry, "entry_points", lambda group: [])
    assert main(["bench", "--json", "--only", "fake"]) == 0
    out = strict_json(capsys.readouterr().out)
    assert out["fake"]["rate_per_s"] is None and out["fake"]["ratio"] is None
    assert main(["bench", "--only", "nope"]) == EXIT_BAD_INPUT
    assert "unknown benchmark(s) nope" in one_error_line(capsys)


@pytest.mark.parametrize(
    "argv",
    [
        ["sites", "show", "/dev/zero"],
        ["throughput", "--job", "/dev/zero"],
        ["project", "--site", "demo", "--scenario", "/dev/zero"],
    ],
)
def test_endless_file_is_refused_after_a_bounded_read(capsys, argv):
    assert main(argv) == EXIT_BAD_INPUT
    assert "larger than 16 MiB" in one_error_line(capsys)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["sites", "show", "{tmp}"], "is a directory"),
        (["throughput", "--job", "{tmp}/missing.toml"], "missing.toml: file not found"),
        (["project", "--site", "demo", "--scenario", "{tmp}"], "is a directory"),
    ],
)
def test_directories_and_missing_files(tmp_path, capsys, argv, message):
    path = tmp_path / "dir.toml"
    path.mkdir()
    assert main([a.replace("{tmp}", str(path)) for a in argv]) == EXIT_BAD_INPUT
    assert message in one_error_line(capsys)
