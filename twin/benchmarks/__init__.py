"""The twin's benchmarks (engine tick, site load, training model, what-if projection); importing registers them."""

from twin.benchmarks import engine, site, training, whatif  # noqa: F401
