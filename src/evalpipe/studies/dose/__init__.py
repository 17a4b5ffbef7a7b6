"""Dose response: accuracy by the number of edited words (the count design's main table)."""
