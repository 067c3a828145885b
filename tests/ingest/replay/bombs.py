"""Hostile incident bundles: small files that would cost gigabytes to read without caps.

Each builder takes a valid bundle's bytes and returns a file of the same format whose
manifest is consistent (sizes, checksums, rows), so that only a cap can refuse it:

* :func:`manifest_bomb` — ``manifest.json`` deflated, padded with ``spaces`` bytes of
  whitespace (valid JSON: 1 GiB of spaces deflates to about 1 MB);
* :func:`extra_members_bomb` — ``count`` extra members of ``member_bytes`` zeros each
  (deflated), listed in the manifest;
* :func:`rows_bomb` — ``gpu.parquet`` replaced by a table of ``rows`` identical rows (zstd,
  about 35 bytes a million rows), with the manifest's row count to match.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
import zlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ingest.replay.bundle import FORMAT, FORMAT_VERSION, SCHEMAS

CHUNK = 2**24


def _members(data: bytes) -> tuple[dict[str, bytes], dict]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    return members, json.loads(members.pop("manifest.json"))


def _entry(name: str, size: int, sha256: str, compress: bool) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=(2024, 7, 22, 15, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    return info


def _write_streamed(zf: zipfile.ZipFile, name: str, pieces, total: int) -> None:
    """A deflated member written from ``pieces`` (an iterable of bytes), never held whole."""
    info = zipfile.ZipInfo(name, date_time=(2024, 7, 22, 15, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    info.file_size = total
    with zf.open(info, "w", force_zip64=total > 2**31) as out:
        for piece in pieces:
            out.write(piece)


def _repeat(byte: bytes, total: int, tail: bytes = b""):
    left = total - len(tail)
    block = byte * CHUNK
    while left > 0:
        yield block[: min(CHUNK, left)]
        left -= CHUNK
    if tail:
        yield tail


def _digest(pieces) -> str:
    h = hashlib.sha256()
    for p in pieces:
        h.update(p)
    return h.hexdigest()


def _finish(path: Path, members: dict[str, bytes], manifest_pieces, manifest_bytes: int, extra=()) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        for name, pieces, total in extra:
            _write_streamed(zf, name, pieces, total)
        _write_streamed(zf, "manifest.json", manifest_pieces(), manifest_bytes)
        zf.comment = f"{FORMAT}/{FORMAT_VERSION}".encode()
    return path


def manifest_bomb(base: bytes, path: Path, spaces: int = 2**30) -> Path:
    members, manifest = _members(base)
    text = json.dumps(manifest).encode()
    total = spaces + len(text)
    return _finish(path, members, lambda: _repeat(b" ", total, text), total)


def extra_members_bomb(base: bytes, path: Path, count: int = 3, member_bytes: int = 512 * 2**20) -> Path:
    members, manifest = _members(base)
    digest = _digest(_repeat(b"\0", member_bytes))
    extra = []
    for i in range(count):
        name = f"extra{i}.parquet"
        manifest["members"][name] = {"bytes": member_bytes, "sha256": digest}
        extra.append((name, _repeat(b"\0", member_bytes), member_bytes))
    text = json.dumps(manifest).encode()
    return _finish(path, members, lambda: iter([text]), len(text), extra)


def rows_parquet(rows: int) -> bytes:
    """A ``gpu`` table of ``rows`` identical rows, written one million rows at a time."""
    schema = SCHEMAS["gpu"]
    per = min(rows, 1_000_000)
    block = pa.table(
        {
            f.name: pa.array([0] * per, type=f.type) if f.name != "ts" else pa.array([0] * per, pa.int64()).cast(f.type)
            for f in schema
        },
        schema=schema,
    )
    sink = io.BytesIO()
    with pq.ParquetWriter(sink, schema, compression="zstd", compression_level=19) as writer:
        left = rows
        while left > 0:
            writer.write_table(block.slice(0, min(per, left)), row_group_size=per)
            left -= per
    return sink.getvalue()


def rows_bomb(base: bytes, path: Path, rows: int = 20_000_000) -> Path:
    members, manifest = _members(base)
    data = rows_parquet(rows)
    members["gpu.parquet"] = data
    manifest["members"]["gpu.parquet"] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    manifest["rows"]["gpu"] = rows
    text = json.dumps(manifest).encode()
    return _finish(path, members, lambda: iter([text]), len(text))


__all__ = ["extra_members_bomb", "manifest_bomb", "rows_bomb", "rows_parquet", "zlib"]
