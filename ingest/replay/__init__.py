"""Incidents: the portable bundle, the flight recorder, the incident library and headless replay."""
