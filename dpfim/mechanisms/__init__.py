"""Selection mechanisms, one file per mechanism; shared pieces in base.py, thresholds.py,
search.py and selection.py."""
