"""Physical models as pure numpy functions: GPU thermal, cooling, power, power tree, fabric, weather, failures."""
