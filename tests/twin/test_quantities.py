"""The canonical quantity list: complete, one unit form per name, and the README's copy of it."""

import dataclasses
import re
from datetime import UTC, datetime

import pytest

from ingest.live.readings import TRACKED
from ingest.sources import names
from ingest.sources.samples import METRICS
from ingest.store import layouts
from tests.conftest import REPO_DIR
from twin.engine.snapshot import JobStatus, Snapshot
from twin.quantities import BY_NAME, NOT_QUANTITIES, QUANTITIES, has_unit_form, markdown_table, quantity
from twin.training.jobfile import load_job
from twin.training.report import throughput_report


def test_readme_table_is_the_generated_one():
    readme = (REPO_DIR / "README.md").read_text()
    block = re.search(r"<!-- units:begin -->\n(.*?)\n<!-- units:end -->", readme, re.S)
    assert block, "README.md lacks the units block"
    assert block.group(1).strip() == markdown_table().strip()


def test_names_are_unique_and_carry_a_unit_or_a_categorical_form():
    names_ = [q.name for q in QUANTITIES]
    assert len(names_) == len(set(names_))
    assert [n for n in names_ if not has_unit_form(n)] == []


@pytest.mark.parametrize(
    "name",
    [
        "xid_last",
        "link_up",
        "tflops_per_gpu",
        "tokens_per_joule",
        "pumps_running",
        "leak_detected",
        "params",
        "gpu_temp",
    ],
)
def test_names_without_a_unit_are_refused(name):
    assert not has_unit_form(name)


@pytest.mark.parametrize(
    "name",
    [
        "gpu_temp_c",
        "coolant_flow_lpm",
        "pcie_replay_total",
        "last_xid_code",
        "link_up_flag",
        "pumps_running_count",
        "n_gpus",
        "swing_ramp_mw_per_s",
    ],
)
def test_names_with_a_unit_or_form_are_accepted(name):
    assert has_unit_form(name)


def test_not_quantities_are_not_also_quantities():
    assert sorted(set(NOT_QUANTITIES) & set(BY_NAME)) == []


@pytest.mark.parametrize("record", [Snapshot, JobStatus])
def test_every_snapshot_and_job_status_field_is_listed(record):
    unlisted = [f.name for f in dataclasses.fields(record) if f.name not in BY_NAME and f.name not in NOT_QUANTITIES]
    assert unlisted == [], f"add these {record.__name__} fields to twin/quantities.py"


def test_every_stored_frame_field_is_a_quantity():
    fields = (
        layouts.GPU_FIELDS + layouts.CDU_FIELDS + layouts.RACK_FIELDS + layouts.POWER_FIELDS + layouts.SOURCE_FIELDS
    )
    assert [f for f in fields if f not in BY_NAME] == []


def test_every_sample_metric_and_vendor_mapping_is_a_quantity():
    targets = set(METRICS) | set(names.VALID_RANGE) | {fm.canonical for fm in names.DCGM_FIELDS.values()}
    targets |= {rule.canonical for rule in names.SENSOR_RULES if getattr(rule, "canonical", None)}
    targets |= {m for metrics in TRACKED.values() for m in metrics}
    assert sorted(targets - set(BY_NAME)) == []


def test_every_throughput_json_key_is_listed():
    report = throughput_report(load_job(REPO_DIR / "data" / "jobs" / "demo-70b-1k.toml"))
    unlisted = [k for k in report if k not in BY_NAME and k not in NOT_QUANTITIES]
    assert unlisted == []


def test_unknown_names_are_refused_by_name():
    with pytest.raises(KeyError, match="gpu_temperature"):
        quantity("gpu_temperature")


def _report_keys(obj, out: set[str]) -> set[str]:
    """Every key of a JSON-like report; the keys of quantity maps (``breakdown_s``) and of
    sections keyed by name (``time_to_throttle_s``) are names, not fields."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            out.add(key)
            if key in BY_NAME:
                continue
            if key in NOT_QUANTITIES and NOT_QUANTITIES[key].startswith("section keyed by"):
                for inner in value.values():
                    _report_keys(inner, out)
            else:
                _report_keys(value, out)
    elif isinstance(obj, list):
        for item in obj:
            _report_keys(item, out)
    return out


def test_every_project_and_sites_show_json_key_is_listed():
    from twin.scenario.conditions import Scenario
    from twin.scenario.projection import project
    from twin.site.load import load_site
    from twin.site.summary import site_summary

    demo = load_site("demo")
    keys = _report_keys(project(demo, Scenario()).as_dict(), set()) | _report_keys(site_summary(demo), set())
    assert sorted(k for k in keys if k not in BY_NAME and k not in NOT_QUANTITIES) == []


def test_every_whatif_json_key_is_listed():
    """Keys of ``project --scenario``, ``blast-radius`` and ``scenario show`` (edit fields included)."""
    from ingest.commands.scenarios import _summary
    from ingest.store.scenarios import StoredScenario
    from twin.scenario.compare import blast_radius, compare
    from twin.scenario.load import parse_scenario
    from twin.site.edit_schema import FIELD_NAMES
    from twin.site.load import load_site

    demo = load_site("demo")
    sc = parse_scenario(
        '[scenario]\ndesign_limits = "warn"\n[[edits]]\nop = "set_rack_type"\nrows = ["H1-R01"]\n'
        'type = "GB200-NVL72"\n[[edits]]\nop = "remove_rack"\nracks = ["H1-R02-K08"]\n',
        demo,
    )
    keys = _report_keys(compare(demo, sc).as_dict(), set()) | _report_keys(
        blast_radius(demo, "H1-TX1-A").as_dict(), set()
    )
    stored = StoredScenario(1, "demo", "x", "", None, "warn", (), 0, datetime.now(UTC), datetime.now(UTC), "")
    keys |= set(_summary(stored)) | {"edits", "op"} | set(FIELD_NAMES)
    assert sorted(k for k in keys if k not in BY_NAME and k not in NOT_QUANTITIES) == []


def test_no_name_is_described_twice():
    """A key repeated in a dict literal silently loses its first description (merges of two branches)."""
    import ast

    import twin.quantities

    tree = ast.parse(open(twin.quantities.__file__, encoding="utf-8").read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
            assert len(keys) == len(set(keys)), sorted({k for k in keys if keys.count(k) > 1})
