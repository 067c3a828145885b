"""``clustertwin incidents import --format …``: read a recording, size or load its site, build and store the bundle."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import pandas as pd

from ingest.imports import dcgmi, mlperf, nvidia_smi
from ingest.imports.autosite import auto_site
from ingest.imports.series import RecordingImportError, series_bundle
from ingest.replay.library import store_bundle, validate
from twin.site.load import load_site, site_path


def _files(source: Path, patterns: tuple[str, ...]) -> list[Path]:
    if source.is_dir():
        files = sorted(f for p in patterns for f in source.glob(p))
        if not files:
            raise RecordingImportError(f"{source}: no {' or '.join(patterns)} files")
        return files
    if not source.exists():
        raise RecordingImportError(f"{source}: no such file or directory")
    return [source]


def _utc(text: str | None, what: str) -> datetime:
    if not text:
        raise RecordingImportError(f"{what} is required for this format (ISO 8601 with a time zone)")
    ts = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if ts.tzinfo is None:
        raise RecordingImportError(f"{what} {text!r}: needs a time zone, e.g. 2024-07-22T15:00:00Z")
    return ts


def read_series(args, state) -> tuple[pd.DataFrame, list[dict], str | None]:
    """(series, events, GPU model) of the recording named by ``args``."""
    fmt, source = args.format, args.source
    events, model = [], None
    if fmt == "prometheus":
        from ingest.imports.prometheus import fetch_history

        start, end = _utc(args.start, "--start"), _utc(args.end, "--end")
        return fetch_history(source, start.timestamp(), end.timestamp(), args.step, state), events, None
    path = Path(source)
    if fmt == "mlperf-power":
        series = mlperf.read_power_logs(path)
        if args.run_log:
            events = mlperf.parse_run_log(Path(args.run_log).read_text(errors="replace"))
        return series, events, None
    parts = []
    for f in _files(path, ("*.csv", "*.xml", "*.txt", "*.log")):
        text = f.read_text(errors="replace")
        host = f.stem
        if fmt == "nvidia-smi-csv":
            parts.append(nvidia_smi.parse_csv(text, host))
        elif fmt == "nvidia-smi-xml":
            parts.append(nvidia_smi.parse_xml(text, host))
            model = model or nvidia_smi.product_name(text)
        else:
            parts.append(dcgmi.parse_dmon(text, host, _utc(args.start, "--start"), args.step))
    return pd.concat(parts, ignore_index=True), events, model


def default_name(args) -> str:
    """The incident name of an import without ``--name``: format and source file, e.g. ``dcgmi-dmon-node7``."""
    stem = Path(args.source.rstrip("/")).name if args.format != "prometheus" else "prometheus"
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{args.format}-{stem}").strip("-.")


def import_recording(args) -> tuple[str, dict]:
    """Import the recording of ``args``; returns (incident name, report with skipped entities and site)."""
    name = args.name or default_name(args)
    auto = args.site == "auto"
    state = None if auto else load_site(args.site)
    series, events, model = read_series(args, state)
    if series.empty:
        raise RecordingImportError(f"{args.source}: no usable reading in the recording")
    host_map = None
    if auto:
        text, state, host_map = auto_site(f"auto-{name}", sorted(series["host"].unique()), model)
    else:
        text = site_path(args.site).read_text(encoding="utf-8")
    bundle, skipped = series_bundle(
        series,
        state,
        text,
        name=name,
        title=f"Imported {args.format} recording",
        origin=f"{args.format}: {args.source}",
        step_s=args.step,
        host_map=host_map,
        tags=["imported", args.format],
        notes=f"GPU model reported: {model}" if model else "",
        events=events,
    )
    validate(bundle)  # before anything is stored
    version = _record_site_version(args, state.name, text) if auto else 1
    bundle.metadata["site_version"] = version
    store_bundle(bundle, args.dir, replace=args.replace)
    return name, {
        "site": state.name,
        "site_version": version,
        "skipped": skipped,
        "frames": bundle.tables["site"].num_rows,
    }


def _record_site_version(args, name: str, text: str) -> int:
    """Store the auto-built site as a site version in the database; returns its number."""
    from ingest.store.db import open_database
    from ingest.store.siteversions import record_site_version

    if getattr(args, "engine", None) is not None:  # the caller's database (the API's)
        return record_site_version(args.engine, name, text).version
    engine = open_database(getattr(args, "db", None))
    try:
        return record_site_version(engine, name, text).version
    finally:
        engine.dispose()
