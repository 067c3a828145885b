#!/bin/sh
# Re-create the shipped colossus incidents with the project's synthetic plant (see docs/incidents.md).
# Usage, from the repository root: sh data/incidents/record.sh [INCIDENT ...]   (all when none is named;
# a few minutes per incident)
set -e
OUT=data/incidents
want() { [ -z "$WANTED" ] && return 0; for n in $WANTED; do [ "$n" = "$1" ] && return 0; done; return 1; }
WANTED="$*"
# The plant ticks every second, as a live 1 Hz twin does; a frame is kept every 5 s. The site's
# default job runs alone (no --fleet).
rec() { clustertwin incidents record --site colossus --duration 600 --tick 1 --frame-every 5 --out "$OUT" --max-detail-racks 8 "$@"; }

if want colossus-cdu-pump-failure; then
rec --name colossus-cdu-pump-failure --tag cooling --tag pump \
    --fault pump:H1-R01-K01-CDU@60+45=2 --fault pump:H1-R01-K01-CDU@105=1 --detail-rack H1-R01-K01 \
    --title "CDU pump failure throttles a rack and slows the job" \
    --notes "Both pumps of H1-R01-K01-CDU stop at 60 s; one restarts after 45 s, the other stays failed."
fi

if want colossus-generator-trip; then
# The summer-2024 colossus supply has no battery; this incident runs on a variant of it,
# "colossus-bess", with a bridge battery of 8 Megapack-class units (7.1 MW, 31.2 MWh: the unit
# data of colossus-2025, far smaller than its 168 units) on bus MV-B.  The battery carries the
# gap at once but cannot hold it for the policy's 15-minute horizon, so the cap policy acts.
rec --site-name colossus-bess \
    --add-source '{ name = "MEGAPACK", kind = "battery", units = 8, unit_mw = 0.893, energy_mwh = 31.2, ramp_mw_per_s = 10.0, bus = "MV-B", roundtrip_efficiency_frac = 0.92 }' \
    --name colossus-generator-trip --tag power --tag generator --tag battery \
    --fault source:GEN-A-01@60 --fault source:GEN-A-02@60 --fault source:GEN-A-03@60 --fault source:GEN-A-04@60 \
    --fault source:GEN-A-05@60 --fault source:GEN-A-06@60 --fault source:GEN-A-07@60 \
    --title "Generator trip: battery ride-through and emergency power caps" \
    --notes "All seven generators of bank A trip at 60 s (a common-mode trip, e.g. their shared gas supply). The colossus site as of July 2024 had no battery: this recording runs on colossus-bess, the colossus site file with a bridge battery of 8 Megapack-class units (7.1 MW, 31.2 MWh) added. The battery takes the gap at its full rating at once, the UPSs the rest; 5 s later (the site's policy response) the cap policy limits every GPU's power, the job's clocks fall and its step time rises; the battery keeps discharging and its state of charge falls."
fi

if want colossus-spine-failure; then
rec --name colossus-spine-failure --tag fabric --fault link:spine-p00-s00@60 \
    --title "Spine switch failure degrades collective bandwidth" \
    --notes "Every link of spine-p00-s00 goes down at 60 s. The engine's job model shows no step-time change for the loss of one spine of pod 0's 64."
fi

if want colossus-hot-afternoon; then
rec --name colossus-hot-afternoon --tag cooling --tag weather --start 2024-07-22T20:00:00+00:00 \
    --fault facility_water:FW-H1@60+120=6 --fault facility_water:FW-H1@180+120=12 \
    --fault facility_water:FW-H1@300+120=18 --fault facility_water:FW-H1@420=24 \
    --title "Hot afternoon: facility water drifts up and throttling spreads" \
    --notes "15:00 CDT; the supply of loop FW-H1 steps 6, 12, 18 then 24 K above its setpoint, two minutes apart."
fi

if want colossus-xid79-restart; then
rec --name colossus-xid79-restart --tag gpu --tag xid --fault xid:h1-r01-k05-n3/2@60=79 \
    --title "XID 79: a GPU falls off the bus and the job restarts from its checkpoint" \
    --notes "GPU 2 of h1-r01-k05-n3 falls off the bus at 60 s. The job stops (every GPU near idle), the failure is detected after 30 s, the node is drained and its ranks move to a spare, the job restores its last checkpoint and warms up, and runs again with the GPU still down."
fi
