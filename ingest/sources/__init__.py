"""Telemetry sources: dcgm-exporter, the Prometheus API, Redfish and IPMI, parsed into normalised samples."""
