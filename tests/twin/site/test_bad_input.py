"""Site files that lie: absurd counts, non-finite numbers, broken patterns and references.

Each case is one :class:`SiteError` naming file, entity and field, raised before anything
large is allocated (the counts are checked first, so each case runs in well under a second).
"""

import re
import time

import numpy as np
import pytest

from twin.site import limits
from twin.site.catalogue import load_catalogue
from twin.site.errors import SiteError
from twin.site.fabricgen import FabricDesignError, generate_fabric
from twin.site.load import SITES_DIR, build_site, load_site

DEMO_TEXT = (SITES_DIR / "demo.toml").read_text()
ROW = 'rack_type = "demo-dlc-h100"'


def build(text):
    return build_site(text, "edited.toml", load_catalogue())


def refused(old: str, new: str, entity: str, field: str, message: str) -> None:
    assert old in DEMO_TEXT, old
    start = time.perf_counter()
    with pytest.raises(SiteError) as info:
        build(DEMO_TEXT.replace(old, new, 1))
    assert time.perf_counter() - start < 5.0
    err = info.value
    assert err.file == "edited.toml" and "\n" not in str(err)
    assert (err.entity, err.field) == (entity, field), str(err)
    assert re.search(message, err.problem), str(err)


@pytest.mark.parametrize(
    "racks, field, message",
    [
        ("100000000", "racks", "less than or equal to 15680"),
        ("9223372036854775807", "racks", "less than or equal to 15680"),
    ],
)
def test_absurd_rack_count_is_refused_before_expanding(racks, field, message):
    refused("racks = 8", f"racks = {racks}", "halls.rows 'R01'", field, message)


def test_total_count_over_the_limit_is_refused_before_expanding():
    # two rows each within the per-row limit, together above 10× Colossus
    text = DEMO_TEXT.replace("racks = 8", "racks = 9000", 2)
    with pytest.raises(
        SiteError, match=r"edited.toml: site: racks: 18,000 racks in total, more than the limit of 15,680"
    ):
        build(text)


def test_too_many_power_source_units():
    refused("units = 2", "units = 100000", "power.sources 'GEN'", "units", "less than or equal to 1000")


@pytest.mark.parametrize(
    "old, value, entity, field",
    [
        ("rating_kw = 2500.0", "nan", "power.switchgear 'MV-A'", "rating_kw"),
        ("rating_kw = 2500.0", "inf", "power.switchgear 'MV-A'", "rating_kw"),
        ("rating_kw = 2500.0", "1e308", "power.switchgear 'MV-A'", "rating_kw"),
        ("x_m = 1.0", "nan", "halls.rows 'R01'", "x_m"),
        ("x_m = 1.0", "-inf", "halls.rows 'R01'", "x_m"),
        ("x_m = 1.0", "1e308", "halls.rows 'R01'", "x_m"),
        ("chiller_kw = 700.0", "inf", "cooling.plants 'PLANT-1'", "chiller_kw"),
        ("gbps = 1600.0", "nan", "fabric.endpoints 'STORAGE'", "gbps"),
        ("radix = 128", "1000000000", "fabric", "radix"),
        ("pitch_m = 0.6", "1e308", "halls.rows 'R01'", "pitch_m"),
    ],
)
def test_non_finite_and_absurd_numbers_are_refused(old, value, entity, field):
    key = old.split(" = ")[0]
    refused(old, f"{key} = {value}", entity, field, "finite number|less than|greater than")


@pytest.mark.parametrize(
    "pattern, message",
    [
        ("{nope}", r"unknown field \{nope\}"),
        ("h{hall:999999999}", "format of {hall} must be like"),
        ("h{hall!r}", "format of {hall} must be like"),
        ("h{hall", "not a valid pattern"),
        ("h{0}", r"unknown field \{0\}"),
    ],
)
def test_bad_hostname_pattern_is_a_one_line_error(pattern, message):
    refused("[site]\n", f'[site]\nhostname_pattern = "{pattern}"\n', "site", "hostname_pattern", message)


def test_bad_rack_name_pattern():
    refused("[site]\n", '[site]\nrack_name_pattern = "R{slot}"\n', "site", "rack_name_pattern", "unknown field")


def test_unknown_weather_and_default_job_are_refused_by_loading():
    refused('weather = "memphis"', 'weather = "atlantis"', "site", "weather", "no weather curve 'atlantis'")
    refused(
        'default_job = "demo-70b-1k"', 'default_job = "no-such-job"', "site", "default_job", "no job file 'no-such-job'"
    )


def test_cdu_keys_on_a_rack_with_its_own_cdu_are_errors():
    refused(ROW, f'{ROW}, cdu_type = "NoSuchCDU"', "row H1/R01", "cdu_type", "has an in-rack CDU")
    refused(ROW, f'{ROW}, cdu_type = "InRow-1MW"', "row H1/R01", "cdu_type", "applies only to racks cooled in-row")
    refused(ROW, f"{ROW}, racks_per_cdu = 4", "row H1/R01", "racks_per_cdu", "has an in-rack CDU")


def test_unknown_in_row_cdu_type_is_named():
    in_row = 'rack_type = "hgx-a100-inrow"'
    text = DEMO_TEXT.replace(ROW, f'{in_row}, cdu_type = "InRow-9MW"', 1)
    with pytest.raises(SiteError, match="row H1/R01: cdu_type: unknown CDU type 'InRow-9MW'"):
        build(text)


def test_unknown_keys_are_errors():
    refused(ROW, f'{ROW}, colour = "blue"', "halls.rows 'R01'", "colour", "Extra inputs are not permitted")


def test_non_utf8_site_file(tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes(DEMO_TEXT.replace('"demo"', '"d\xe9mo"').encode("latin-1"))
    with pytest.raises(SiteError, match=r"latin1.toml: site file: -: not UTF-8 text \(byte \d+\)"):
        load_site(path)


def test_deeply_nested_arrays(tmp_path):
    path = tmp_path / "deep.toml"
    path.write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(SiteError, match="deep.toml: site file: -: arrays or tables nested too deeply"):
        load_site(path)


def test_site_path_that_is_a_directory(tmp_path):
    target = tmp_path / "dir.toml"
    target.mkdir()
    with pytest.raises(SiteError, match="dir.toml: site file: -: is a directory, not a file"):
        load_site(target)


def test_fabric_over_the_switch_limit_is_refused_before_allocating():
    # 8 GPUs per node spread over 20,001 arrays → 160,008 leaves
    gpu_array = np.repeat(np.array([0, 20_000]), 8)
    with pytest.raises(FabricDesignError, match=f"switches: .* more than the limit of {limits.MAX_SWITCHES:,}"):
        generate_fabric(
            gpu_array,
            np.tile(np.arange(8), 2),
            radix=128,
            rails=8,
            pod_arrays=8,
            link_gbps=400.0,
            leaf_oversubscription=1.0,
            spine_oversubscription=1.0,
            leaf_spine_parallel=1,
        )


def test_limits_are_ten_times_colossus():
    colossus = load_site("colossus")
    assert limits.MAX_GPUS == 10 * colossus.n_gpus and limits.MAX_RACKS == 10 * colossus.n_racks
    assert limits.MAX_SWITCHES == 10 * colossus.n_switches and limits.MAX_SWITCH_LINKS == 10 * colossus.n_links
    assert limits.MAX_NODES == 10 * colossus.n_nodes
    entities = (
        colossus.n_gpus + colossus.n_nodes + colossus.n_racks + colossus.n_cdus + colossus.n_power + colossus.n_sources
    )
    assert limits.MAX_ENTITIES == 10 * entities


def test_entity_total_over_the_limit():
    # within every per-count limit: 15,680 racks (1,003,520 GPUs) and 9,990 more busways
    busways = "".join(
        f'{{ name = "X{i}", parent = "H1-UPS1-A", side = "A", voltage_v = 415.0, rating_kw = 1.0 }},\n'
        for i in range(9_990)
    )
    text = DEMO_TEXT.replace("racks = 8", "racks = 7840", 2).replace("busways = [\n", "busways = [\n" + busways, 1)
    with pytest.raises(
        SiteError,
        match=r"site: entities: 1,170,3\d\d entities in total, more than the limit of "
        r"1,163,370",
    ):
        build(text)
