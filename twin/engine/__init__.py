"""The tick engine that composes the physical models, its snapshot, and site-level projections."""
