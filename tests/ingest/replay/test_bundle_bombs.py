"""Bundle bombs: small files that decompress or decode to gigabytes are refused before they cost that.

Each bomb is built full size (1 GiB of whitespace in the manifest, three listed members of
512 MiB, a 20 M-row GPU table) and imported in a subprocess of its own, whose peak resident
set size is read from the kernel (``VmHWM``): it must be refused with one line naming
the cap, within a bounded memory, and leave the library empty.  A bomb put into the
library by hand is skipped by the listing, again within bounded memory.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ingest.replay.bundle import MEMBER_CAPS, BundleError, read_bundle
from tests.ingest.replay import bombs
from twin.site.catalogue import DATA_DIR

BASE = DATA_DIR / "incidents" / "colossus-generator-trip.ctincident"
ROOT = Path(__file__).resolve().parents[3]
# What a subprocess that imports pyarrow, pandas and the twin and reads one colossus bundle
# takes anyway is about 250 MiB; a bomb may add little to that.
PEAK_RSS_MIB = 400

MEASURE = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from ingest.replay.bundle import BundleError
    from ingest.replay.library import import_file, list_incidents
    mode, source, library = sys.argv[1], sys.argv[2], sys.argv[3]
    t0, error, names = time.perf_counter(), None, None
    try:
        if mode == "import":
            import_file(Path(source), Path(library))
        else:
            names = [e.name for e in list_incidents(Path(library))]
    except BundleError as exc:
        error = str(exc)
    # VmHWM, not ru_maxrss: the latter keeps the forked parent's resident size across exec
    hwm = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
    print(json.dumps({"error": error, "names": names, "wall_s": time.perf_counter() - t0,
                      "peak_rss_mib": int(hwm.split()[1]) / 1024}))
    """
)


def measured(mode: str, source: Path, library: Path) -> dict:
    """Import ``source`` into ``library`` (or list ``library``) in a fresh process; its outcome and peak RSS."""
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, mode, str(source), str(library)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def bomb_files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("bombs")
    base = BASE.read_bytes()
    return {
        "manifest": bombs.manifest_bomb(base, folder / "manifest.ctincident"),
        "members": bombs.extra_members_bomb(base, folder / "members.ctincident"),
        "rows": bombs.rows_bomb(base, folder / "rows.ctincident"),
    }


EXPECTED = {
    "manifest": "member manifest.json is 1073",
    "members": f"the archive holds 14 members, a bundle has at most {len(MEMBER_CAPS)}",  # 12 with the jobs table
    "rows": "table gpu declares 20000000 rows, at most",
}


@pytest.mark.parametrize("kind", sorted(EXPECTED))
@pytest.mark.slow
def test_a_bomb_is_refused_in_bounded_memory_and_not_kept(bomb_files, tmp_path, kind):
    path = bomb_files[kind]
    assert path.stat().st_size < 3 * 2**20  # a small file
    library = tmp_path / "library"
    library.mkdir()
    outcome = measured("import", path, library)
    assert outcome["error"] is not None and EXPECTED[kind] in outcome["error"], outcome
    assert "\n" not in outcome["error"]
    assert outcome["peak_rss_mib"] < PEAK_RSS_MIB, outcome
    assert list(library.iterdir()) == []


@pytest.mark.slow
def test_a_bomb_in_the_library_is_skipped_by_the_listing_in_bounded_memory(bomb_files, tmp_path):
    library = tmp_path / "library"
    library.mkdir()
    for kind, path in bomb_files.items():
        (library / f"{kind}-bomb.ctincident").write_bytes(path.read_bytes())
    outcome = measured("list", library / "none", library)
    assert outcome["error"] is None
    assert "colossus-generator-trip" in outcome["names"]  # the shipped ones, listed from their metadata
    assert outcome["peak_rss_mib"] < PEAK_RSS_MIB, outcome


@pytest.mark.parametrize(
    ("what", "limit"),
    [("MAX_JSON_BYTES", "member manifest.json is"), ("MAX_TABLE_ROWS", "rows, at most")],
)
def test_each_cap_names_itself(tmp_path, monkeypatch, what, limit):
    from ingest.replay import bundle as module

    base = BASE.read_bytes()
    path = bombs.manifest_bomb(base, tmp_path / "m.ctincident", spaces=3 * 2**20)
    if what == "MAX_TABLE_ROWS":
        monkeypatch.setattr(module, "MAX_TABLE_ROWS", 100)
        path = BASE
    with pytest.raises(BundleError, match=limit):
        read_bundle(path)


def test_a_member_holding_more_than_its_declared_size_is_refused(tmp_path):
    """The zip directory says 10 bytes; the stream inflates to 4 MiB: reading stops at the declared size."""
    import zipfile

    base = BASE.read_bytes()
    members, manifest = bombs._members(base)
    members.pop("metadata.json")
    path = tmp_path / "liar.ctincident"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        zf.writestr("manifest.json", json.dumps(manifest))
        zf.writestr(zipfile.ZipInfo("metadata.json"), b" " * 4 * 2**20, compress_type=zipfile.ZIP_DEFLATED)
        zf.comment = b"clustertwin-incident/1"
    raw = bytearray(path.read_bytes())
    # rewrite the declared uncompressed size of metadata.json (local header and central directory) to 10
    needle = b"metadata.json"
    for at in [i for i in range(len(raw)) if raw.startswith(needle, i)]:
        for header, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
            start = at - (30 if header == b"PK\x03\x04" else 46)
            if raw[start : start + 4] == header:
                raw[start + offset : start + offset + 4] = (10).to_bytes(4, "little")
    path.write_bytes(bytes(raw))
    with pytest.raises(BundleError) as caught:
        read_bundle(path)
    assert "metadata.json" in str(caught.value)
