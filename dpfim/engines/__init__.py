"""Engines: records -> exact supports behind the RankedCounts interface (mechanisms/base.py).

A mechanism never knows which engine ran; an engine never imports a mechanism. The Spark engine
(`spark.py`, the `spark` extra) is imported only when asked for.
"""
