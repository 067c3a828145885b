"""The live runtime: the hub and its parts (tick loop, frame recorder, alert writes and actions, publisher,
read-only view), readings buffer, pollers, scheduler, alert rules and followers."""
