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
import re
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

FORMAT = "clustertwin-incident"
FORMAT_VERSION = 1
SUFFIX = ".ctincident"
# Caps checked before anything is decompressed or decoded (a small file must not cost much memory):
MAX_JSON_BYTES = 2**20  # manifest.json, metadata.json
MAX_SITE_BYTES = 8 * 2**20  # site.toml (a ten-campus site file is 0.7 MB)
MAX_MEMBER_BYTES = 256 * 2**20  # one Parquet member, declared and actual
MAX_BUNDLE_BYTES = 512 * 2**20  # all members together, uncompressed
MAX_TABLE_ROWS = 8_000_000  # rows of one table (a 1 h colossus recording at 5 s: 1.1 M rack rows)
MAX_DECODED_BYTES = 512 * 2**20  # all tables decoded into memory (Arrow), from the Parquet footers
MAX_NAME_CHARS = 120
NAME_PATTERN = re.compile(rf"^[A-Za-z0-9][A-Za-z0-9._+@-]{{0,{MAX_NAME_CHARS - 1}}}$")
READ_CHUNK_BYTES = 2**20
# Bundles are decoded and converted without Arrow's CPU thread pool: a process that had used it
# (Parquet decoding with threads) aborted at exit about one run in ten ("terminate called without
# an active exception", exit 134) as the pool's threads were torn down; a bundle's tables are small.
NO_ARROW_THREADS = True  # documents the choice; the calls pass use_threads=False

# events.parquet rows: an alert opening (its severity) or the end of one (CLEARED, with the
# opening's source, entity and metric); bundles written before clearings were logged hold openings only
CLEARED = "CLEARED"
EVENT_SEVERITIES = ("critical", "warning", "info", CLEARED)

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
    # the fleet's jobs running in the window (recordings with the live fleet): where each ran, from when to when
    "jobs": pa.schema(
        [
            ("job_id", pa.string()),
            ("team", pa.string()),
            ("n_gpus", _I),
            ("rack_ids", _IDS),
            ("first_ts", _TS),
            ("last_ts", _TS),
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


MEMBER_CAPS = {
    "manifest.json": MAX_JSON_BYTES,
    "metadata.json": MAX_JSON_BYTES,
    "site.toml": MAX_SITE_BYTES,
    **{f"{t}.parquet": MAX_MEMBER_BYTES for t in SCHEMAS},
}


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
        return (t if t is not None else SCHEMAS[table].empty_table()).to_pandas(use_threads=False)  # NO_ARROW_THREADS


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
    check_name(meta["name"], "metadata 'name'")


def check_name(name, what: str = "incident name") -> str:
    """``name`` if it is a usable incident name (it becomes a file name and is shown in terminals and pages).

    A letter or digit, then up to 119 letters, digits or ``. _ + @ -``: no path separator,
    no control character (ANSI escapes, newlines), no markup.
    """
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        shown = repr(name)[:80] if isinstance(name, str) else type(name).__name__
        raise BundleError(
            f"{what} {shown} is not a usable incident name (a letter or digit, then up to "
            f"{MAX_NAME_CHARS - 1} letters, digits or . _ + @ -)"
        )
    return name


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


def _check_directory(zf: zipfile.ZipFile) -> dict[str, zipfile.ZipInfo]:
    """The archive's members by name, refused unless every name is known, once, and within its size cap.

    Sizes are the zip directory's declared uncompressed sizes; :func:`_read_capped` checks the
    actual ones while reading.  Nothing is decompressed here.
    """
    infos = zf.infolist()
    if len(infos) > len(MEMBER_CAPS):
        raise BundleError(f"the archive holds {len(infos)} members, a bundle has at most {len(MEMBER_CAPS)}")
    out: dict[str, zipfile.ZipInfo] = {}
    for info in infos:
        cap = MEMBER_CAPS.get(info.filename)
        if cap is None:
            raise BundleError(f"unknown member {info.filename[:80]!r}")
        if info.filename in out:
            raise BundleError(f"member {info.filename} appears twice")
        if info.file_size > cap:
            raise BundleError(f"member {info.filename} is {info.file_size} bytes uncompressed, at most {cap}")
        out[info.filename] = info
    total = sum(i.file_size for i in infos)
    if total > MAX_BUNDLE_BYTES:
        raise BundleError(f"members add up to {total} bytes uncompressed, at most {MAX_BUNDLE_BYTES}")
    return out


def _read_capped(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """A member's bytes, read in chunks and refused as soon as they pass its declared size or its cap."""
    limit = min(info.file_size, MEMBER_CAPS[info.filename])
    chunks, total = [], 0
    with zf.open(info) as src:
        while chunk := src.read(min(READ_CHUNK_BYTES, limit + 1 - total)):
            total += len(chunk)
            if total > limit:
                raise BundleError(f"member {info.filename} holds more than its declared {info.file_size} bytes")
            chunks.append(chunk)
    return b"".join(chunks)


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, expected: dict) -> bytes:
    name = info.filename
    if not isinstance(expected, dict) or info.file_size != expected.get("bytes"):
        shown = expected.get("bytes") if isinstance(expected, dict) else None
        raise BundleError(f"member {name} is {info.file_size} bytes, the manifest says {shown}")
    data = _read_capped(zf, info)
    if hashlib.sha256(data).hexdigest() != expected.get("sha256"):
        raise BundleError(f"member {name} fails its checksum (modified or damaged)")
    return data


def _footer(name: str, data: bytes, rows) -> pq.ParquetFile:
    """The Parquet file of table ``name``, its footer checked (schema, rows, decoded size) before any data is read."""
    try:
        pf = pq.ParquetFile(io.BytesIO(data))
        schema = pf.schema_arrow
    except (pa.ArrowException, OSError) as exc:
        raise BundleError(f"table {name} is not readable Parquet ({exc})") from None
    want = SCHEMAS[name]
    if schema.names != want.names:
        raise BundleError(f"table {name} has columns {schema.names}, expected {want.names}")
    for f in want:
        if schema.field(f.name).type != f.type:
            raise BundleError(f"table {name} column {f.name} is {schema.field(f.name).type}, expected {f.type}")
    meta = pf.metadata
    if not isinstance(rows, int) or meta.num_rows != rows:
        raise BundleError(f"table {name} declares {meta.num_rows} rows, the manifest says {rows}")
    if rows > MAX_TABLE_ROWS:
        raise BundleError(f"table {name} declares {rows} rows, at most {MAX_TABLE_ROWS}")
    return pf


def _decoded_bytes(pf: pq.ParquetFile) -> int:
    """What the footer says the table's columns take uncompressed, in bytes."""
    meta = pf.metadata
    return sum(
        meta.row_group(g).column(c).total_uncompressed_size
        for g in range(meta.num_row_groups)
        for c in range(meta.num_columns)
    )


def _read_table(name: str, pf: pq.ParquetFile, budget: list[int]) -> pa.Table:
    """Table ``name`` read one row group at a time, each charged to ``budget`` (bytes left to decode)."""
    parts = []
    try:
        for g in range(pf.metadata.num_row_groups):
            part = pf.read_row_group(g, use_threads=False)  # see NO_ARROW_THREADS
            budget[0] -= part.nbytes
            if budget[0] < 0:
                raise BundleError(f"tables decode to more than {MAX_DECODED_BYTES} bytes (table {name})")
            parts.append(part)
        table = pa.concat_tables(parts) if parts else SCHEMAS[name].empty_table()
    except (pa.ArrowException, OSError) as exc:
        raise BundleError(f"table {name} is not readable Parquet ({exc})") from None
    if table.num_rows != pf.metadata.num_rows:
        raise BundleError(f"table {name} has {table.num_rows} rows, its footer says {pf.metadata.num_rows}")
    return table.replace_schema_metadata(None)


def _open_archive(zf: zipfile.ZipFile, origin: str) -> tuple[dict, dict[str, zipfile.ZipInfo]]:
    """The checked manifest and member directory of an opened bundle archive."""
    if zf.comment != f"{FORMAT}/{FORMAT_VERSION}".encode():
        comment = zf.comment.decode(errors="replace")
        if comment.startswith(FORMAT + "/"):
            raise BundleError(
                f"{origin}: bundle format {comment[:60]!r} is not supported (this reads {FORMAT}/{FORMAT_VERSION})"
            )
        raise BundleError(f"{origin}: not an incident bundle (zip archive without the {FORMAT} mark)")
    try:
        infos = _check_directory(zf)
        if "manifest.json" not in infos:
            raise BundleError("manifest.json is missing")
        manifest = json.loads(_read_capped(zf, infos.pop("manifest.json")))
    except BundleError as exc:
        raise BundleError(f"{origin}: {exc}") from None
    except (zipfile.BadZipFile, OSError, EOFError, zlib.error, NotImplementedError) as exc:
        raise BundleError(f"{origin}: damaged archive ({str(exc)[:120]})") from None
    except (ValueError, RecursionError):
        raise BundleError(f"{origin}: manifest.json is not JSON") from None
    if not isinstance(manifest, dict):
        raise BundleError(f"{origin}: manifest.json is not a JSON object")
    if manifest.get("format") != FORMAT or manifest.get("format_version") != FORMAT_VERSION:
        raise BundleError(
            f"{origin}: manifest names format {str(manifest.get('format'))[:40]!r} "
            f"version {str(manifest.get('format_version'))[:20]!r}"
        )
    members, rows = manifest.get("members"), manifest.get("rows", {})
    if not isinstance(members, dict) or not isinstance(rows, dict):
        raise BundleError(f"{origin}: manifest.json lacks its members and rows")
    if set(infos) != set(members):
        extra, lost = sorted(set(infos) - set(members)), sorted(set(members) - set(infos))
        raise BundleError(f"{origin}: members differ from the manifest (unlisted {extra}, missing {lost[:20]})")
    for needed in ("metadata.json", "site.toml", *(f"{t}.parquet" for t in REQUIRED_TABLES)):
        if needed not in members:
            raise BundleError(f"{origin}: member {needed} is missing")
    return manifest, infos


def _load_metadata(data: bytes) -> dict:
    try:
        metadata = json.loads(data)
    except (ValueError, RecursionError):
        raise BundleError("metadata.json is not JSON") from None
    if not isinstance(metadata, dict):
        raise BundleError("metadata.json is not a JSON object")
    _check_metadata(metadata)
    return metadata


def _zip(source, origin: str) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(source)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError):
        raise BundleError(f"{origin}: not an incident bundle (not a zip archive, or truncated)") from None


def parse_bundle(data: bytes, origin: str = "bundle") -> Bundle:
    """Validate and load a bundle from its bytes (see :func:`read_bundle`).

    Every cap is checked before the bytes it guards are produced: member names, count and
    declared sizes from the zip directory; actual sizes while decompressing; each table's
    schema, row count and decoded size from its Parquet footer before its data is read.
    """
    with _zip(io.BytesIO(data), origin) as zf:
        manifest, infos = _open_archive(zf, origin)
        members, rows = manifest["members"], manifest["rows"]
        try:
            contents = {name: _read_member(zf, info, members[name]) for name, info in infos.items()}
        except BundleError as exc:
            raise BundleError(f"{origin}: {exc}") from None
        except (zipfile.BadZipFile, OSError, EOFError, zlib.error, NotImplementedError) as exc:
            raise BundleError(f"{origin}: damaged archive ({str(exc)[:120]})") from None
    try:
        metadata = _load_metadata(contents.pop("metadata.json"))
        site_toml = contents.pop("site.toml").decode("utf-8")
        files = {member.rpartition(".")[0]: data_ for member, data_ in contents.items()}
        footers = {table: _footer(table, data_, rows.get(table)) for table, data_ in files.items()}
        declared = sum(_decoded_bytes(pf) for pf in footers.values())
        if declared > MAX_DECODED_BYTES:
            raise BundleError(f"tables declare {declared} bytes decoded, at most {MAX_DECODED_BYTES}")
        budget = [MAX_DECODED_BYTES]
        tables = {table: _read_table(table, pf, budget) for table, pf in footers.items()}
    except BundleError as exc:
        raise BundleError(f"{origin}: {exc}") from None
    except ValueError as exc:
        raise BundleError(f"{origin}: metadata.json or site.toml unreadable ({str(exc)[:120]})") from None
    return Bundle(metadata=metadata, site_toml=site_toml, tables=tables)


def read_metadata(path: Path) -> dict:
    """A bundle's metadata alone, without reading its tables: what listing the library needs.

    The archive's directory and manifest are checked as :func:`read_bundle` checks them (names,
    counts, caps) and ``metadata.json`` against its checksum; the tables are neither read nor
    validated (an import validated them; a replay validates them again).
    """
    path = Path(path)
    with _zip(path, path.name) as zf:
        manifest, infos = _open_archive(zf, path.name)
        try:
            return _load_metadata(_read_member(zf, infos["metadata.json"], manifest["members"]["metadata.json"]))
        except BundleError as exc:
            raise BundleError(f"{path.name}: {exc}") from None
        except (zipfile.BadZipFile, OSError, EOFError, zlib.error, NotImplementedError) as exc:
            raise BundleError(f"{path.name}: damaged archive ({str(exc)[:120]})") from None


def read_bundle(path: Path) -> Bundle:
    """Load and validate the bundle at ``path``; :class:`BundleError` for anything wrong with it."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_BUNDLE_BYTES:
            raise BundleError(f"{path.name}: the file is {size} bytes, a bundle has at most {MAX_BUNDLE_BYTES}")
        data = path.read_bytes()
    except OSError as exc:
        raise BundleError(f"{path}: cannot read ({exc.strerror})") from None
    return parse_bundle(data, origin=path.name)
