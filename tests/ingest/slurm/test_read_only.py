"""ClusterTwin never writes to a scheduler: every Slurm call in the code is a read-only form.

Static: every argv literal in ``twin/``, ``ingest/`` and ``dashboard/`` (not the benchmarks'
stand-in scripts) that starts with a Slurm client is checked against the test's own list of read-only forms
(:func:`servers.slurm_readonly.is_read_only`), and the Slurm source reaches slurmrestd only
through GET.  The real cluster's tests (``test_slurm_predict_cluster.py``) run the source,
the CLI and the prediction with logging shims in front of every client and check each call.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from servers.slurm_readonly import CLIENTS, is_read_only

REPO = Path(__file__).resolve().parents[3]
PLACEHOLDER = "<value>"


@pytest.mark.parametrize(
    ("argv", "ok"),
    [
        (["squeue", "--all", "--json"], True),
        (["sinfo", "--all", "--json"], True),
        (["scontrol", "show", "node", "-d", "-o"], True),
        (["scontrol", "-o", "show", "partition"], True),
        (["sacct", "-a", "-X", "-P"], True),
        (["sacctmgr", "-P", "-n", "show", "qos"], True),
        (["scontrol", "update", "NodeName=n1", "State=DRAIN"], False),
        (["scontrol", "hold", "12"], False),
        (["scontrol", "requeue", "12"], False),
        (["scontrol", "token"], False),
        (["scontrol"], False),
        (["sacctmgr", "-i", "modify", "qos", "normal", "set", "priority=1"], False),
        (["scancel", "12"], False),
        (["sbatch", "job.sh"], False),
        (["srun", "hostname"], False),
    ],
)
def test_the_read_only_list(argv, ok):
    assert is_read_only(argv) is ok


def _argv_literals(tree: ast.AST):
    """(line, argv) of every list or tuple literal whose first element is a Slurm client's name."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.List | ast.Tuple) or not node.elts:
            continue
        first = node.elts[0]
        if isinstance(first, ast.Constant) and first.value in CLIENTS:
            argv = [
                e.value if isinstance(e, ast.Constant) and isinstance(e.value, str) else PLACEHOLDER for e in node.elts
            ]
            yield node.lineno, argv


@pytest.mark.slow
def test_every_slurm_command_in_the_code_only_reads():
    seen, writes = [], []
    for top in ("twin", "ingest", "dashboard"):
        for path in sorted((REPO / top).rglob("*.py")):
            if path.parent.name == "benchmarks":
                continue  # writes stand-in scripts named after the clients; its reads go through the source
            tree = ast.parse(path.read_text(), str(path))
            for line, argv in _argv_literals(tree):
                where = f"{path.relative_to(REPO)}:{line}: {' '.join(argv)}"
                seen.append(where)
                if not is_read_only(argv):
                    writes.append(where)
    assert writes == []
    assert any("squeue" in s for s in seen) and any("scontrol show" in s for s in seen)  # the scan finds the source


def test_slurmrestd_is_only_read_with_get():
    text = (REPO / "ingest" / "sources" / "slurm.py").read_text()
    tree = ast.parse(text)
    methods = {
        node.func.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
        if node.func.value.id == "http"
    }
    verbs = methods & {"get", "post", "put", "patch", "delete", "head", "request", "options"}
    assert verbs == {"get"}, methods
