"""The incident bundle: one portable file holding a recorded window, its site and its metadata.

A bundle is a zip archive (stored, not deflated: the members are already compressed)
whose members are Parquet tables, the site file and two JSON documents::

    manifest.json   format name and version, and for every other member its size, SHA-256
                    and (for tables) row count — written last, checked first
    metadata.json   title, site name and version, window, tags, notes, kept entities
    site.toml       the site file the recording ran with
    <table>.parquet one Parquet table per kind of data (see docs/incidents.md)

pandas opens a table without ClusterTwin::

    import zipfile, pandas as pd
    gpu = pd.read_parquet(zipfile.ZipFile("x.ctincident").open("gpu.parquet"))

:func:`read_bundle` validates everything (format, checksums, sizes, schemas) and raises
:class:`BundleError` with one line naming the problem; it never returns a partial bundle.
:func:`write_bundle` writes to a temporary file, syncs it and renames it into place, so a
crash leaves either the old file or the new one, never half of one.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

FORMAT = "clustertwin-incident"
FORMAT_VERSION = 1
SUFFIX = ".ctincident"
MAX_MEMBER_BYTES = 512 * 2**20  # a member larger than this is refused before being read

_TS = pa.timestamp("ms", tz="UTC")
_F = pa.float32()
_I = pa.int32()
_IDS = pa.list_(pa.int32())

# Every table of a bundle and its schema (name → Arrow type); unknown tables are refused.
SCHEMAS: dict[str, pa.Schema] = {
    "gpu": pa.schema(
        [
            ("ts", _TS),
            ("gpu_id", _I),
            ("gpu_temp_c", _F),
            ("hbm_temp_c", _F),
            ("gpu_power_w", _F),
            ("gpu_util_frac", _F),
            ("sm_clock_mhz", _F),
            ("throttle_frac", _F),
            ("last_xid_code", pa.int16()),
        ]
    ),
    "rack": pa.schema(
        [
            ("ts", _TS),
            ("rack_id", _I),
            ("rack_power_kw", _F),
            ("rack_max_gpu_temp_c", _F),
            ("rack_mean_gpu_temp_c", _F),
            ("rack_mean_gpu_power_w", _F),
            ("rack_mean_util_frac", _F),
            ("rack_mean_throttle_frac", _F),
            ("rack_gpus_down_total", pa.int16()),
        ]
    ),
    "cdu": pa.schema(
        [
            ("ts", _TS),
            ("cdu_id", _I),
            ("coolant_supply_temp_c", _F),
            ("coolant_return_temp_c", _F),
            ("coolant_flow_lpm", _F),
            ("cdu_heat_kw", _F),
            ("cdu_capacity_kw", _F),
            ("pumps_running_count", pa.int8()),
        ]
    ),
    "power": pa.schema([("ts", _TS), ("power_id", _I), ("feed_power_kw", _F), ("load_frac", _F)]),
    "source": pa.schema([("ts", _TS), ("source_id", _I), ("source_power_mw", _F), ("battery_soc_frac", _F)]),
    "loop": pa.schema([("ts", _TS), ("loop_id", _I), ("loop_supply_temp_c", _F), ("loop_return_temp_c", _F)]),
    "site": pa.schema(
        [
            ("ts", _TS),
            ("it_power_mw", _F),
            ("facility_power_mw", _F),
            ("pue_ratio", _F),
            ("outdoor_dry_bulb_c", _F),
            ("outdoor_wet_bulb_c", _F),
            ("job_tokens_per_s", _F),
            ("job_step_time_s", _F),
            ("failed_power", _IDS),
            ("failed_sources", _IDS),
            ("failed_links", _IDS),
            ("nodes_off", _IDS),
        ]
    ),
    "events": pa.schema(
        [
            ("ts", _TS),
            ("severity", pa.string()),
            ("source", pa.string()),
            ("entity_kind", pa.string()),
            ("entity_id", _I),
            ("entity_name", pa.string()),
            ("metric", pa.string()),
            ("value", pa.float64()),
            ("message", pa.string()),
        ]
    ),
}
REQUIRED_TABLES = ("rack", "cdu", "site")  # the minimum a replay needs
ID_COLUMNS = {
    "gpu": "gpu_id",
    "rack": "rack_id",
    "cdu": "cdu_id",
    "power": "power_id",
    "source": "source_id",
    "loop": "loop_id",
}
METADATA_KEYS = (
    "name",
    "title",
    "site_name",
    "site_version",
    "start",
    "end",
    "frame_every_s",
    "tags",
    "notes",
    "origin",
)


class BundleError(ValueError):
    """A file is not a valid incident bundle (the message says why, in one line)."""


@dataclass
class Bundle:
    """An incident in memory: metadata, the site file text and the tables (name → Arrow table)."""

    metadata: dict
    site_toml: str
    tables: dict[str, pa.Table] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.metadata["name"]

    def frame(self, table: str):
        """One table as a pandas DataFrame (empty with the right columns when absent)."""
        t = self.tables.get(table)
        return (t if t is not None else SCHEMAS[table].empty_table()).to_pandas()


def empty_table(name: str) -> pa.Table:
    return SCHEMAS[name].empty_table()


def _table_bytes(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd", compression_level=9, use_dictionary=["ts"])
    return sink.getvalue()


def _check_metadata(meta: dict) -> None:
    missing = [k for k in METADATA_KEYS if k not in meta]
    if missing:
        raise BundleError(f"metadata lacks {', '.join(missing)}")
    if not isinstance(meta["tags"], list) or not all(isinstance(t, str) for t in meta["tags"]):
        raise BundleError("metadata 'tags' must be a list of strings")
    if not isinstance(meta["name"], str) or not meta["name"] or "/" in meta["name"] or meta["name"].startswith("."):
        raise BundleError(f"metadata 'name' {meta['name']!r} is not a usable incident name")


def bundle_bytes(bundle: Bundle) -> bytes:
    """The bundle file's content (see module docstring)."""
    _check_metadata(bundle.metadata)
    members: dict[str, bytes] = {
        "metadata.json": json.dumps(bundle.metadata, indent=1, sort_keys=True).encode(),
        "site.toml": bundle.site_toml.encode("utf-8"),
    }
    rows = {}
    for name, table in bundle.tables.items():
        if name not in SCHEMAS:
            raise BundleError(f"unknown table {name!r}")
        members[f"{name}.parquet"] = _table_bytes(table.cast(SCHEMAS[name]))
        rows[name] = table.num_rows
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "members": {k: {"bytes": len(v), "sha256": hashlib.sha256(v).hexdigest()} for k, v in members.items()},
        "rows": rows,
    }
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        zf.writestr("manifest.json", json.dumps(manifest, indent=1, sort_keys=True))
        zf.comment = f"{FORMAT}/{FORMAT_VERSION}".encode()
    return out.getvalue()


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a synced temporary file and a rename."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def write_bundle(path: Path, bundle: Bundle) -> Path:
    """Write ``bundle`` to ``path`` atomically; returns the path."""
    write_atomic(Path(path), bundle_bytes(bundle))
    return Path(path)


def _read_member(zf: zipfile.ZipFile, name: str, expected: dict) -> bytes:
    info = zf.getinfo(name)
    if info.file_size != expected.get("bytes") or info.file_size > MAX_MEMBER_BYTES:
        raise BundleError(f"member {name} is {info.file_size} bytes, the manifest says {expected.get('bytes')}")
    data = zf.read(name)
    if hashlib.sha256(data).hexdigest() != expected.get("sha256"):
        raise BundleError(f"member {name} fails its checksum (modified or damaged)")
    return data


def _read_table(name: str, data: bytes, rows: int | None) -> pa.Table:
    try:
        table = pq.read_table(io.BytesIO(data))
    except (pa.ArrowException, OSError) as exc:
        raise BundleError(f"table {name} is not readable Parquet ({exc})") from None
    want = SCHEMAS[name]
    if table.schema.names != want.names:
        raise BundleError(f"table {name} has columns {table.schema.names}, expected {want.names}")
    for f in want:
        if table.schema.field(f.name).type != f.type:
            raise BundleError(f"table {name} column {f.name} is {table.schema.field(f.name).type}, expected {f.type}")
    if rows is not None and table.num_rows != rows:
        raise BundleError(f"table {name} has {table.num_rows} rows, the manifest says {rows}")
    return table.replace_schema_metadata(None)


def parse_bundle(data: bytes, origin: str = "bundle") -> Bundle:
    """Validate and load a bundle from its bytes (see :func:`read_bundle`)."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise BundleError(f"{origin}: not an incident bundle (not a zip archive, or truncated)") from None
    with zf:
        if zf.comment != f"{FORMAT}/{FORMAT_VERSION}".encode():
            comment = zf.comment.decode(errors="replace")
            if comment.startswith(FORMAT + "/"):
                raise BundleError(
                    f"{origin}: bundle format {comment!r} is not supported (this reads {FORMAT}/{FORMAT_VERSION})"
                )
            raise BundleError(f"{origin}: not an incident bundle (zip archive without the {FORMAT} mark)")
        try:
            manifest = json.loads(zf.read("manifest.json"))
        except (KeyError, ValueError):
            raise BundleError(f"{origin}: manifest.json is missing or not JSON") from None
        if manifest.get("format") != FORMAT or manifest.get("format_version") != FORMAT_VERSION:
            raise BundleError(
                f"{origin}: manifest names format {manifest.get('format')!r} version {manifest.get('format_version')!r}"
            )
        members, rows = manifest.get("members", {}), manifest.get("rows", {})
        present = set(zf.namelist()) - {"manifest.json"}
        if present != set(members):
            extra, lost = sorted(present - set(members)), sorted(set(members) - present)
            raise BundleError(f"{origin}: members differ from the manifest (unlisted {extra}, missing {lost})")
        for needed in ("metadata.json", "site.toml", *(f"{t}.parquet" for t in REQUIRED_TABLES)):
            if needed not in members:
                raise BundleError(f"{origin}: member {needed} is missing")
        try:
            contents = {name: _read_member(zf, name, spec) for name, spec in members.items()}
        except BundleError as exc:
            raise BundleError(f"{origin}: {exc}") from None
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise BundleError(f"{origin}: damaged archive ({exc})") from None
    try:
        metadata = json.loads(contents.pop("metadata.json"))
        _check_metadata(metadata)
        site_toml = contents.pop("site.toml").decode("utf-8")
        tables = {}
        for member, data_ in contents.items():
            table, _, ext = member.rpartition(".")
            if ext != "parquet" or table not in SCHEMAS:
                raise BundleError(f"unknown member {member}")
            tables[table] = _read_table(table, data_, rows.get(table))
    except BundleError as exc:
        raise BundleError(f"{origin}: {exc}") from None
    except ValueError as exc:
        raise BundleError(f"{origin}: metadata.json or site.toml unreadable ({exc})") from None
    return Bundle(metadata=metadata, site_toml=site_toml, tables=tables)


def read_bundle(path: Path) -> Bundle:
    """Load and validate the bundle at ``path``; :class:`BundleError` for anything wrong with it."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BundleError(f"{path}: cannot read ({exc.strerror})") from None
    return parse_bundle(data, origin=path.name)
