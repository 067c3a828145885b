"""Slurm hostlists: expansion, compression, caps; checked against python-hostlist on generated lists."""

from __future__ import annotations

import time

import hostlist as peer  # python-hostlist, the hostlist library of NSC (test extra)
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.sources.hostlist import HostlistError, compress, count, expand


@pytest.mark.parametrize(
    "text, names",
    [
        ("gpu[001-004,007],login1", ["gpu001", "gpu002", "gpu003", "gpu004", "gpu007", "login1"]),
        ("h1-r01-k01-n[0-2]", ["h1-r01-k01-n0", "h1-r01-k01-n1", "h1-r01-k01-n2"]),
        ("rack[1-2]-n[01-02]", ["rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"]),
        ("n[9-11]", ["n9", "n10", "n11"]),
        ("n[08-10]", ["n08", "n09", "n10"]),
        ("node[1-855],node[856-857]", [f"node{i}" for i in range(1, 858)]),
        ("a,b,,c", ["a", "b", "c"]),
        ("", []),
        ("(null)", []),
        ("x[3]", ["x3"]),
    ],
)
def test_expand(text, names):
    assert expand(text) == names
    assert count(text) == len(names) or text in ("(null)",)


@pytest.mark.parametrize(
    "names, text",
    [
        (["gpu001", "gpu002", "gpu003", "gpu004", "gpu007", "login1"], "gpu[001-004,007],login1"),
        (["h1-r01-k01-n1", "h1-r01-k01-n0", "h1-r01-k02-n0"], "h1-r01-k01-n[0-1],h1-r01-k02-n0"),
        (["n9", "n10", "n11"], "n[9-11]"),
        (["n09", "n10", "n11"], "n[09-11]"),
        (["a", "a", "b"], "a,b"),
        ([], ""),
    ],
)
def test_compress(names, text):
    assert compress(names) == text
    assert sorted(expand(text)) == sorted(set(names))


@pytest.mark.parametrize(
    "text, message",
    [
        ("n[1-", "'\\[' without '\\]'"),
        ("n1-2]", "'\\]' without '\\['"),
        ("n[1-[2]]", "nested"),
        ("n[5-1]", "runs backwards"),
        ("n[a-b]", "bad range 'a-b'"),
        ("node[0-999999999]", "stands for 1000000000 names, more than the cap"),
        ("r[0-9999]n[0-9999]", "stands for 100000000 names"),
    ],
)
def test_bad_hostlists_name_the_fault(text, message):
    with pytest.raises(HostlistError, match=message):
        expand(text)


def test_huge_expansion_is_refused_before_building_anything():
    t0 = time.perf_counter()
    with pytest.raises(HostlistError):
        expand("n[0-99999999999999]")
    assert time.perf_counter() - t0 < 0.05  # counted, not built
    with pytest.raises(HostlistError, match="character cap"):
        expand("n" * 100, max_chars=50)
    assert len(expand("n[1-10]", max_hosts=10)) == 10
    with pytest.raises(HostlistError):
        expand("n[1-11]", max_hosts=10)


_ranges = st.lists(
    st.tuples(st.integers(0, 300), st.integers(0, 12), st.sampled_from([1, 2, 3, 4])), min_size=1, max_size=4
)


@st.composite
def hostlists(draw):
    patterns = []
    for _ in range(draw(st.integers(1, 3))):
        prefix = draw(st.sampled_from(["gpu", "h1-r01-k", "node", "a-b"]))
        groups = []
        for lo, span, width in draw(_ranges):
            hi = lo + span
            groups.append(f"{lo:0{width}d}" if span == 0 else f"{lo:0{width}d}-{hi:0{width}d}")
        suffix = draw(st.sampled_from(["", "-ib", "x"]))
        patterns.append(f"{prefix}[{','.join(groups)}]{suffix}")
    return ",".join(patterns)


@settings(max_examples=80, deadline=None)
@given(hostlists())
@pytest.mark.slow
def test_expansion_agrees_with_python_hostlist(text):
    assert expand(text) == peer.expand_hostlist(text, allow_duplicates=True)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.from_regex(r"[a-z]{1,3}(-[a-z]{1,2})?[0-9]{1,4}(-ib)?", fullmatch=True), max_size=40))
@pytest.mark.slow
def test_compress_round_trips(names):
    text = compress(names)
    assert sorted(expand(text)) == sorted(set(names))
    assert sorted(peer.expand_hostlist(text)) == sorted(set(names))
