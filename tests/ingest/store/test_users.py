"""Users, roles, password and token checks, the audit log and the shared session key, on SQLite and PostgreSQL."""

from datetime import UTC, datetime, timedelta

import pytest
from sqlmodel import Session, select

from ingest.store import audit
from ingest.store.appsecrets import session_key
from ingest.store.db import open_database
from ingest.store.models import AppUser
from ingest.store.users import (
    MAX_PASSWORD_BYTES,
    UserError,
    add_user,
    count_users,
    list_users,
    new_token,
    remove_user,
    set_password,
    set_role,
    token_digest,
    token_owners,
    verify_password,
)

PASSWORD = "correct horse battery"


@pytest.mark.slow
def test_users_round_trip_with_argon2_hashes(db_url):
    engine = open_database(db_url)
    assert count_users(engine) == 0
    ada = add_user(engine, "ada", "admin", PASSWORD)
    add_user(engine, "otto", "operator", "another long one")
    assert [(u.name, u.role) for u in list_users(engine)] == [("ada", "admin"), ("otto", "operator")]
    with Session(engine) as session:
        stored = session.exec(select(AppUser).where(AppUser.name == "ada")).one()
    assert stored.password_hash.startswith("$argon2id$") and PASSWORD not in stored.password_hash
    assert verify_password(engine, "ada", PASSWORD) == ada
    assert verify_password(engine, "ada", PASSWORD + "x") is None
    assert verify_password(engine, "nobody", PASSWORD) is None
    assert verify_password(engine, "ada", "x" * (MAX_PASSWORD_BYTES + 1)) is None
    with pytest.raises(UserError, match="exists already"):
        add_user(engine, "ada", "viewer", PASSWORD)
    engine.dispose()


@pytest.mark.slow
def test_password_and_role_changes_move_the_session_epoch(db_url):
    engine = open_database(db_url)
    first = add_user(engine, "vera", "viewer", PASSWORD)
    changed = set_password(engine, "vera", "a new long password")
    assert changed.session_epoch == first.session_epoch + 1
    assert verify_password(engine, "vera", PASSWORD) is None and verify_password(engine, "vera", "a new long password")
    assert set_role(engine, "vera", "operator").session_epoch == first.session_epoch + 2
    remove_user(engine, "vera")
    assert count_users(engine) == 0
    with pytest.raises(UserError, match="no user named"):
        remove_user(engine, "vera")
    engine.dispose()


def test_api_tokens_are_stored_hashed_and_replaced(db_url):
    engine = open_database(db_url)
    grafana = add_user(engine, "grafana", "viewer", PASSWORD)
    add_user(engine, "otto", "operator", PASSWORD)  # a user without a token
    token = new_token(engine, "grafana")
    assert token_owners(engine) == {token_digest(token): grafana.id}
    with Session(engine) as session:
        assert token not in session.exec(select(AppUser).where(AppUser.name == "grafana")).one().token_sha256
    second = new_token(engine, "grafana")
    assert token_owners(engine) == {token_digest(second): grafana.id}
    engine.dispose()


@pytest.mark.parametrize("name", ["", "Ada", "1ada", "a" * 33, "ada smith", "ada/../x", "ada\n", "ädä", None, 7])
def test_bad_user_names_are_refused_in_one_line(tmp_path, name):
    engine = open_database(f"sqlite:///{tmp_path / 'u.db'}")
    with pytest.raises(UserError) as err:
        add_user(engine, name, "viewer", PASSWORD)
    assert "\n" not in str(err.value) and len(str(err.value)) < 200


@pytest.mark.parametrize(
    "role, password, message",
    [
        ("root", PASSWORD, "role 'root'"),
        ("viewer", "short", "at least 10"),
        ("viewer", "x" * (MAX_PASSWORD_BYTES + 1), "at most 1024 bytes"),
    ],
)
def test_bad_roles_and_passwords_are_refused(tmp_path, role, password, message):
    engine = open_database(f"sqlite:///{tmp_path / 'u.db'}")
    with pytest.raises(UserError, match=message):
        add_user(engine, "ada", role, password)
    assert count_users(engine) == 0


def test_audit_entries_filter_and_mask_secrets(db_url):
    engine = open_database(db_url)
    audit.record(
        engine,
        "otto",
        "alert.acknowledge",
        "alert 3",
        {"acknowledged": False},
        {"acknowledged": True, "ack_comment": "on it"},
        address="127.0.0.1",
    )
    audit.record(engine, "cli:root", "user.passwd", "user ada", None, {"password": "hunter2hunter2", "token": "ct_x"})
    audit.record(engine, "otto", "alert.silence", "alert 4", {"silenced_until": None}, {"silenced_until": "later"})
    entries = audit.list_entries(engine)
    assert [e["action"] for e in entries] == ["alert.silence", "user.passwd", "alert.acknowledge"]
    assert entries[1]["after"] == {"password": "***", "token": "***"}
    assert entries[2]["before"] == {"acknowledged": False} and entries[2]["address"] == "127.0.0.1"
    assert [e["target"] for e in audit.list_entries(engine, audit.AuditFilter(action="alert."))] == [
        "alert 4",
        "alert 3",
    ]
    assert len(audit.list_entries(engine, audit.AuditFilter(user_name="cli:root"))) == 1
    later = datetime.now(UTC) + timedelta(minutes=1)
    assert audit.list_entries(engine, audit.AuditFilter(since=later)) == []
    with pytest.raises(audit.InputError, match="audit limit"):
        audit.list_entries(engine, audit.AuditFilter(limit=0))
    engine.dispose()


def test_the_session_key_is_made_once_and_shared(db_url, monkeypatch):
    monkeypatch.delenv("CLUSTERTWIN_SECRET_KEY", raising=False)
    engine = open_database(db_url)
    key = session_key(engine)
    assert len(key) == 64 and session_key(open_database(db_url)) == key
    monkeypatch.setenv("CLUSTERTWIN_SECRET_KEY", "from-the-environment")
    assert session_key(engine) == "from-the-environment"
    engine.dispose()
