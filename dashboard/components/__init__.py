"""Reusable layout pieces of the dashboard (factory functions returning Dash components)."""
