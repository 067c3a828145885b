"""The header search box: suggestion items for a query, and one index per site."""

from dashboard.components.search_box import NO_MATCH, index_for, suggestions


def test_suggestions_are_links_or_no_match_or_hidden(demo_state):
    index = index_for(demo_state)
    rack = demo_state.rack_name[2]
    items, hidden = suggestions(index, rack.lower(), jobs=[])
    assert not hidden and items[0].children.href == f"/floor?rack={rack}"
    assert len(suggestions(index, "h1", jobs=[])[0]) == 10
    items, hidden = suggestions(index, "zz-no-such-thing", jobs=[])
    assert not hidden and items[0].children == NO_MATCH
    assert suggestions(index, "   ", jobs=[]) == ([], True)


def test_the_index_is_built_once_per_site(demo_state):
    assert index_for(demo_state) is index_for(demo_state)
