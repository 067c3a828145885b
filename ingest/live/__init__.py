"""The live runtime: readings buffer, pollers, scheduler, alert rules and the hub that ticks the twin."""
