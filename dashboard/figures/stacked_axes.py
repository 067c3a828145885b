"""Two plots stacked in one figure, laid out by hand.

``plotly.subplots.make_subplots`` costs about 30 ms per call, a third of a live
callback's budget; these axes and title annotations are what it would produce.
"""

from __future__ import annotations

from dashboard.present import theme


def stacked_layout(top_title: str, bottom_title: str, gap_frac: float = 0.3) -> dict:
    """Layout keywords: ``xaxis``/``yaxis`` on top, ``xaxis2``/``yaxis2`` below, titles above each."""
    split = (1.0 - gap_frac) / 2
    top, bottom = [1.0 - split, 1.0], [0.0, split]
    title_font = dict(size=12, color=theme.TEXT_MUTED)
    return dict(
        xaxis=dict(anchor="y", domain=[0.0, 1.0]),
        yaxis=dict(anchor="x", domain=top),
        xaxis2=dict(anchor="y2", domain=[0.0, 1.0]),
        yaxis2=dict(anchor="x2", domain=bottom),
        annotations=[
            dict(
                text=top_title,
                x=0.5,
                y=top[1],
                xref="paper",
                yref="paper",
                xanchor="center",
                yanchor="bottom",
                showarrow=False,
                font=title_font,
            ),
            dict(
                text=bottom_title,
                x=0.5,
                y=bottom[1],
                xref="paper",
                yref="paper",
                xanchor="center",
                yanchor="bottom",
                showarrow=False,
                font=title_font,
            ),
        ],
    )
