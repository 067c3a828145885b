"""Load test of the served dashboard: captured live-update requests replayed by many simulated viewers."""
