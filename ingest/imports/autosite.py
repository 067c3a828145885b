"""``--site auto``: a minimal site sized from a recording, for clusters that have no site file yet.

The recording's hosts become nodes (in name order) of 8-GPU H100 liquid-cooled racks
taken from the ``demo`` reference site (its power, cooling and fabric sized for 16
racks); everything not measured keeps the catalogue defaults.  The mapping from recorded
hostnames to the site's node names is stored in the incident's metadata (``host_map``).
Up to 16 racks (128 nodes) are supported; larger clusters need a site file.
"""

from __future__ import annotations

import math
import re

from ingest.imports.series import RecordingImportError
from twin.site.catalogue import load_catalogue
from twin.site.load import build_site, site_path
from twin.site.tables import SiteTables

NODES_PER_RACK = 8
RACKS_PER_ROW = 8
MAX_RACKS = 16


def auto_site(name: str, hosts: list[str], gpu_model: str | None = None) -> tuple[str, SiteTables, dict[str, str]]:
    """(site TOML, built site, host → node name) for a recording of ``hosts``."""
    if not hosts:
        raise RecordingImportError("--site auto: the recording names no host")
    n_racks = math.ceil(len(hosts) / NODES_PER_RACK)
    if n_racks > MAX_RACKS:
        raise RecordingImportError(
            f"--site auto: {len(hosts)} hosts need {n_racks} racks, more than the {MAX_RACKS} a "
            f"minimal site holds; write a site file"
        )
    text = site_path("demo").read_text(encoding="utf-8")
    header = (
        f"# Site built by `clustertwin incidents import --site auto` from a recording of {len(hosts)} host(s)"
        f"{f' with {gpu_model} GPUs' if gpu_model else ''}: demo-site equipment, catalogue defaults.\n"
    )
    text = header + re.sub(r'^name = "demo"$', f'name = "{name}"', text, count=1, flags=re.M)
    text = re.sub(r"^default_job = .*$", 'default_job = ""', text, count=1, flags=re.M)
    rows = [min(RACKS_PER_ROW, n_racks - RACKS_PER_ROW * i) for i in range(math.ceil(n_racks / RACKS_PER_ROW))]
    text = re.sub(r'(\{ name = "R01",.*?racks = )8', rf"\g<1>{rows[0]}", text)
    if len(rows) > 1:
        text = re.sub(r'(\{ name = "R02",.*?racks = )8', rf"\g<1>{rows[1]}", text)
    else:
        text = re.sub(r'^  \{ name = "R02".*\n', "", text, flags=re.M)
    state = build_site(text, f"{name} (auto)", load_catalogue())
    host_map = {h: state.node_name[i] for i, h in enumerate(sorted(hosts))}
    return text, state, host_map
