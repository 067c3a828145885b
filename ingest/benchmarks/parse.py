"""Ingest benchmarks: dcgm-exporter parse throughput against prometheus_client's parser.

``dcgm_parse`` builds a realistic synthetic exposition (labels as in a real 8× H100
scrape: gpu, UUID, pci_bus_id, device, modelName, Hostname, DCGM_FI_DRIVER_VERSION; 25
fields with HELP/TYPE; one GPU per node carrying K8s pod labels), times
:class:`ingest.sources.dcgm.DcgmParser` and ``prometheus_client.parser.text_string_to_metric_families``
on the same text in the same run, and parses a full site (12,544 hosts × 8 GPUs) in
chunks to report its wall time.
"""

from __future__ import annotations

import time

from twin.bench import benchmark, best_of

# (name, type, help, value template) — the default-counters set plus profiling fields.
FIELDS: tuple[tuple[str, str, str, str], ...] = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", "{clk}"),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", "2619"),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).", "{hbm}"),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", "{temp}"),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", "{power:.6f}"),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ).", "{energy}"),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.", "0"),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", "{util}"),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", "{mcu}"),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %).", "0"),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %).", "0"),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", "0"),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", "{fbfree}"),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", "{fbused}"),
    ("DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB).", "495"),
    (
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
        "counter",
        "Total number of NVLink bandwidth counters for all lanes.",
        "{nvl}",
    ),
    ("DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge", "vGPU License status", "0"),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for uncorrectable errors", "0"),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors", "0"),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed", "0"),
    ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "gauge", "Current clock event reasons (bitmask).", "{mask}"),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active.", "{gr:.6f}"),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active.", "{tensor:.6f}"),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "gauge", "Ratio of cycles the device memory interface is active.", "{dram:.6f}"),
    (
        "DCGM_FI_PROF_PCIE_TX_BYTES",
        "gauge",
        "The rate of data transmitted over the PCIe bus in bytes per second.",
        "{pcie}",
    ),
)

FULL_SITE_HOSTS = 12_544
GPUS_PER_HOST = 8
_BUS = ("18", "2A", "3A", "5D", "9A", "AB", "BA", "DB")


def host_name(i: int) -> str:
    """Reference-site style hostname for host ``i`` (hall 1, 16 nodes per rack)."""
    rack, slot = divmod(i, 16)
    row, k = divmod(rack, 32)
    return f"h1-r{row + 1:02d}-k{k + 1:02d}-n{slot}"


def synthetic_exposition(first_host: int, n_hosts: int, seed: int = 0, hosts: list[str] | None = None) -> str:
    """dcgm-exporter text for hosts ``first_host .. first_host+n_hosts-1``, 8 GPUs each.

    ``hosts`` supplies the hostnames (e.g. a site's ``node_name``); default :func:`host_name`.
    """
    labels = []
    vals = []
    for h in range(first_host, first_host + n_hosts):
        host = hosts[h] if hosts is not None else host_name(h)
        for g in range(GPUS_PER_HOST):
            uid = (h * GPUS_PER_HOST + g + seed * 7919) & 0xFFFFFFFFFFFF
            lab = (
                f'gpu="{g}",UUID="GPU-{uid:08x}-1f2e-4d3c-8b7a-{uid:012x}",pci_bus_id="00000000:{_BUS[g]}:00.0",'
                f'device="nvidia{g}",modelName="NVIDIA H100 80GB HBM3",Hostname="{host}",'
                f'DCGM_FI_DRIVER_VERSION="580.105.08"'
            )
            if g == 0 and h % 2 == 0:
                lab += f',container="main",namespace="train",pod="llm-train-{h // 2}",pod_uid=""'
            labels.append(lab)
            k = (h * 31 + g * 17 + seed) % 97
            vals.append(
                dict(
                    clk=1755 + k,
                    hbm=48 + k % 20,
                    temp=52 + k % 25,
                    power=560.0 + k * 1.37,
                    energy=912_000_000_000 + k * 10_007,
                    util=90 + k % 11,
                    mcu=30 + k % 40,
                    fbfree=6000 + k,
                    fbused=75000 - k,
                    nvl=1_000_000_000 + k,
                    mask=4 if k % 3 else 0,
                    gr=0.9 + k / 1000,
                    tensor=0.4 + k / 1000,
                    dram=0.5 + k / 1000,
                    pcie=1_000_000 + k,
                )
            )
    out = []
    for name, typ, help_, tmpl in FIELDS:
        out.append(f"# HELP {name} {help_}\n# TYPE {name} {typ}\n")
        out.extend(f"{name}{{{lab}}} {tmpl.format(**v)}\n" for lab, v in zip(labels, vals))
    return "".join(out)


def _peer_parse(text: str) -> int:
    from prometheus_client.parser import text_string_to_metric_families

    return sum(len(f.samples) for f in text_string_to_metric_families(text))


@benchmark("dcgm_parse")
def dcgm_parse(n_hosts: int = 64, peer_hosts: int = 8, site_chunk_hosts: int = 784) -> dict:
    """Lines/s of our parser and prometheus_client on the same synthetic text; full-site seconds."""
    from ingest.sources.dcgm import DcgmParser

    text = synthetic_exposition(0, n_hosts)
    lines = text.count("\n")
    ours_s = best_of(lambda: DcgmParser().parse(text), repeat=7)
    peer_text = synthetic_exposition(0, peer_hosts)
    peer_lines = peer_text.count("\n")
    ours_small_s = best_of(lambda: DcgmParser().parse(peer_text), repeat=7)
    peer_s = best_of(lambda: _peer_parse(peer_text), repeat=7)

    # Full site in chunks (text generation is not timed); a cold parser, then a warm one
    # (label memo filled by the previous scrape, as in a running poller); then the
    # inventory mapping of every sample to a dense GPU id of the colossus reference site.
    from ingest.sources.inventory import Inventory
    from twin.site.load import load_site

    site = load_site("colossus")
    hosts = list(site.node_name)
    n_hosts_site = len(hosts)
    inventory = Inventory.from_site(site)
    cold = DcgmParser()
    full_s = warm_s = map_s = 0.0
    full_lines = full_samples = unmapped = 0
    for first in range(0, n_hosts_site, site_chunk_hosts):
        chunk = synthetic_exposition(first, min(site_chunk_hosts, n_hosts_site - first), hosts=hosts)
        full_lines += chunk.count("\n")
        t0 = time.perf_counter()
        batch = cold.parse(chunk).batch
        full_s += time.perf_counter() - t0
        full_samples += len(batch)
        t0 = time.perf_counter()
        cold.parse(chunk)
        warm_s += time.perf_counter() - t0
        t0 = time.perf_counter()
        mapped = inventory.map_batch(batch)
        map_s += time.perf_counter() - t0
        unmapped += int((mapped.entity_id < 0).sum())
        del chunk, batch, mapped

    lines_per_s = lines / ours_s
    same_text_ours = peer_lines / ours_small_s
    peer_lines_per_s = peer_lines / peer_s
    return {
        "lines": lines,
        "lines_per_s": round(lines_per_s),
        "peer": "prometheus_client.parser.text_string_to_metric_families",
        "peer_lines": peer_lines,
        "peer_lines_per_s": round(peer_lines_per_s),
        "ours_lines_per_s_on_peer_text": round(same_text_ours),
        "speedup_ratio": round(same_text_ours / peer_lines_per_s, 1),
        "full_site_hosts": n_hosts_site,
        "full_site_gpus": n_hosts_site * GPUS_PER_HOST,
        "full_site_lines": full_lines,
        "full_site_samples": full_samples,
        "full_site_parse_s": round(full_s, 2),
        "full_site_parse_warm_s": round(warm_s, 2),
        "full_site_map_s": round(map_s, 2),
        "full_site_unmapped_samples": unmapped,
    }
