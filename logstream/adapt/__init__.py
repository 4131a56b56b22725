"""Learning each source online: continual fine-tuning, model versions, swaps."""
