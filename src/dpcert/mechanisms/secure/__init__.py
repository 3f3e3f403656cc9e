"""Integer-exact samplers whose running time does not depend on the noise drawn."""
