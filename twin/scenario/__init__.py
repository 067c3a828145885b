"""What-if scenarios above the engine: scenario files, the edit pipeline, projections and comparisons.

* :mod:`twin.scenario.conditions` — a scenario file checked on its own (:class:`ScenarioDoc`) and its
  ``[conditions]`` resolved against a site into tick inputs (:class:`Scenario`);
* :mod:`twin.scenario.whatif` — the edit pipeline: edited site model → built site → condition edits;
* :mod:`twin.scenario.load` — :func:`parse_scenario` / :func:`load_scenario`, which compose the two;
* :mod:`twin.scenario.writer` — a scenario written back as TOML;
* :mod:`twin.scenario.projection` — the twin run under a scenario and its report;
* :mod:`twin.scenario.compare` — baseline against scenario, and the blast radius of one element.
"""
