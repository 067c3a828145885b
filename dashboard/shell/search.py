"""Global search (Ctrl-K): find a rack, host, GPU, CDU, loop, power element, source, switch or job by name.

Case-insensitive; an exact name ranks first, then names that start with the query, then
names that contain it.  Each hit carries the page URL that shows the entity
(:func:`dashboard.shell.entity_links.entity_href`).  The index is built once per site: plain
numpy arrays of lower-cased names, so a query over a 100k-GPU site stays in tens of ms.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dashboard.shell.entity_links import entity_href
from twin.site.tables import SiteTables

MAX_QUERY_CHARS = 100
MAX_HITS = 10
KIND_LABEL = {
    "rack": "rack",
    "node": "host",
    "gpu": "GPU",
    "cdu": "CDU",
    "loop": "loop",
    "power": "power",
    "source": "source",
    "switch": "switch",
    "job": "job",
}


@dataclass(frozen=True)
class Hit:
    """One search result: what it is, its name, and where it is shown."""

    kind: str
    name: str
    href: str

    @property
    def label(self) -> str:
        return f"{KIND_LABEL.get(self.kind, self.kind)} {self.name}"


class SearchIndex:
    """Lower-cased entity names of one site, by kind (see module docstring)."""

    def __init__(self, state: SiteTables) -> None:
        self.state = state
        gpu_names = [f"{state.node_name[n]}/gpu{int(i)}" for n, i in zip(state.gpu_node, state.gpu_index)]
        self._kinds: list[tuple[str, list[str], np.ndarray]] = [
            (kind, names, np.char.lower(np.array(names, dtype=str)) if names else np.array([], dtype=str))
            for kind, names in (
                ("rack", state.rack_name),
                ("node", state.node_name),
                ("cdu", state.cdu_name),
                ("loop", state.loop_name),
                ("power", state.power_name),
                ("source", state.source_name),
                ("switch", state.switch_name),
                ("gpu", gpu_names),
            )
        ]

    def find(self, query: str, jobs: list[str] | tuple[str, ...] = (), limit: int = MAX_HITS) -> list[Hit]:
        """Up to ``limit`` hits for ``query`` (empty for a blank or over-long query)."""
        q = (query or "").strip().lower()
        if not q or len(q) > MAX_QUERY_CHARS:
            return []
        scored: list[tuple[int, int, str, str, int]] = []  # (rank, length, kind, name, id)
        for kind, names, lowered in self._kinds + [("job", list(jobs), np.char.lower(np.array(jobs, dtype=str)))]:
            if lowered.size == 0:
                continue
            pos = np.char.find(lowered, q)
            for i in np.flatnonzero(pos >= 0)[: 4 * limit]:
                rank = 0 if lowered[i] == q else 1 if pos[i] == 0 else 2
                scored.append((rank, len(names[i]), kind, names[i], int(i)))
        scored.sort()
        hits = []
        for _, _, kind, name, i in scored[:limit]:
            href = entity_href(self.state, kind, i if kind != "job" else None, name)
            if href:
                hits.append(Hit(kind, name, href))
        return hits
