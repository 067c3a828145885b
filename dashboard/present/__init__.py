"""How numbers and tables look: theme, formatting, colour scales, HTML tables, stable orders."""
