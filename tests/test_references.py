"""Citations stay inside the repository: every ``[KEY]`` cited is defined in docs/references.md.

Citation syntax (docs/references.md, "How to cite"): a key in square brackets, starting with
a capital letter, with at least two characters before the first hyphen, optionally followed by a locator inside the
brackets: ``[Llama3-2024]``, ``[Llama3-2024 §3.3.4]``, ``[Airedale-DeltaChill p. 53]``.
Confidence tags (``[P]``, ``[S]``, ``[D]``, ``[E]``) have no hyphen and are not keys.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO_DIR

REFERENCES = REPO_DIR / "docs" / "references.md"
KEY = r"[A-Z][A-Za-z0-9]+(?:-[A-Za-z0-9][A-Za-z0-9.]*)+"
CITATION = re.compile(r"\[(" + KEY + r")(?:[ ,;:][^\]\n]*)?\]")
ENTRY = re.compile(r"^- \*\*\[(" + KEY + r")\]\*\*", re.M)
TEXT_SUFFIXES = {".py", ".md", ".toml", ".txt", ".cfg", ".ini", ".yaml", ".yml", ".css", ".js", ".mako", ".tsv"}
SKIP_DIRS = {".git", ".venv", "node_modules", "__pycache__", ".pytest_cache", "build", "dist"}
# Notes kept beside the repository must not be cited: a reader of the repository cannot follow them.
OUTSIDE = [
    re.compile(r"\bfacts(?:\.md)?,? ?[A-F][0-9]"),  # "facts B5", "facts.md A3"
    re.compile(r"\btelemetry(?:\.md)? ?§"),  # "telemetry §1.4"
    re.compile(r"\b(?:facts|telemetry|toolchain)\.md\b"),
    re.compile(r"\.\./shared(?!/fixtures)"),  # the shared test fixtures are data, not a citation
    re.compile(r"\bshared/reference\b"),
]


def _text_files() -> list[Path]:
    out = []
    for path in sorted(REPO_DIR.rglob("*")):
        rel = path.relative_to(REPO_DIR)
        if any(part in SKIP_DIRS or part.endswith(".egg-info") for part in rel.parts):
            continue
        if path.is_file() and path.suffix in TEXT_SUFFIXES and not path.name.endswith(".min.js"):
            out.append(path)
    return out


def _defined_keys() -> list[str]:
    return ENTRY.findall(REFERENCES.read_text())


def test_reference_keys_are_unique():
    keys = _defined_keys()
    assert keys and len(keys) == len(set(keys))


@pytest.mark.slow
def test_nothing_cites_notes_outside_the_repository():
    this = Path(__file__).resolve()
    hits = [
        f"{path.relative_to(REPO_DIR)}:{n}: {line.strip()}"
        for path in _text_files()
        if path.resolve() != this
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if any(p.search(line) for p in OUTSIDE)
    ]
    assert hits == [], "cite a key of docs/references.md instead"


@pytest.mark.slow
def test_every_cited_key_is_defined():
    keys = set(_defined_keys())
    missing = [
        f"{path.relative_to(REPO_DIR)}:{n}: [{key}]"
        for path in _text_files()
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        for key in CITATION.findall(line)
        if key not in keys
    ]
    assert missing == [], "define these keys in docs/references.md"


@pytest.mark.parametrize(
    "text, keys",
    [
        ("# 4 °C ATD [NVIDIA-CDU-Reqs]", ["NVIDIA-CDU-Reqs"]),
        ("swings [Llama3-2024 §3.3.4]; [Choukse-2025]", ["Llama3-2024", "Choukse-2025"]),
        ("# [S]+[D] 1.5 L/min per kW", []),
        ("dict[str, float] and list[int]", []),
        ('[project.entry-points] [build-system] re.compile(r"[A-Z]") [A-Za-z]', []),
    ],
)
def test_citation_syntax(text, keys):
    assert CITATION.findall(text) == keys


@pytest.mark.parametrize(
    "text", ["(facts B5)", "facts.md A3/F1", "(telemetry §1.6)", "telemetry.md §1.4", "see ../shared/reference"]
)
def test_pointers_outside_the_repository_are_recognised(text):
    assert any(p.search(text) for p in OUTSIDE)
