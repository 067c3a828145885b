"""The synthetic plant: a twin engine with injected faults and a workload, read through noisy sensors."""
