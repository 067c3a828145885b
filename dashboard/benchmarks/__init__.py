"""The dashboard's benchmarks (``clustertwin bench``): live updates, pages, operator, load, replay, auth."""
