"""Dashboard and API users: names, roles, Argon2id password hashes, API tokens.

Roles are ordered: a ``viewer`` reads everything; an ``operator`` also edits scenarios,
acknowledges and silences alerts, records and imports incidents; an ``admin`` also
manages users and sources.  Passwords are hashed with Argon2id (argon2-cffi's
recommended parameters, RFC 9106); an API token is 32 random bytes, stored as its
SHA-256 (a random 256-bit value needs no slow hash).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, func, select

from ingest.store.models import AppUser, utcnow
from ingest.store.roles import ROLE_RANK, ROLES  # noqa: E402  (re-exported)
from twin.errors import InputError

NAME_PATTERN = re.compile(r"[a-z][a-z0-9._-]{0,31}")
MAX_NAME_CHARS = 32
MIN_PASSWORD_CHARS = 10
MAX_PASSWORD_BYTES = 1024  # bounds the hashing work a login attempt can ask for
TOKEN_BYTES = 32
TOKEN_PREFIX = "ct_"

_hasher = PasswordHasher()  # Argon2id, argon2-cffi's RFC 9106 "low memory" profile
# Verified when a name is unknown, so a failed login takes as long whether or not the user exists.
_DUMMY_HASH = _hasher.hash("not a password of anyone")


class UserError(InputError):
    """A user name, role, password or token is not acceptable, or the user does not exist."""


@dataclass(frozen=True)
class UserInfo:
    """What the web layer keeps of a user (never the password hash)."""

    id: int
    name: str
    role: str
    session_epoch: int

    def has_role(self, role: str) -> bool:
        """Whether this user's role is ``role`` or above."""
        return ROLE_RANK[self.role] >= ROLE_RANK[role]


def check_name(name) -> str:
    """``name`` if it is a valid user name (lower-case letter, then letters, digits, ``._-``; ≤ 32)."""
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        shown = repr(name[:40])[:60] if isinstance(name, str) else type(name).__name__  # escapes bounded too
        raise UserError(
            f"user name {shown}: expected a lower-case letter then up to {MAX_NAME_CHARS - 1} "
            "lower-case letters, digits, '.', '_' or '-'"
        )
    return name


def check_role(role) -> str:
    if role not in ROLES:
        raise UserError(f"role {str(role)[:40]!r}: expected one of {', '.join(ROLES)}")
    return role


def check_password(password) -> str:
    if not isinstance(password, str) or len(password) < MIN_PASSWORD_CHARS:
        raise UserError(f"password: at least {MIN_PASSWORD_CHARS} characters")
    if len(password.encode()) > MAX_PASSWORD_BYTES:
        raise UserError(f"password: at most {MAX_PASSWORD_BYTES} bytes")
    return password


def _info(user: AppUser) -> UserInfo:
    return UserInfo(user.id, user.name, user.role, user.session_epoch)


def _get(session: Session, name: str) -> AppUser:
    user = session.exec(select(AppUser).where(AppUser.name == check_name(name))).first()
    if user is None:
        raise UserError(f"no user named {name!r}")
    return user


def count_users(engine: Engine) -> int:
    with Session(engine) as session:
        return int(session.exec(select(func.count()).select_from(AppUser)).one())


def list_users(engine: Engine) -> list[UserInfo]:
    """Every user, by name."""
    with Session(engine) as session:
        return [_info(u) for u in session.exec(select(AppUser).order_by(AppUser.name)).all()]


def find_user(engine: Engine, name: str) -> UserInfo | None:
    with Session(engine) as session:
        try:
            return _info(_get(session, name))
        except UserError:
            return None


def add_user(engine: Engine, name: str, role: str, password: str) -> UserInfo:
    """Create a user; UserError when the name is taken or anything is invalid."""
    user = AppUser(name=check_name(name), role=check_role(role), password_hash=_hasher.hash(check_password(password)))
    with Session(engine) as session:
        session.add(user)
        try:
            session.commit()
        except IntegrityError:
            raise UserError(f"user {name!r} exists already") from None
        session.refresh(user)
        return _info(user)


def remove_user(engine: Engine, name: str) -> UserInfo:
    with Session(engine) as session:
        user = _get(session, name)
        info = _info(user)
        session.delete(user)
        session.commit()
        return info


def end_sessions(engine: Engine, name: str) -> UserInfo:
    """End every open session of ``name`` (its session epoch moves on): what logging out does."""
    with Session(engine) as session:
        user = _get(session, name)
        user.session_epoch, user.updated_at = user.session_epoch + 1, utcnow()
        session.add(user)
        session.commit()
        return _info(user)


def set_password(engine: Engine, name: str, password: str) -> UserInfo:
    """Change a password; the user's open sessions end (their epoch moves on)."""
    digest = _hasher.hash(check_password(password))
    with Session(engine) as session:
        user = _get(session, name)
        user.password_hash, user.session_epoch, user.updated_at = digest, user.session_epoch + 1, utcnow()
        session.add(user)
        session.commit()
        return _info(user)


def set_role(engine: Engine, name: str, role: str) -> UserInfo:
    with Session(engine) as session:
        user = _get(session, name)
        user.role, user.session_epoch, user.updated_at = check_role(role), user.session_epoch + 1, utcnow()
        session.add(user)
        session.commit()
        return _info(user)


def new_token(engine: Engine, name: str) -> str:
    """A fresh API token for ``name`` (replaces the previous one); shown once, stored hashed."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)
    with Session(engine) as session:
        user = _get(session, name)
        user.token_sha256, user.updated_at = token_digest(token), utcnow()
        session.add(user)
        session.commit()
    return token


def token_digest(token: str) -> str:
    """How an API token is stored and looked up: its SHA-256, hex."""
    return hashlib.sha256(token.encode()).hexdigest()


def is_token_shaped(token) -> bool:
    """Whether ``token`` looks like one of ours (prefix, bounded length) before any lookup."""
    return isinstance(token, str) and token.startswith(TOKEN_PREFIX) and len(token) <= 100


def token_owners(engine: Engine) -> dict[str, int]:
    """Token digest → user id, for every user holding an API token."""
    with Session(engine) as session:
        rows = session.exec(select(AppUser.token_sha256, AppUser.id).where(AppUser.token_sha256 != None)).all()  # noqa: E711
        return {digest: user_id for digest, user_id in rows}


def verify_password(engine: Engine, name, password) -> UserInfo | None:
    """The user when ``password`` is right, else None (same cost whether or not the name exists)."""
    try:
        check_name(name)
        password = password if isinstance(password, str) and len(password.encode()) <= MAX_PASSWORD_BYTES else None
    except UserError:
        password = None
    with Session(engine) as session:
        user = session.exec(select(AppUser).where(AppUser.name == name)).first() if password is not None else None
        try:
            _hasher.verify(user.password_hash if user else _DUMMY_HASH, password or "")
        except (VerificationError, InvalidHashError):
            return None
        return _info(user) if user else None
