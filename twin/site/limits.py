"""Upper bounds on what a site file may ask for: ten times a Colossus-class site.

A site file is checked against these before anything is expanded, so a typo such as
``racks = 100000000`` is one error line, not minutes of allocation.  Colossus (the
``colossus`` reference site) has 100,352 GPUs in 12,544 nodes and 1,568 racks, 4,000
fabric switches with 202,752 switch-to-switch links, 1,568 CDUs, 290 power elements and
15 sources.
"""

from __future__ import annotations

SCALE = 10  # how many Colossus-class sites one file may describe

MAX_GPUS = SCALE * 100_352
MAX_NODES = SCALE * 12_544
MAX_RACKS = SCALE * 1_568
MAX_SWITCHES = SCALE * 4_000
MAX_SWITCH_LINKS = SCALE * 202_752
MAX_POWER_ELEMENTS = 10_000  # per section (switchgear, transformers, ups, busways)
MAX_SOURCE_UNITS = 1_000  # sources after expanding `units`
MAX_HALLS = 100
MAX_ROWS = 10_000  # in one hall and in the whole site
MAX_PLANTS = 100
MAX_LOOPS = 1_000
MAX_ENDPOINTS = 1_000
# GPUs + nodes + racks + CDUs + power elements + sources (Colossus: 116,337); the fabric,
# generated from these, has its own limits above
MAX_ENTITIES = SCALE * 116_337
MAX_CALIBRATED_GPUS = 16_384  # GPUs a [calibration] block may name (fitted GPUs are the recorded detail ones)
MAX_CALIBRATED_CDUS = MAX_RACKS  # CDUs a [calibration] block may name
MAX_TEXT_CHARS = 10_000  # any string in a site file
MAX_NAME_CHARS = 200  # entity names and name patterns
