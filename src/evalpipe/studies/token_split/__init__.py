"""Token split: the accuracy change by how many tokens the typos added to their words."""
