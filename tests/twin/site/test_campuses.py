"""``clustertwin sites generate``: a site of several campuses like a reference site."""

from __future__ import annotations

import tomllib

import pytest

from twin.cli import main
from twin.site.campuses import campuses_text
from twin.site.errors import SiteError
from twin.site.load import load_site, read_site_text, site_path


def test_three_demo_campuses_are_three_demos_side_by_side(tmp_path, capsys):
    out = tmp_path / "demo-x3.toml"
    assert main(["sites", "generate", "--campuses", "3", "--like", "demo", str(out)]) == 0
    assert "3 campuses" in capsys.readouterr().out
    demo, big = load_site("demo"), load_site(out)
    assert big.name == "demo-x3"
    assert (big.n_gpus, big.n_racks, big.n_cdus) == (3 * demo.n_gpus, 3 * demo.n_racks, 3 * demo.n_cdus)
    assert (big.n_power, big.n_sources) == (3 * demo.n_power, 3 * demo.n_sources)
    doc = tomllib.loads(out.read_text())
    assert {h["name"][:4] for h in doc["halls"]} == {"C01-", "C02-", "C03-"}
    # the copies never overlap: every rack of campus 2 lies east of every rack of campus 1
    first = big.rack_x_m[: demo.n_racks]
    second = big.rack_x_m[demo.n_racks : 2 * demo.n_racks]
    assert second.min() > first.max()
    assert big.site_overhead_mw == pytest.approx(3 * demo.site_overhead_mw)


def test_generate_refuses_to_overwrite_and_absurd_counts(tmp_path, capsys):
    out = tmp_path / "x.toml"
    out.write_text("keep me")
    assert main(["sites", "generate", "--campuses", "2", "--like", "demo", str(out)]) == 1
    assert "exists" in capsys.readouterr().err and out.read_text() == "keep me"
    assert main(["sites", "generate", "--campuses", "21", "--like", "demo", str(tmp_path / "y.toml")]) == 1
    assert "expected 1..20" in capsys.readouterr().err and not (tmp_path / "y.toml").exists()
    with pytest.raises(SiteError, match="expected 1..20"):
        campuses_text(read_site_text(site_path("demo")), 0, "none")


@pytest.mark.slow
def test_ten_colossus_campuses_are_a_million_gpus(tmp_path):
    """The documented 1M-GPU site (generated, never checked in): 10 × 100,352 GPUs."""
    out = tmp_path / "colossus-x10.toml"
    assert main(["sites", "generate", "--campuses", "10", "--like", "colossus", str(out)]) == 0
    assert load_site(out).n_gpus == 1_003_520
