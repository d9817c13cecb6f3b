"""The one source of randomness: `secrets.SystemRandom` by default, a seeded one for tests.

Every sampler takes a `RandomSource` argument; nothing in dpfim draws from a hidden global RNG.
"""

from __future__ import annotations

import random
import secrets
from typing import Protocol


class RandomSource(Protocol):
    """What the exact samplers need: uniform integers and uniform bits."""

    def randbelow(self, n: int) -> int: ...

    def getrandbits(self, k: int) -> int: ...


class _SeededSource:
    """A reproducible source for tests and `--seed` (results then say "private": false)."""

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)

    def randbelow(self, n: int) -> int:
        if n <= 0:
            raise ValueError("randbelow needs n > 0")
        return self._random.randrange(n)

    def getrandbits(self, k: int) -> int:
        return self._random.getrandbits(k)


class _SystemSource:
    """The cryptographically secure default (the OS CSPRNG through `secrets`)."""

    def __init__(self) -> None:
        self._random = secrets.SystemRandom()

    def randbelow(self, n: int) -> int:
        if n <= 0:
            raise ValueError("randbelow needs n > 0")
        return secrets.randbelow(n)

    def getrandbits(self, k: int) -> int:
        return self._random.getrandbits(k) if k > 0 else 0


def system_source() -> RandomSource:
    """The secure default source."""
    return _SystemSource()


def seeded_source(seed: int) -> RandomSource:
    """A deterministic source; never for a private release."""
    return _SeededSource(seed)


def resolve(rng: RandomSource | int | None) -> tuple[RandomSource, bool]:
    """Return (source, private): None → secure source, int → seeded source (not private)."""
    if rng is None:
        return system_source(), True
    if isinstance(rng, bool):
        raise TypeError("rng must be a RandomSource, an int seed or None")
    if isinstance(rng, int):
        return seeded_source(rng), False
    return rng, isinstance(rng, _SystemSource)
