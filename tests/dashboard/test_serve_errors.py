"""``clustertwin serve`` with a bad site, job or database: one line on stderr and exit 2, never a traceback."""

from __future__ import annotations

import pytest

from ingest.store.pgserver import free_port
from twin.cli import EXIT_BAD_INPUT, main
from twin.site.load import SITES_DIR


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.fixture
def db(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'twin.db'}"


def _site(tmp_path, old: str, new: str) -> str:
    text = (SITES_DIR / "demo.toml").read_text()
    assert old in text
    path = tmp_path / "site.toml"
    path.write_text(text.replace(old, new, 1))
    return str(path)


def test_unknown_site(capsys, db):
    assert main(["serve", "--site", "nosuchsite", "--db", db]) == EXIT_BAD_INPUT
    assert "nosuchsite: site: name: no such site file" in one_error_line(capsys)


@pytest.mark.parametrize(
    "old, new, message",
    [
        ("racks = 8", "racks = 100000000", "racks: Input should be less than or equal to 15680"),
        ("[site]\n", '[site]\nhostname_pattern = "{nope}"\n', "hostname_pattern: unknown field {nope}"),
        ('default_job = "demo-70b-1k"', 'default_job = "no-such-job"', "default_job: no job file 'no-such-job'"),
    ],
)
def test_bad_site_files(tmp_path, capsys, db, old, new, message):
    assert main(["serve", "--site", _site(tmp_path, old, new), "--db", db]) == EXIT_BAD_INPUT
    assert message in one_error_line(capsys)


def test_non_utf8_site_file(tmp_path, capsys, db):
    path = tmp_path / "latin1.toml"
    path.write_bytes(b'[site]\nname = "d\xe9mo"\n')
    assert main(["serve", "--site", str(path), "--db", db]) == EXIT_BAD_INPUT
    assert "not UTF-8" in one_error_line(capsys)


def test_default_job_that_does_not_fit(tmp_path, capsys, db):
    site = _site(tmp_path, 'default_job = "demo-70b-1k"', 'default_job = "llama3-405b-16k"')
    assert main(["serve", "--site", site, "--db", db]) == EXIT_BAD_INPUT
    assert "cannot place 16384 GPUs" in one_error_line(capsys)


def test_refused_database(capsys):
    url = f"postgresql://twin:pw-not-shown@127.0.0.1:{free_port()}/twin"
    assert main(["serve", "--site", "demo", "--db", url]) == EXIT_BAD_INPUT
    err = one_error_line(capsys)
    assert "cannot open" in err and "pw-not-shown" not in err


def test_bad_fault_and_source(capsys, db):
    assert main(["serve", "--site", "demo", "--db", db, "--fault", "nonsense"]) == EXIT_BAD_INPUT
    assert "fault 'nonsense'" in one_error_line(capsys)
    assert main(["serve", "--site", "demo", "--db", db, "--source", "telnet=x"]) == EXIT_BAD_INPUT
    one_error_line(capsys)
