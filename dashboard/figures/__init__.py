"""Pure figure builders: (data) -> plotly.graph_objects.Figure, no Dash, no hub."""
