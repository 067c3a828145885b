"""Relational tables: site versions, scenarios, incidents (recordings), events/alerts, telemetry.

Timestamps are timezone-aware UTC (:class:`UTCDateTime`).  Telemetry is not stored a
row per sample: :class:`TelemetryChunk` holds one block of entities × fields of one
frame as a float32 blob (see :mod:`ingest.store.frames`).
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import BigInteger, Column, DateTime, Index, LargeBinary, TypeDecorator, UniqueConstraint
from sqlmodel import Field, SQLModel


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator):
    """A DateTime that only accepts aware datetimes and always returns UTC-aware ones."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: timestamps must be timezone-aware UTC")
        return value.astimezone(UTC)

    def process_result_value(self, value, dialect):
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _ts(**kw):
    return Field(default_factory=utcnow, sa_column=Column(UTCDateTime(), nullable=False, **kw))


class SiteVersion(SQLModel, table=True):
    """A site file as loaded, one row per distinct content."""

    __tablename__ = "site_version"
    __table_args__ = (UniqueConstraint("name", "version"),)
    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True)
    version: int
    content_sha256: str
    content: str
    created_at: datetime = _ts()


class Scenario(SQLModel, table=True):
    """A what-if: an ordered list of edits on a baseline site version (see :mod:`ingest.store.scenarios`).

    ``content`` is the scenario TOML without its edits (``[scenario]`` and ``[conditions]``);
    ``edits_json`` every edit ever appended and not discarded, as JSON objects, of which the
    first ``position`` are applied (undo lowers it, redo raises it, a new edit drops the rest).
    """

    id: int | None = Field(default=None, primary_key=True)
    site_name: str = Field(index=True)
    name: str
    description: str = ""
    content: str  # TOML: [scenario] and [conditions]
    created_at: datetime = _ts()
    updated_at: datetime = _ts()
    baseline_version: int | None = None  # site_version.version of the baseline, None = the site file as loaded
    edits_json: str = "[]"
    position: int = 0
    design_limits: str = "strict"


class Incident(SQLModel, table=True):
    """A recorded time window worth replaying."""

    id: int | None = Field(default=None, primary_key=True)
    site_name: str = Field(index=True)
    name: str
    description: str = ""
    start_at: datetime = _ts()
    end_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime(), nullable=True))
    created_at: datetime = _ts()
    # the bundle file as imported (migration 0008): listing the library reads its metadata from here
    # while the file's size and modification time still match, instead of opening the file
    bundle_file: str | None = None
    bundle_bytes: int | None = Field(default=None, sa_column=Column(BigInteger(), nullable=True))
    bundle_mtime_ns: int | None = Field(default=None, sa_column=Column(BigInteger(), nullable=True))
    metadata_json: str | None = None


class Event(SQLModel, table=True):
    """An alert or event about one entity (threshold, XID, stale source, failure).

    ``group_key`` is the key of the root-cause alert it belongs to (its own key for a root
    cause); the ``impact_*`` columns say what it costs.  Text, severity and impact are
    updated while the episode lasts; :class:`EventChange` keeps each change.
    """

    __table_args__ = (Index("ix_event_site_open", "site_name", "cleared_at"),)
    id: int | None = Field(default=None, primary_key=True)
    site_name: str = Field(index=True)
    key: str = Field(index=True)  # identifies the condition, to open/clear it once per episode
    raised_at: datetime = _ts()
    severity: str  # critical | warning | info
    source: str  # twin, synthetic, dcgm, prometheus, redfish, ipmi
    entity_kind: str
    entity_id: int
    entity_name: str
    metric: str
    value: float | None = None
    message: str
    acknowledged: bool = False
    acknowledged_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime(), nullable=True))
    silenced_until: datetime | None = Field(default=None, sa_column=Column(UTCDateTime(), nullable=True))
    cleared_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime(), nullable=True))
    group_key: str = ""
    impact_gpus: int = 0
    impact_jobs: str = ""  # job names, comma-separated
    impact_tokens_per_s: float = 0.0
    impact_power_mw: float = 0.0
    runbook: str = ""
    updated_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime(), nullable=True))
    ack_comment: str = ""
    acknowledged_by: str = ""


class EventChange(SQLModel, table=True):
    """One change of an open alert's severity or text, kept as its history."""

    __tablename__ = "event_change"
    id: int | None = Field(default=None, primary_key=True)
    event_id: int = Field(foreign_key="event.id", index=True)
    changed_at: datetime = _ts()
    severity: str
    message: str
    value: float | None = None


class TelemetryLayout(SQLModel, table=True):
    """How one kind of frame is laid out: its fields and the block size of its chunks."""

    __tablename__ = "telemetry_layout"
    __table_args__ = (UniqueConstraint("site_name", "kind"),)
    id: int | None = Field(default=None, primary_key=True)
    site_name: str
    kind: str  # gpu, cdu, power, source, rack
    fields_csv: str  # canonical quantity names, comma-separated, in blob order
    n_entities: int
    block_size: int


class TelemetryChunk(SQLModel, table=True):
    """One block of one frame: float32 array [n_fields, block entities], C order."""

    __tablename__ = "telemetry_chunk"
    layout_id: int = Field(foreign_key="telemetry_layout.id", primary_key=True)
    block: int = Field(primary_key=True)
    ts_ms: int = Field(sa_column=Column(BigInteger, primary_key=True, autoincrement=False))
    data: bytes = Field(sa_column=Column(LargeBinary, nullable=False))


class IngestLease(SQLModel, table=True):
    """Who runs ingest for one site and shard, until when (see :mod:`ingest.store.lease`)."""

    __tablename__ = "ingest_lease"
    name: str = Field(primary_key=True)  # "<site>#<shard i/n>"
    holder: str  # "<host>:<pid>:<random>" of the leading process
    expires_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    acquired_at: datetime = _ts()


class AppUser(SQLModel, table=True):
    """A person or script allowed into the dashboard and API (see :mod:`ingest.store.users`).

    ``password_hash`` is an Argon2id hash; ``token_sha256`` the SHA-256 of the user's API
    token (random, 256 bits, so a plain hash suffices); ``session_epoch`` grows on every
    password change, which ends the user's open sessions.
    """

    __tablename__ = "app_user"
    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True, index=True)
    role: str  # viewer | operator | admin
    password_hash: str
    token_sha256: str | None = Field(default=None, unique=True)
    session_epoch: int = 0
    created_at: datetime = _ts()
    updated_at: datetime = _ts()


class AuditEntry(SQLModel, table=True):
    """One change made by someone: who, when, what, the state before and after (JSON text)."""

    __tablename__ = "audit_entry"
    id: int | None = Field(default=None, primary_key=True)
    at: datetime = _ts(index=True)
    user_name: str = Field(index=True)  # app user, "cli:<os user>" or "anonymous" (no users yet)
    action: str = Field(index=True)  # e.g. alert.acknowledge, user.add
    target: str  # what was changed, e.g. "alert 42", "user alice"
    before_json: str = ""
    after_json: str = ""
    address: str = ""  # client address of the request ("" from the command line)


class AppSecret(SQLModel, table=True):
    """Process-shared secrets generated on first start (the session signing key)."""

    __tablename__ = "app_secret"
    name: str = Field(primary_key=True)
    value: str
    created_at: datetime = _ts()


class LiveState(SQLModel, table=True):
    """The latest tick of a site's ingest leader, for followers (see :mod:`ingest.store.livestate`)."""

    __tablename__ = "live_state"
    site_name: str = Field(primary_key=True)
    seq: int = Field(sa_column=Column(BigInteger, nullable=False))  # the leader's tick counter, grows by one a tick
    ts: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))  # the tick's time
    holder: str  # lease holder id of the publishing process
    payload: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    published_at: datetime = _ts()


class LoginFailure(SQLModel, table=True):
    """One counted login attempt of a client address or a user name (see :mod:`ingest.store.loginlimits`).

    A row is written when an attempt starts and deleted when it succeeds, so every process
    of one database counts the same attempts; rows older than the window are deleted.
    """

    __tablename__ = "login_failure"
    __table_args__ = (Index("ix_login_failure_scope_key_at", "scope", "key", "attempt_at"),)
    id: int | None = Field(default=None, primary_key=True)
    scope: str  # "address" or "user"
    key: str  # the client address or the user name (at most 100 characters)
    attempt_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False, index=True))


class LiveTrendPoint(SQLModel, table=True):
    """One tick's site-level trend values, published by the ingest leader (see :mod:`ingest.store.livetrend`)."""

    __tablename__ = "live_trend"
    site_name: str = Field(primary_key=True)
    ts: datetime = Field(sa_column=Column(UTCDateTime(), primary_key=True))  # the tick's time
    values_json: str  # {"it_power_mw": 61.2, …}: the trend columns by name, null where unknown


class AlertMute(SQLModel, table=True):
    """A scoped silence or a maintenance window of a site's alerts (see :mod:`ingest.store.mutes`).

    The scope is an entity-name pattern (``scope_kind`` ``entity``: a glob), a cause group
    (``group``: the key of the root-cause alert) or a hall (``hall``), optionally narrowed
    to one rule and one metric (empty: any).  It mutes the matching alerts from
    ``starts_at`` until ``ends_at``, or until ``expired_at`` when expired (a silence) or
    cancelled (a window) early.
    """

    __tablename__ = "alert_mute"
    __table_args__ = (Index("ix_alert_mute_site_ends", "site_name", "ends_at"),)
    id: int | None = Field(default=None, primary_key=True)
    site_name: str
    kind: str  # silence | maintenance
    scope_kind: str  # entity | group | hall
    scope_value: str  # the glob, the group key or the hall name
    rule_name: str = ""  # only alerts of this rule ("" any)
    metric: str = ""  # only alerts on this metric ("" any)
    comment: str  # why: the silence's comment, the window's reason
    created_by: str
    created_at: datetime = _ts()
    starts_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    ends_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    expired_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime(), nullable=True))
    expired_by: str = ""
