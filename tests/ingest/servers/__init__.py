"""Real peers for the ingest tests: ipmi_sim, Prometheus, HTTP servers on 127.0.0.1."""
