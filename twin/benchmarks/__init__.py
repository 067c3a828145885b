"""The twin's benchmarks (engine tick, site load, training model); importing registers them."""

from twin.benchmarks import engine, site, training  # noqa: F401
