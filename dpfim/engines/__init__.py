"""Counting engines: records -> exact ranked supports (the RankedCounts of dpfim.mechanisms.base).

local.py counts on this machine (numpy, bounded scratch memory); spark.py reads and counts on
Apache Spark (the `spark` extra, imported only when asked for). A mechanism never knows which
engine ran; an engine never imports a mechanism.
"""

from dpfim.engines.local import SupportIndex

__all__ = ["SupportIndex"]
