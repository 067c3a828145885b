"""Inventory mapping: hostnames, BMC names, GPU index and UUID, rewrite rules, unknowns counted."""

from __future__ import annotations

import numpy as np

from ingest.sources.dcgm import parse_dcgm
from ingest.sources.inventory import Inventory, RewriteRule, normalise_host
from ingest.sources.ipmi import parse_ipmi
from ingest.sources.samples import BatchBuilder


def small_inventory(**kw) -> Inventory:
    nodes = ["h1-r03-k12-n0", "h1-r03-k12-n1", "h1-r03-k12-n5"]
    gpu_node = np.repeat(np.arange(3), 8)
    gpu_index = np.tile(np.arange(8), 3)
    return Inventory(
        nodes,
        [f"bmc-{n}" for n in nodes],
        gpu_node,
        gpu_index,
        cdu_name=["H1-R03-K12-CDU"],
        power_name=["H1-R03-BUS-A"],
        rack_name=["H1-R03-K12"],
        **kw,
    )


def _dcgm(host: str, gpu: int, uuid: str, value: float = 40, label: str = "Hostname") -> str:
    return f'DCGM_FI_DEV_GPU_TEMP{{gpu="{gpu}",UUID="{uuid}",{label}="{host}"}} {value}\n'


def test_normalise_host():
    assert normalise_host("HTTP://H1-R03-K12-N5.dc.example:9400/metrics") == "h1-r03-k12-n5"
    assert normalise_host("10.0.3.7:623") == "10.0.3.7"


def test_gpus_by_host_and_index_then_by_uuid():
    inv = small_inventory()
    batch = parse_dcgm(
        _dcgm("h1-r03-k12-n5", 3, "GPU-x") + _dcgm("H1-R03-K12-N1.dc.local", 0, "GPU-y", label="hostname")
    )
    mapped = inv.map_batch(batch)
    assert mapped.entity_id.tolist() == [2 * 8 + 3, 1 * 8 + 0]
    assert mapped.counts.unknown_hosts == 0
    # the same GPU later reported by UUID only, under a host name we do not know
    later = inv.map_batch(parse_dcgm('DCGM_FI_DEV_GPU_TEMP{UUID="GPU-x",Hostname="dcgm-exporter-7xk2p"} 41\n'))
    assert later.entity_id.tolist() == [19]


def test_unknown_hosts_are_counted_not_dropped():
    inv = small_inventory()
    text = _dcgm("h1-r03-k12-n0", 1, "GPU-a") + _dcgm("h9-r99-k99-n9", 1, "GPU-b") + _dcgm("h9-r99-k99-n9", 2, "GPU-c")
    mapped = inv.map_batch(parse_dcgm(text))
    assert len(mapped) == 3
    assert mapped.entity_id.tolist() == [1, -1, -1]
    assert mapped.counts.unknown_hosts == 1
    assert mapped.counts.unknown_host_names == ["h9-r99-k99-n9"]


def test_gpu_index_beyond_node_is_unresolved():
    inv = small_inventory()
    mapped = inv.map_batch(parse_dcgm(_dcgm("h1-r03-k12-n0", 9, "")))
    assert mapped.entity_id.tolist() == [-1]


def test_rewrite_rules_and_aliases_for_k8s_exporter_pods():
    rules = [RewriteRule(r"^node-(\d+)$", r"h1-r03-k12-n\1")]
    inv = small_inventory(rewrite=rules, aliases={"nvidia-dcgm-exporter-wqqqn": "h1-r03-k12-n1"})
    text = _dcgm("node-5", 2, "GPU-r") + _dcgm("nvidia-dcgm-exporter-wqqqn", 7, "GPU-s")
    mapped = inv.map_batch(parse_dcgm(text))
    assert mapped.entity_id.tolist() == [2 * 8 + 2, 1 * 8 + 7]


def test_bmc_names_map_ipmi_readings_to_nodes():
    inv = small_inventory()
    text = "GPU2 Temp | 03h | ok | 3.1 | 61 degrees C\nPSU Power | 09h | ok | 10.1 | 700 Watts\n"
    mapped = inv.map_batch(parse_ipmi(text, "bmc-h1-r03-k12-n1:623"))
    kinds = mapped.entity_kind.tolist()
    assert dict(zip(mapped.metric_names(), mapped.entity_id.tolist())) == {"gpu_temp_c": 8 + 2, "node_power_w": 1}
    assert len(kinds) == 2


def test_named_equipment():
    inv = small_inventory(rewrite=[RewriteRule(r"^cdu-ctl-(.*)$", r"\1-CDU", kinds=("cdu",))])
    b = BatchBuilder("redfish")
    b.add("cdu", "cdu-ctl-H1-R03-K12", "coolant_flow_lpm", 80.0, name="CDUs/1")
    b.add("power_element", "pdu-9", "feed_power_kw", 6.4, name="H1-R03-BUS-A")
    b.add("cdu", "somewhere-else", "coolant_flow_lpm", 81.0, name="CDUs/1")
    mapped = inv.map_batch(b.build())
    assert mapped.entity_id.tolist() == [0, 0, -1]
    assert mapped.counts.unknown_hosts == 1


def test_reference_site_full_mapping():
    from twin.site.load import load_site

    site = load_site("demo")
    inv = Inventory.from_site(site)
    hosts = site.node_name[:4]
    text = "".join(_dcgm(h, g, f"GPU-{i}-{g}") for i, h in enumerate(hosts) for g in range(8))
    mapped = inv.map_batch(parse_dcgm(text))
    ids = mapped.entity_id
    assert (ids >= 0).all()
    assert np.array_equal(site.gpu_node[ids], np.repeat(np.arange(4), 8))
    assert np.array_equal(site.gpu_index[ids], np.tile(np.arange(8), 4))


def test_gpu_ids_vectorised_api():
    inv = small_inventory()
    ids = inv.gpu_ids(
        ["h1-r03-k12-n5", "bmc-h1-r03-k12-n0", "nope", "nope"], np.array([7, 1, 0, -1]), ["GPU-q", "", "", "GPU-q"]
    )
    assert ids.tolist() == [23, 1, -1, 23]


def test_redfish_uuid_joins_dcgm_uuid():
    inv = small_inventory()
    inv.map_batch(parse_dcgm(_dcgm("h1-r03-k12-n1", 4, "GPU-9DAD5BFD-A732-23FE-40AD-465D0CBE5F95")))
    b = BatchBuilder("redfish")
    b.add("gpu", "bmc-unknown-address", "gpu_power_w", 71.6, index=0, uuid="GPU-9dad5bfd-a732-23fe-40ad-465d0cbe5f95")
    # a known BMC whose SXM numbering differs from DCGM's: the UUID wins over the index
    b.add("gpu", "bmc-h1-r03-k12-n1", "gpu_temp_c", 30.0, index=0, uuid="GPU-9dad5bfd-a732-23fe-40ad-465d0cbe5f95")
    # no UUID known yet: the index is used, and nothing is learned from a BMC
    b.add("gpu", "bmc-h1-r03-k12-n1", "gpu_temp_c", 31.0, index=1, uuid="GPU-new")
    assert inv.map_batch(b.build()).entity_id.tolist() == [8 + 4, 8 + 4, 8 + 1]
    assert inv.gpu_ids(["nowhere"], np.array([0]), ["GPU-new"]).tolist() == [-1]


def test_a_huge_unknown_host_name_is_logged_cut(caplog):
    """A source sending a 100 kB host name: the warning names it in at most 80 characters."""
    import logging

    from ingest.sources.inventory import SHOWN_NAME_CHARS
    from twin.site.load import load_site

    inventory = Inventory.from_site(load_site("demo"))
    huge = "h" * 100_000
    batch = parse_dcgm(f'DCGM_FI_DEV_GPU_TEMP{{gpu="0",Hostname="{huge}"}} 40\n')
    caplog.set_level(logging.WARNING, logger="ingest.sources.inventory")
    inventory.entity_ids(batch)
    (line,) = [r.getMessage() for r in caplog.records if "unknown host" in r.getMessage()]
    assert len(line) < 400 and "h" * SHOWN_NAME_CHARS + "…" in line


def test_the_cli_cuts_any_log_message_to_a_bounded_line():
    import logging

    from twin.cli import MAX_LOG_MESSAGE_CHARS, cap_log_line

    record = logging.LogRecord("x", logging.WARNING, __file__, 1, "value %s", ("v" * 100_000,), None)
    assert cap_log_line(record) and len(record.getMessage()) < MAX_LOG_MESSAGE_CHARS + 100
