"""Exact randomness: an injectable source and samplers on integers and Fractions only."""
