"""The view registry and what a page renders: live, scenario, replay; compare mode; one rendering per tick."""
