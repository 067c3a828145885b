"""``clustertwin ingest once``: read one source once and print the normalised samples.

``--target`` is a URL (``http(s)://…``, ``ipmi://user:password@host:port``) to fetch, or a
path to parse (dcgm text, Prometheus JSON, ipmitool text, a Redfish JSON file or mockup
directory).  ``--source slurm`` reads a scheduler instead (:mod:`ingest.commands.slurm_once`).  With ``--site`` the samples are mapped to the site's entities through
:class:`ingest.sources.inventory.Inventory`; without it the raw entity labels (host/gpuN …) are
printed.  Exit code 0 when the read succeeded, 1 when it failed, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from ingest.commands.run import add_run_parser
from ingest.commands.slurm_once import add_slurm_arguments, run_slurm_once
from ingest.sources import dcgm, ipmi, prometheus_api, redfish
from ingest.sources.samples import ENTITY_KINDS, METRICS, FetchResult, IngestCounts, SampleBatch, judged

SOURCES = ("dcgm", "prometheus", "redfish", "ipmi", "slurm")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``ingest`` (with its ``once`` and ``run`` sub-commands) to the ``clustertwin`` parser."""
    ingest = subparsers.add_parser("ingest", help="read telemetry sources")
    sub = ingest.add_subparsers(dest="ingest_command", required=True, metavar="SUBCOMMAND")
    add_once_command(sub)
    add_run_parser(sub)


def add_once_command(sub: argparse._SubParsersAction) -> None:
    """Add ``once`` to an existing ``ingest`` sub-parser group."""
    p = sub.add_parser("once", help="fetch or parse one source once and print normalised samples")
    p.add_argument("--source", choices=SOURCES, required=True)
    p.add_argument(
        "--target",
        default="",
        help="URL to fetch (http(s)://, ipmi://) or file/directory to parse; "
        "slurm: commands (default), a slurmrestd URL or a directory of recorded outputs",
    )
    p.add_argument("--site", help="map samples to this site's entities (name in data/sites or a path)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument(
        "--query", default=prometheus_api.DEFAULT_QUERY, help="PromQL for --source prometheus (default: DCGM fields)"
    )
    p.add_argument(
        "--host", default="", help="node name for sources without host labels (ipmi, redfish, unlabelled dcgm)"
    )
    p.add_argument("--insecure", action="store_true", help="do not verify TLS certificates (self-signed BMCs)")
    p.add_argument(
        "--timeout",
        type=float,
        default=5.0,
        help="seconds for the whole read, retries included (default 5); a Redfish crawl "
        "applies it to every page and stops after --crawl-deadline",
    )
    p.add_argument("--retries", type=int, default=2, help="retries after the first attempt (default 2)")
    p.add_argument(
        "--max-mb",
        type=float,
        default=None,
        help="largest response accepted, in MiB (default per source: dcgm 32, prometheus 256, redfish 16 per page)",
    )
    p.add_argument(
        "--crawl-deadline",
        type=float,
        default=redfish.CRAWL_DEADLINE_S,
        help=f"seconds for a whole Redfish crawl (default {redfish.CRAWL_DEADLINE_S:g})",
    )
    p.add_argument("--limit", type=int, default=0, help="print at most this many samples (0: all)")
    add_slurm_arguments(p)
    p.set_defaults(func=run_once)


def _is_url(target: str) -> bool:
    return target.startswith(("http://", "https://", "ipmi://"))


def read_once(args: argparse.Namespace) -> FetchResult:
    """Fetch (URL) or parse (path) one source.  Raises ``ValueError`` for unusable arguments."""
    target, host = args.target, args.host
    if not args.timeout > 0:
        raise ValueError(f"--timeout must be a positive number of seconds, not {args.timeout:g}")
    http_kw = dict(timeout_s=args.timeout, deadline_s=args.timeout, retries=args.retries)
    if args.max_mb is not None:
        if not args.max_mb > 0:
            raise ValueError(f"--max-mb must be positive, not {args.max_mb:g}")
        http_kw["max_bytes"] = int(args.max_mb * 2**20)
    if args.insecure:
        http_kw["verify"] = False
    if _is_url(target):
        if args.source == "dcgm":
            return dcgm.fetch_dcgm(target, default_host=host, **http_kw)
        if args.source == "prometheus":
            return prometheus_api.fetch_samples(target, args.query, default_host=host, **http_kw)
        # Redfish credentials ride in the URL (https://user:password@bmc) and are sent as basic auth.
        if args.source == "redfish":
            return redfish.fetch_redfish(target, host or None, crawl_deadline_s=args.crawl_deadline, **http_kw)
        if not target.startswith("ipmi://"):
            raise ValueError(f"--source ipmi needs an ipmi://user:password@host[:port] target, not {target!r}")
        return ipmi.fetch_ipmi(
            target, host or None, timeout_s=args.timeout, deadline_s=args.timeout, retries=args.retries
        )
    path = Path(target)
    if not path.exists():
        raise ValueError(f"--target {target!r} is neither a URL nor an existing file or directory")
    if args.source == "redfish":
        batch = _parse_redfish_path(path, host or path.name)
    elif path.is_dir():
        raise ValueError(f"--target {target!r} is a directory; only --source redfish reads mockup directories")
    else:
        text = path.read_text(errors="replace")
        if args.source == "dcgm":
            batch = dcgm.parse_dcgm(text, default_host=host)
        elif args.source == "prometheus":
            resp = prometheus_api.parse_response(text)
            if not resp.ok:
                return FetchResult(
                    "prometheus", target, False, prometheus_api.to_samples(resp), 0, f"{resp.error_type}: {resp.error}"
                )
            batch = prometheus_api.to_samples(resp, default_host=host)
        else:
            batch = ipmi.parse_ipmi(text, host or path.stem)
    return judged(FetchResult(args.source, target, True, batch, 0))


def _parse_redfish_path(path: Path, host: str) -> SampleBatch:
    files = sorted(path.rglob("*.json")) if path.is_dir() else [path]
    counts = IngestCounts()
    docs = {}
    for f in files:
        doc, err = redfish.load_document(f.read_bytes(), str(f))
        if doc is None:
            counts.malformed_lines += 1
            print(f"warning: {err}", file=sys.stderr)
            continue
        docs[str(doc.get("@odata.id") or f)] = doc
    return redfish.parse_tree(docs, host, counts)


def site_labels(site, batch: SampleBatch) -> list[str]:
    """Site entity name per sample (``?raw`` when the inventory did not resolve it)."""
    names = {
        "gpu": lambda i: f"{site.node_name[site.gpu_node[i]]}/gpu{site.gpu_index[i]}",
        "node": lambda i: site.node_name[i],
        "psu": lambda i: site.node_name[i],
        "cdu": lambda i: site.cdu_name[i],
        "pump": lambda i: site.cdu_name[i],
        "power_element": lambda i: site.power_name[i],
        "rack": lambda i: site.rack_name[i],
    }
    out = []
    ents = batch.entities
    for ref, eid in zip(batch.entity_ref.tolist(), batch.entity_id.tolist()):
        kind = ENTITY_KINDS[ents.kind[ref]]
        if eid < 0 or kind not in names:
            out.append("?" + ents.label(ref))
            continue
        label = names[kind](eid)
        if kind in ("psu", "pump") and ents.index[ref] >= 0:
            label += f"/{kind}{ents.index[ref]}"
        elif kind == "node" and ents.name[ref]:
            label += f"/{ents.name[ref]}"
        out.append(label)
    return out


def run_once(args: argparse.Namespace) -> int:
    """Entry point of ``clustertwin ingest once``."""
    if args.source == "slurm":
        return run_slurm_once(args)
    if not args.target:
        print(f"error: --source {args.source} needs --target", file=sys.stderr)
        return 2
    try:
        result = read_once(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    batch = result.batch
    if args.site:
        from ingest.sources.inventory import Inventory
        from twin.site.load import load_site

        site = load_site(args.site)
        batch = Inventory.from_site(site).map_batch(batch)
        labels = site_labels(site, batch)
    else:
        ents = batch.entities
        labels = [ents.label(r) for r in batch.entity_ref.tolist()]
    n = len(batch) if args.limit <= 0 else min(args.limit, len(batch))
    kinds = batch.entity_kind
    if args.json:
        samples = [
            {
                "kind": ENTITY_KINDS[kinds[i]],
                "entity": labels[i],
                **({"entity_id": int(batch.entity_id[i])} if batch.entity_id is not None else {}),
                "metric": METRICS[batch.metric[i]],
                "value": None if math.isnan(batch.value[i]) else float(batch.value[i]),
                "timestamp_s": float(batch.timestamp_s[i]),
            }
            for i in range(n)
        ]
        out = {
            "source": result.source,
            "target": result.target,
            "ok": result.ok,
            "error": result.error,
            "attempts": result.attempts,
            "warnings": result.warnings,
            "counts": batch.counts.as_dict(),
            "samples": samples,
        }
        print(json.dumps(out, indent=1))
    else:
        if not result.ok:
            print(f"error: {result.error} ({result.attempts} attempt(s))", file=sys.stderr)
        width = max((len(s) for s in labels[:n]), default=6)
        for i in range(n):
            v = batch.value[i]
            print(
                f"{ENTITY_KINDS[kinds[i]]:<13} {labels[i]:<{width}}  {METRICS[batch.metric[i]]:<24} {'NaN' if math.isnan(v) else f'{v:.6g}'}"
            )
        counts = {k: v for k, v in batch.counts.as_dict().items() if v}
        print(f"# {len(batch)} sample(s); counts: {json.dumps(counts)}", file=sys.stderr)
    return 0 if result.ok else 1
