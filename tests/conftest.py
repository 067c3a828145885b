"""Fixtures shared by the whole suite: where the shared fixtures and reference sites live."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_DIR = Path(__file__).resolve().parents[1]
SHARED_DIR = (REPO_DIR.parent / "shared").resolve()
FIXTURES_DIR = SHARED_DIR / "fixtures"


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    """``../shared/fixtures`` next to the repository (real payloads from public projects)."""
    if not FIXTURES_DIR.is_dir():
        raise RuntimeError(f"shared fixtures not found at {FIXTURES_DIR}: clone next to shared/")
    return FIXTURES_DIR
