"""The Slurm source: read a cluster's queue, nodes, partitions and accounting, read-only.

Three ways to reach a cluster (:class:`SlurmTarget`):

* ``commands`` (default): Slurm's own clients on this host — ``squeue --all --json``,
  ``sinfo --all --json`` (or ``scontrol show node -d -o`` where ``sinfo`` has no JSON),
  ``scontrol show partition -o``, ``scontrol show reservation -o``, ``scontrol show config``
  (the scheduler's settings, and where the accounting is),
  and accounting from ``sacct --parsable`` where a slurmdbd runs or else the controller's
  ``jobcomp/filetxt`` file; ``sacctmgr`` QoS and users where a slurmdbd runs.  Each command
  runs under :func:`ingest.sources.command.run_bounded` (deadline, output cap, one line on
  failure) with ``SLURM_CONF`` set when given and ``TZ=UTC`` so text times are UTC;
* ``rest``: slurmrestd (jobs, nodes, partitions, reservations; no configuration), ``http(s)://host:6820`` with a JWT (``X-SLURM-USER-NAME``/``TOKEN``)
  or ``http+unix://%2Frun%2Fslurmrestd.sock`` (``rest_auth/local``), through
  :func:`ingest.sources.http.get`; the OpenAPI version is found by probing ``…/ping``;
* ``recorded``: a directory of saved outputs named as in :data:`RECORDED_FILES`.

Nothing here writes to the scheduler: no command or request that changes state is ever
issued.  :func:`read_slurm` never raises for a source failure: it returns a
:class:`SlurmResult` whose ``error`` is one line and whose snapshot keeps every part that
was read.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from ingest.sources import http, slurm_acct, slurm_json, slurm_text
from ingest.sources.command import CommandError, run_bounded
from ingest.sources.jsondoc import JsonError
from ingest.sources.slurm_assemble import assemble
from ingest.sources.slurm_records import SlurmCounts, SlurmSnapshot

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 10.0
DEFAULT_MAX_BYTES = 256 * 2**20  # squeue --json of 100k jobs is ~200 MB on 22.05
ACCOUNTING_WINDOW_S = 3600.0
JOBCOMP_TAIL_BYTES = 16 * 2**20
REST_VERSIONS = ("v0.0.42", "v0.0.41", "v0.0.40", "v0.0.39", "v0.0.38", "v0.0.37")
CHECKED_RELEASES = ("22.05", "23.02", "23.11", "24.05", "24.11")
RECORDED_FILES = {
    "squeue.json": "squeue --all --json",
    "squeue.txt": "squeue --all --noheader -O … (|# between fields, slurm_text.SQUEUE_FIELDS)",
    "sinfo.json": "sinfo --all --json",
    "sinfo.txt": "sinfo --all -N -o %all",
    "scontrol-nodes.txt": "scontrol show node -d -o",
    "scontrol-partitions.txt": "scontrol show partition -o",
    "partitions.json": "slurmrestd /partitions or scontrol show partitions --json",
    "sacct.txt": "sacct -a -X -P …",
    "jobcomp.txt": "the jobcomp/filetxt file",
    "sacctmgr-qos.txt": "sacctmgr show qos -P",
    "sacctmgr-users.txt": "sacctmgr show user withassoc format=User,DefaultAccount,Account,DefaultQOS,QOS -P",
    "scontrol-reservations.txt": "scontrol show reservation -o",
    "scontrol-config.txt": "scontrol show config",
}
_UNREACHABLE = re.compile(r"Unable to contact|slurm_load_jobs|Connection refused", re.I)
SACCT_FORMAT = (
    "JobID,JobIDRaw,JobName,User,Account,Partition,QOS,State,Reason,Submit,Eligible,Start,End,"
    "Timelimit,NNodes,ReqNodes,NodeList,AllocTRES,ReqTRES,AllocCPUS,Priority,ExitCode"
)


@dataclass(frozen=True)
class SlurmTarget:
    """Where and how to read a Slurm cluster (see module docstring)."""

    mode: str = "commands"  # commands | rest | recorded
    slurm_conf: str = ""
    url: str = ""
    path: str = ""
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_bytes: int = DEFAULT_MAX_BYTES
    tz: str = "UTC"  # zone of the controller's text times (recorded outputs; commands run with TZ=UTC)
    nodes_from: str = "sinfo"  # sinfo | scontrol
    accounting: str = "auto"  # auto | sacct | jobcomp | none
    jobcomp_path: str = ""
    accounting_window_s: float = ACCOUNTING_WINDOW_S
    jwt_user: str = ""
    jwt_token: str = ""

    @classmethod
    def from_spec(cls, target: str, **kw) -> SlurmTarget:
        """``""``/``commands``/a ``slurm.conf`` → commands; ``http(s)://``/``http+unix://`` → rest; a directory → recorded."""
        if target in ("", "commands", "local"):
            return cls(mode="commands", **kw)
        if target.startswith(("http://", "https://", "http+unix://")):
            return cls(mode="rest", url=target.rstrip("/"), **kw)
        if Path(target).is_dir():
            return cls(mode="recorded", path=target, **kw)
        if target.endswith(".conf") and Path(target).is_file():
            return cls(mode="commands", slurm_conf=target, **kw)
        raise ValueError(
            f"slurm target {target!r}: expected 'commands', an http(s):// or http+unix:// slurmrestd URL, "
            "or a directory of recorded outputs"
        )

    def __str__(self) -> str:
        if self.mode == "rest":
            return http.redact_url(self.url)
        if self.mode == "recorded":
            return self.path
        return f"commands (SLURM_CONF={self.slurm_conf})" if self.slurm_conf else "commands"


@dataclass
class SlurmResult:
    """One read of a Slurm source; ``ok`` when the jobs and the nodes were both read."""

    source: str
    target: str
    ok: bool
    snapshot: SlurmSnapshot
    error: str = ""
    warnings: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    attempts: int = 1
    parts_s: dict[str, float] = field(default_factory=dict)


class _Reader:
    """Reads the pieces of one snapshot from one target; failures become lines, not exceptions."""

    def __init__(self, target: SlurmTarget) -> None:
        self.t = target
        self.tz = ZoneInfo(target.tz) if target.tz != "UTC" else UTC
        self.errors: list[str] = []
        self.warnings: list[str] = []
        self.parts_s: dict[str, float] = {}
        self.counts = SlurmCounts()
        self.version = ""
        self._rest_base = ""

    # --- getting the bytes ------------------------------------------------------------
    def _env(self) -> dict[str, str]:
        env = {**os.environ, "TZ": "UTC", "SLURM_TIME_FORMAT": "standard"}
        if self.t.slurm_conf:
            env["SLURM_CONF"] = self.t.slurm_conf
        return env

    def run(self, name: str, argv: list[str], required: bool = True) -> bytes | None:
        t0 = time.perf_counter()
        try:
            return run_bounded(argv, timeout_s=self.t.timeout_s, max_bytes=self.t.max_bytes, env=self._env())
        except CommandError as exc:
            (self.errors if required else self.warnings).append(_command_error(exc))
            return None
        finally:
            self.parts_s[name] = time.perf_counter() - t0

    def rest(self, name: str, path: str, required: bool = True) -> str | None:
        t0 = time.perf_counter()
        try:
            base = self._rest_base or self._discover()
            resp = http.get(
                f"{base}/{path}",
                timeout_s=self.t.timeout_s,
                deadline_s=self.t.timeout_s,
                max_bytes=self.t.max_bytes,
                headers=self._jwt_headers(),
                accept_status=frozenset({200}),
            )
            return resp.text
        except http.FetchError as exc:
            (self.errors if required else self.warnings).append(str(exc))
            return None
        finally:
            self.parts_s[name] = time.perf_counter() - t0

    def _jwt_headers(self) -> dict[str, str]:
        token = self.t.jwt_token or os.environ.get("SLURM_JWT", "")
        if not token:
            return {}
        return {"X-SLURM-USER-NAME": self.t.jwt_user or os.environ.get("USER", ""), "X-SLURM-USER-TOKEN": token}

    def _discover(self) -> str:
        """The ``…/slurm/vX`` base: given in the URL, or the newest version whose ``ping`` answers 200."""
        url = self.t.url
        if "/slurm/v" in url:
            self._rest_base = url
            return url
        last: http.FetchError | None = None
        for version in REST_VERSIONS:
            try:
                http.get(
                    f"{url}/slurm/{version}/ping",
                    timeout_s=self.t.timeout_s,
                    retries=0,
                    headers=self._jwt_headers(),
                    max_bytes=1 << 20,
                )
            except http.FetchError as exc:
                if exc.status in (404, 400):
                    continue
                last = exc
                break
            self._rest_base = f"{url}/slurm/{version}"
            return self._rest_base
        raise last or http.FetchError(
            f"{http.redact_url(url)}: no slurmrestd OpenAPI version of {', '.join(REST_VERSIONS)} answers", attempts=1
        )

    def file(self, name: str, required: bool = True, tail_bytes: int | None = None) -> bytes | None:
        path = Path(self.t.path) / name
        if not path.is_file():
            if required:
                self.errors.append(f"{path}: no such recorded output")
            return None
        size = path.stat().st_size
        limit = tail_bytes if tail_bytes is not None else self.t.max_bytes
        if size > limit and tail_bytes is None:
            self.errors.append(f"{path}: {size} bytes exceeds the {limit / 2**20:.3g} MiB cap")
            return None
        with path.open("rb") as f:
            f.seek(max(size - limit, 0))
            return f.read(limit)

    # --- decoding, each piece on its own --------------------------------------------------
    def decode(self, what: str, parse: Callable, data, required: bool = True):
        if data is None:
            return None
        t0 = time.perf_counter()
        try:
            return parse(data)
        except slurm_json.SlurmDocumentError as exc:
            (self.errors if required else self.warnings).append(str(exc))
            return None
        except (JsonError, ValueError) as exc:
            (self.errors if required else self.warnings).append(f"{what}: {exc}")
            return None
        finally:
            self.parts_s[f"parse_{what}"] = time.perf_counter() - t0

    def note_release(self, doc: dict) -> None:
        """Note the Slurm release a document names (a warning for one this reader was not checked against)."""
        if self.version:
            return
        self.version = slurm_json.slurm_version(doc)
        if self.version and not self.version.startswith(CHECKED_RELEASES):
            self.warnings.append(
                f"Slurm {self.version}: not a release this reader was checked against "
                f"({', '.join(CHECKED_RELEASES)}); read by field names"
            )

    def jobs(self, data):
        return slurm_json.parse_jobs(data, self.counts, self.tz, on_doc=self.note_release)


def _command_error(exc: CommandError) -> str:
    """The error line of a failed command; a ``--json`` client's own error when it printed one."""
    if exc.kind == "exit" and exc.output.lstrip().startswith(b"{"):
        try:
            slurm_json.document(exc.output, "", "-")
        except (JsonError, slurm_json.SlurmDocumentError) as inner:
            return f"{str(exc).split(': exited')[0]}: exited non-zero{str(inner)}"
    return str(exc)


def _read_commands(r: _Reader) -> dict:
    """Every piece through Slurm's command-line clients."""
    out: dict = {}
    jobs_raw = r.run("squeue", ["squeue", "--all", "--json"])
    out["jobs"] = r.decode("squeue", r.jobs, jobs_raw)
    if out["jobs"] is None and r.errors and _UNREACHABLE.search(r.errors[-1]):
        r.warnings.append("controller unreachable: nodes, partitions and accounting not read")
        return out
    if r.t.nodes_from == "scontrol":
        raw = r.run("scontrol_nodes", ["scontrol", "show", "node", "-d", "-o"])
        out["nodes"] = r.decode(
            "scontrol_nodes", lambda d: slurm_text.parse_scontrol_nodes(d.decode(errors="replace"), r.counts, r.tz), raw
        )
    else:
        raw = r.run("sinfo", ["sinfo", "--all", "--json"])
        out["nodes"] = r.decode("sinfo", lambda d: slurm_json.parse_nodes(d, r.counts, r.tz), raw)
    raw = r.run("scontrol_partitions", ["scontrol", "show", "partition", "-o"], required=False)
    out["partitions"] = r.decode(
        "scontrol_partitions",
        lambda d: slurm_text.parse_scontrol_partitions(d.decode(errors="replace"), r.counts),
        raw,
        required=False,
    )
    raw = r.run("scontrol_reservations", ["scontrol", "show", "reservation", "-o"], required=False)
    out["reservations"] = r.decode(
        "scontrol_reservations",
        lambda d: slurm_text.parse_scontrol_reservations(d.decode(errors="replace"), r.counts, r.tz),
        raw,
        required=False,
    )
    raw = r.run("scontrol_config", ["scontrol", "show", "config"], required=False)
    out["config"] = slurm_text.parse_scontrol_config(raw.decode(errors="replace")) if raw else {}
    _read_accounting(r, out)
    return out


def _read_accounting(r: _Reader, out: dict) -> None:
    """Completed jobs (sacct or jobcomp), QoS and accounts (sacctmgr) where the site keeps them."""
    mode, jobcomp = r.t.accounting, r.t.jobcomp_path
    if mode == "none":
        return
    slurmdbd = False
    if mode == "auto" or (mode == "jobcomp" and not jobcomp):
        cfg = out.get("config") or {}
        slurmdbd = cfg.get("AccountingStorageType", "").endswith("slurmdbd")
        if cfg.get("JobCompType", "").endswith("filetxt") and not jobcomp:
            jobcomp = cfg.get("JobCompLoc", "")
    if mode == "sacct" or (mode == "auto" and slurmdbd):
        since = datetime.now(UTC) - timedelta(seconds=r.t.accounting_window_s)
        argv = ["sacct", "-a", "-X", "-P", "--noconvert", f"--format={SACCT_FORMAT}"]
        raw = r.run("sacct", argv + ["-S", since.strftime("%Y-%m-%dT%H:%M:%S")], required=False)
        out["done"] = r.decode("sacct", lambda d: slurm_acct.parse_sacct(d, r.counts, UTC), raw, required=False)
        raw = r.run("sacctmgr_qos", ["sacctmgr", "-P", "show", "qos"], required=False)
        out["qos"] = r.decode("sacctmgr_qos", lambda d: slurm_acct.parse_sacctmgr_qos(d)[1], raw, required=False)
        fmt = "format=User,DefaultAccount,Account,DefaultQOS,QOS"
        raw = r.run("sacctmgr_users", ["sacctmgr", "-P", "show", "user", "withassoc", fmt], required=False)
        out["accounts"] = r.decode(
            "sacctmgr_users", lambda d: slurm_acct.parse_sacctmgr_users(d)[1], raw, required=False
        )
    elif jobcomp:
        out["done"] = _read_jobcomp(r, Path(jobcomp))


def _read_jobcomp(r: _Reader, path: Path):
    """The last :data:`JOBCOMP_TAIL_BYTES` of the jobcomp file (a partial first line is dropped)."""
    t0 = time.perf_counter()
    try:
        size = path.stat().st_size
        with path.open("rb") as f:
            f.seek(max(size - JOBCOMP_TAIL_BYTES, 0))
            data = f.read(JOBCOMP_TAIL_BYTES)
    except OSError as exc:
        r.warnings.append(f"jobcomp file {path}: {exc.strerror or exc}")
        return None
    finally:
        r.parts_s["jobcomp"] = time.perf_counter() - t0
    if size > JOBCOMP_TAIL_BYTES:
        data = data.split(b"\n", 1)[-1]
    return r.decode("jobcomp", lambda d: slurm_acct.parse_jobcomp(d, r.counts, r.tz), data, required=False)


def _read_rest(r: _Reader) -> dict:
    """The queue, nodes and partitions from slurmrestd (its accounting needs slurmdbd: not read)."""
    out: dict = {}
    raw = r.rest("jobs", "jobs")
    out["jobs"] = r.decode("jobs", r.jobs, raw)
    raw = r.rest("nodes", "nodes")
    out["nodes"] = r.decode("nodes", lambda d: slurm_json.parse_nodes(d, r.counts, r.tz), raw)
    raw = r.rest("partitions", "partitions", required=False)
    out["partitions"] = r.decode("partitions", lambda d: slurm_json.parse_partitions(d, r.counts), raw, required=False)
    raw = r.rest("reservations", "reservations", required=False)
    out["reservations"] = r.decode(
        "reservations", lambda d: slurm_json.parse_reservations(d, r.counts, r.tz), raw, required=False
    )
    return out


def _read_recorded(r: _Reader) -> dict:
    """The pieces a directory of saved outputs holds (JSON preferred over text)."""
    out: dict = {}
    d = Path(r.t.path)
    text = lambda data: slurm_acct.decode(data)  # noqa: E731
    if (d / "squeue.json").is_file():
        raw = r.file("squeue.json")
        out["jobs"] = r.decode("squeue", r.jobs, raw)
    else:
        raw = r.file("squeue.txt")
        out["jobs"] = r.decode("squeue", lambda x: slurm_text.parse_squeue_text(text(x), r.counts, r.tz), raw)
    for name, parse in (
        ("sinfo.json", lambda x: slurm_json.parse_nodes(x, r.counts, r.tz)),
        ("scontrol-nodes.txt", lambda x: slurm_text.parse_scontrol_nodes(text(x), r.counts, r.tz)),
        ("sinfo.txt", lambda x: slurm_text.parse_sinfo_text(text(x), r.counts, r.tz)),
    ):
        if (d / name).is_file():
            out["nodes"] = r.decode(name, parse, r.file(name))
            break
    else:
        r.errors.append(f"{d}: no node states (sinfo.json, scontrol-nodes.txt or sinfo.txt)")
    optional = (
        ("partitions", "partitions.json", lambda x: slurm_json.parse_partitions(x, r.counts)),
        ("partitions", "scontrol-partitions.txt", lambda x: slurm_text.parse_scontrol_partitions(text(x), r.counts)),
        ("done", "sacct.txt", lambda x: slurm_acct.parse_sacct(x, r.counts, r.tz)),
        ("done", "jobcomp.txt", lambda x: slurm_acct.parse_jobcomp(x, r.counts, r.tz)),
        ("qos", "sacctmgr-qos.txt", lambda x: slurm_acct.parse_sacctmgr_qos(x)[1]),
        ("accounts", "sacctmgr-users.txt", lambda x: slurm_acct.parse_sacctmgr_users(x)[1]),
        (
            "reservations",
            "scontrol-reservations.txt",
            lambda x: slurm_text.parse_scontrol_reservations(text(x), r.counts, r.tz),
        ),
        ("config", "scontrol-config.txt", lambda x: slurm_text.parse_scontrol_config(text(x))),
    )
    for key, name, parse in optional:
        if key not in out and (d / name).is_file():
            out[key] = r.decode(name, parse, r.file(name, required=False), required=False)
    return out


def read_slurm(target: SlurmTarget | str, inventory=None, *, now: datetime | None = None) -> SlurmResult:
    """One read of ``target`` mapped onto the site of ``inventory`` (if given); never raises for source faults."""
    t = SlurmTarget.from_spec(target) if isinstance(target, str) else target
    r = _Reader(t)
    t0 = time.perf_counter()
    readers = {"commands": _read_commands, "rest": _read_rest, "recorded": _read_recorded}
    pieces = readers[t.mode](r)
    t_asm = time.perf_counter()
    snapshot = assemble(pieces, r.counts, inventory, version=r.version, read_at=now or datetime.now(UTC))
    r.parts_s["assemble"] = time.perf_counter() - t_asm
    ok = pieces.get("jobs") is not None and pieces.get("nodes") is not None and not r.errors
    error = "; ".join(r.errors)
    for w in r.warnings:
        log.debug("slurm %s: %s", t, w)
    return SlurmResult("slurm", str(t), ok, snapshot, error, r.warnings, time.perf_counter() - t0, 1, r.parts_s)
