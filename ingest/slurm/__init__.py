"""The live Slurm queue on the fleet model: mapping, run-time estimates, start-time predictions, attribution."""
