"""The cached user table: changes made by another process are seen within the cache time; tokens by digest."""

import pytest
from sqlalchemy import text
from werkzeug.exceptions import ServiceUnavailable

from dashboard.auth.directory import UserDirectory
from ingest.store.db import open_database
from ingest.store.users import add_user, new_token, remove_user


def test_changes_from_elsewhere_show_after_the_cache_time(tmp_path):
    engine = open_database(f"sqlite:///{tmp_path / 'u.db'}")
    now = [0.0]
    directory = UserDirectory(engine, ttl_s=2.0, clock=lambda: now[0])
    assert not directory.any_users()
    ada = add_user(engine, "ada", "admin", "admin-password-1")
    token = new_token(engine, "ada")
    assert not directory.any_users() and directory.by_token(token) is None  # still the copy of t=0
    now[0] = 2.0
    assert directory.get(ada.id) == ada and directory.by_token(token) == ada
    assert directory.by_token(token + "x") is None and directory.by_token("ct_" + "a" * 200) is None
    remove_user(engine, "ada")
    now[0] = 4.0
    assert directory.by_token(token) is None and not directory.any_users()


def test_an_unreadable_table_keeps_the_last_copy_and_never_opens_the_doors(tmp_path):
    engine = open_database(f"sqlite:///{tmp_path / 'u.db'}")
    add_user(engine, "ada", "admin", "admin-password-1")
    now = [0.0]
    directory = UserDirectory(engine, clock=lambda: now[0])
    assert directory.any_users()
    with engine.begin() as conn:
        conn.execute(text("ALTER TABLE app_user RENAME TO app_user_gone"))
    now[0] = 10.0
    assert directory.any_users()  # the last copy, not "no users"
    fresh = UserDirectory(engine)
    with pytest.raises(ServiceUnavailable):
        fresh.any_users()
