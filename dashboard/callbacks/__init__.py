"""Dash plumbing shared by the pages: input validation, figure patches and their relay, click data."""
