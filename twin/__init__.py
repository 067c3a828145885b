"""The twin: pure models of a liquid-cooled AI training site, composed into a tick engine.

Subpackages, bottom to top:

- :mod:`twin.site`      site files, the equipment catalogue, and the static site tables;
- :mod:`twin.physics`   thermal, cooling, power, fabric, weather and failure models;
- :mod:`twin.training`  step time, goodput and training jobs placed on a site;
- :mod:`twin.engine`    the tick engine, its snapshot, and site projections;
- :mod:`twin.commands`  the twin's ``clustertwin`` sub-commands; :mod:`twin.benchmarks` its benchmarks.

This package imports neither :mod:`ingest` nor :mod:`dashboard`: the command line and the
benchmark registry find the other packages' parts through entry points.
"""
