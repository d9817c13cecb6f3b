"""A uniform U in [0, 1) whose bits are drawn only as far as a decision needs them.

Inversion sampling needs U only to the precision that separates it from the boundaries it is
compared with; drawing 64 bits at a time and refining on demand gives the exact distribution
(the decision equals the one the infinitely precise U would give).
"""

from __future__ import annotations

from mpmath.libmp import finf, fzero, libmpi

from dpfim.samplers import interval as iv
from dpfim.samplers.rng import RandomSource

_CHUNK = 64


class LazyUniform:
    """U = 0.b1 b2 b3 ... in binary, bits drawn in chunks of 64 from the random source."""

    def __init__(self, rng: RandomSource) -> None:
        self._rng = rng
        self._bits = 0
        self._k = 0
        self.refine()

    @property
    def bits(self) -> int:
        return self._k

    def refine(self) -> None:
        """Draw 64 more bits."""
        self._bits = (self._bits << _CHUNK) | self._rng.getrandbits(_CHUNK)
        self._k += _CHUNK

    def precision(self) -> int:
        """A working precision that represents U's endpoints exactly, with room to spare."""
        return self._k + 64

    def interval(self, prec: int) -> iv.Interval:
        """[u, u + 2^-k], which contains U."""
        scale = 1 << self._k
        lo = iv.exact(self._bits, prec)
        hi = iv.exact(self._bits + 1, prec)
        inv = iv.exact(scale, prec)
        return (iv.div(lo, inv, prec)[0], iv.div(hi, inv, prec)[1])

    def exponential(self, prec: int) -> iv.Interval:
        """An interval containing E = -ln(1 - U), which is Exp(1)-distributed."""
        u = self.interval(prec)
        one_minus = iv.sub(iv.exact(1, prec), u, prec)
        lo_arg = (one_minus[1], one_minus[1])
        hi_arg = (one_minus[0], one_minus[0])
        lo = libmpi.mpi_neg(iv.log(lo_arg, prec), prec)
        hi = (finf, finf) if hi_arg[0] == fzero else libmpi.mpi_neg(iv.log(hi_arg, prec), prec)
        return (lo[0], hi[1])
