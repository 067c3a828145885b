"""What the pages derive from a view: aggregates, dead equipment, rack detail, job actions, KPI tiles."""
