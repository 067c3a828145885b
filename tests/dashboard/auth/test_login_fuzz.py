"""Property tests of the new inputs: user names, and whatever a client posts to ``/login``.

User names are accepted only in their documented form and refused with a one-line
UserError otherwise; the login form answers 401, 400 or 429, never a 500, whatever its
fields hold (``CLUSTERTWIN_FUZZ_EXAMPLES`` inputs each).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dashboard.auth.access import auth_state
from ingest.store.users import UserError, check_name
from tests.twin.fuzzing import FUZZ_SETTINGS, bounded

TEXT = st.one_of(
    st.text(max_size=60),
    st.text(alphabet="abc.-_/\\\x00%\"'<>", max_size=40),
    st.binary(max_size=60).map(lambda b: b.decode("latin-1")),
)


@FUZZ_SETTINGS
@given(TEXT)
def test_user_names_are_accepted_exactly_in_their_documented_form(name):
    valid = bool(re.fullmatch(r"[a-z][a-z0-9._-]{0,31}", name))
    try:
        assert check_name(name) == name and valid
    except UserError as exc:
        assert not valid and "\n" not in str(exc) and len(str(exc)) < 250


@pytest.mark.slow
def test_login_form_never_fails_with_a_500(client, auth_app):
    state = auth_state(auth_app.server)

    @FUZZ_SETTINGS
    @given(username=TEXT, password=TEXT, next_=TEXT, token=st.sampled_from(["valid", "missing", "garbage"]))
    def attempt(username, password, next_, token):
        c = client()
        data = {"username": username, "password": password, "next": next_}
        if token == "valid":
            data["csrf_token"] = c.csrf_from_form()
        elif token == "garbage":
            data["csrf_token"] = password
        with bounded(10):
            response = c.http.post("/login", data=data)
        assert response.status_code in (302, 400, 401, 429), response.status_code
        if response.status_code == 302:
            assert response.headers["Location"].startswith("/") and not response.headers["Location"].startswith("//")

    try:
        attempt()
    finally:
        state.by_address.clear("127.0.0.1")
