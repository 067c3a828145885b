"""``clustertwin workload whatif``: strict JSON whose every key is in the glossary, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO_DIR
from twin.quantities import BY_NAME, NOT_QUANTITIES


def _keys(obj, out: set[str]) -> set[str]:
    if isinstance(obj, dict):
        for key, value in obj.items():
            out.add(key)
            if not (key in NOT_QUANTITIES and NOT_QUANTITIES[key].startswith("section keyed by")):
                _keys(value, out)
    elif isinstance(obj, list):
        for item in obj:
            _keys(item, out)
    return out


@pytest.mark.slow
def test_the_command_writes_strict_json_with_listed_keys():
    cmd = [sys.executable, "-m", "twin.cli", "workload", "whatif", "--site", "demo", "--convert", "H1-R01=GB200-NVL72"]
    cmd += ["--by", "rows", "--generate", "llm-lab:jobs=200,n_pretrain=0", "--days", "0.05", "--retarget", "eval"]
    done = subprocess.run(cmd + ["--json"], cwd=REPO_DIR, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "NaN" not in done.stdout and "Infinity" not in done.stdout
    report = json.loads(done.stdout)
    assert report["conversion"]["rows"] == ["H1-R01"] and report["scenario"]["n_gpus"] == 1088
    assert sorted(k for k in _keys(report, set()) if k not in BY_NAME and k not in NOT_QUANTITIES) == []
    bad = subprocess.run(cmd[:-2] + ["--retarget", "lunch"], cwd=REPO_DIR, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and bad.stderr.strip() == (
        "error: --retarget: unknown job kind 'lunch'; expected some of pretrain, finetune, eval, debug, trace"
    )


@pytest.mark.slow
def test_a_new_hall_like_h1_with_grown_quotas():
    cmd = [sys.executable, "-m", "twin.cli", "workload", "whatif", "--site", "demo", "--convert", "H1=demo-dlc-h100"]
    cmd += ["--by", "new-hall-like", "--grow-quotas", "--generate", "llm-lab:jobs=200,n_pretrain=0", "--days", "0.05"]
    done = subprocess.run(cmd, cwd=REPO_DIR, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    first = done.stdout.splitlines()[0]
    assert first == "add a hall like H1 as demo-dlc-h100; every team's quota grows with the GPUs added over 0.05 days"
    assert "n_gpus" in done.stdout and "1024 →           2048" in done.stdout.replace(",", "")
    bad = subprocess.run(
        [*cmd[:8], "H1,H1=demo-dlc-h100", *cmd[9:]], cwd=REPO_DIR, capture_output=True, text=True, timeout=300
    )
    assert (
        bad.returncode == 2
        and bad.stderr.strip() == "error: --by new-hall-like: name the one hall to build it like, got 2"
    )
