"""``clustertwin ingest run``: leads ingest, or waits as a standby while another process leads."""

import json

import pytest

from ingest.live.runtime import start_hub
from twin.cli import main


@pytest.mark.slow
def test_a_second_ingest_process_waits_as_a_standby(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'twin.db'}"
    leader = start_hub("demo", url)
    try:
        assert leader.leading
        assert main(["ingest", "run", "--site", "demo", "--db", url, "--duration-s", "1"]) == 0
        captured = capsys.readouterr()
        assert captured.err.startswith("standby: ") and len(captured.err.strip().splitlines()) == 1
        assert json.loads(captured.out)["site"] == "demo"
    finally:
        leader.stop()
