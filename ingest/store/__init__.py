"""Storage: relational tables (SQLModel) and columnar telemetry frames, on SQLite or PostgreSQL."""
