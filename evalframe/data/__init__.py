"""The data stage: the long tables evalframe evaluates, their units, subsets and contracts (DESIGN §2)."""
