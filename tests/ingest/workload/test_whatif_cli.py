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
