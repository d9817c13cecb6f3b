"""One validated request: every public parameter of a run, checked once, before any data is read.

`check_options` turns what a user gave (CLI flags or keyword arguments) into `Options`, the
one typed object the mechanisms and the release read (what to read and which engine reads it:
dpfim/inputs.py). Usage errors (exit 2) come from here, never from deeper down.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dpfim.accountants import BASIC, get_accountant
from dpfim.accounting import Accountant, ApproxDP, Cost, PureDP, RoundCost, Split, basic
from dpfim.choices import DEFAULT_MECHANISM, TOP_K_MECHANISM
from dpfim.choices import NEIGHBOURS as NEIGHBOURS
from dpfim.closure import GAUSSIAN_DELTA_SHARE, check_noise, choose_noise
from dpfim.errors import ParameterError
from dpfim.inputs import check_record_cap
from dpfim.mechanisms import registry
from dpfim.params import (
    DEFAULT_ELL_MAX,
    Number,
    check_delta,
    check_ell_max,
    check_eps,
    check_fraction,
    check_size,
)

# Read from the registry (dpfim/mechanisms/registry.py); kept as names for the Python API.
MECHANISMS = registry.NAMES
FINITE_UNIVERSE = tuple(n for n, s in registry.REGISTRY.items() if s.needs_vocabulary)
ADD_REMOVE_ONLY = tuple(n for n, s in registry.REGISTRY.items() if "replace" not in s.neighbours)
PURE = tuple(n for n, s in registry.REGISTRY.items() if s.pure)

DEFAULT_CANDIDATES = 10


MAX_TOP = 1000
# --min-support / --min-count (docs/privacy.md §25): the mechanism, its default sizes and the
# default cap on how many itemsets a threshold may release
THRESHOLD_MECHANISM = "levelwise"
DEFAULT_THRESHOLD_SIZES = (1, 2, 3, 4, 5)
DEFAULT_THRESHOLD_CAP = 500
DEFAULT_SUPPORT_SHARE = Fraction(1, 4)


def shares(eps: Fraction, supports: bool, share: Fraction) -> tuple[Fraction, Fraction]:
    """(eps for the selection, eps for the supports): exact; they sum to eps."""
    if not supports:
        return eps, Fraction(0)
    return eps * (1 - share), eps * share


def run_cost(
    spec: registry.Mechanism,
    p: registry.Public,
    k: int,
    eps_support: Fraction,
    accountant: Accountant = BASIC,
) -> Cost:
    """The typed cost of one run: K rounds of the mechanism at the split's (eps0, delta0) (basic:
    (eps_sel/K, delta/K)), then the noisy supports (pure eps_support). For K = 1 without
    supports: the mechanism's own cost."""
    return split_of(spec, p, k, eps_support, accountant).cost(round_cost(spec, p))


def round_cost(spec: registry.Mechanism, p: registry.Public) -> RoundCost:
    """The typed cost of one round at (eps0, delta0): the mechanism's own cost (public only)."""
    return lambda eps0, delta0: spec.charge(p.scaled(eps0, delta0))


def split_of(
    spec: registry.Mechanism,
    p: registry.Public,
    k: int,
    eps_support: Fraction,
    accountant: Accountant,
) -> Split:
    """How a run of K rounds at p's (eps_sel, delta) is split (Accountant.split): a function of
    public parameters only, computed once per distinct request."""
    if spec.whole_run is not None:
        k = 1  # its K rounds are one run-level cost (levelwise): nothing to split among them
    if accountant.exact:  # exact and cheap: never cached, never needs the extra
        return accountant.split(round_cost(spec, p), k, p.eps, eps_support, p.delta)
    # a mechanism's cost reads (eps, delta) and the relation only: one search per request,
    # whether the universe and the record bound are known yet or not
    key = dataclasses.replace(p, universe_size=None, max_record_items=None)
    return _split(spec.name, key, k, eps_support, accountant)


@functools.lru_cache(maxsize=64)
def _split(
    name: str, p: registry.Public, k: int, eps_support: Fraction, accountant: Accountant
) -> Split:
    spec = registry.get(name)
    return accountant.split(round_cost(spec, p), k, p.eps, eps_support, p.delta)


@dataclass(frozen=True)
class Options:
    """Validated public parameters of one run."""

    size: int
    eps: Fraction
    delta: Fraction
    mechanism: str
    neighbours: str
    ell_max: int
    candidates: int = DEFAULT_CANDIDATES
    top: int = 1
    sizes: tuple[int, ...] = ()  # several sizes ranked together (--sizes); () means (size,)
    supports: bool = False
    support_share: Fraction = DEFAULT_SUPPORT_SHARE
    # records keep at most this many items (a uniformly random subset); None: no cap (opted out)
    max_record_items: int | None = None
    # a rules run (dpfim/rules.py): the share of eps spent on the closure's noisy supports (and
    # n under add/remove); the selection gets the rest. None: not a rules run
    closure_share: Fraction | None = None
    # how --top K splits the run's (eps, delta): basic (eps/K, delta/K) or tight (§20.4); the
    # object from dpfim.accountants (check_options looks the name up)
    accountant: Accountant = BASIC
    # a rules run: "laplace" (the closure is pure eps_c) or "gaussian" (it spends (eps_c,
    # delta_c) with delta_c = delta * closure.GAUSSIAN_DELTA_SHARE; the selection the rest of delta)
    closure_noise: str = "laplace"
    # the table's library parameters no entry point names in its own signature (a new option:
    # dpfim/parameters.py), as (name, value) pairs; read them with param(name)
    more: tuple[tuple[str, Any], ...] = ()

    @property
    def thresholded(self) -> bool:
        """--min-support or --min-count: K is chosen privately (docs/privacy.md §25)."""
        return self.param("min_support") is not None or self.param("min_count") is not None

    def param(self, name: str) -> Any:
        """A table parameter of the run: as given, else the table's default for mine."""
        from dpfim import parameters

        given = dict(self.more)
        return given[name] if name in given else parameters.default(parameters.MINE, name)

    @property
    def closure_delta(self) -> Fraction:
        """The delta the closure release spends (0 unless its noise is Gaussian)."""
        if self.closure_share is None or self.closure_noise != "gaussian":
            return Fraction(0)
        return self.delta * GAUSSIAN_DELTA_SHARE

    @property
    def spent_delta(self) -> Fraction:
        """The delta a run spends under basic composition, from its typed cost (0 when pure)."""
        return basic([self.cost()]).delta

    def cost(self, universe_size: int | None = None, max_record_items: int | None = None) -> Cost:
        """The typed cost the mechanism reports for this run (K rounds plus the supports)."""
        eps_sup = self.eps_support
        closure: Cost | None = None
        if self.closure_share is not None:  # rules: the closure's supports (and n)
            eps_sup = Fraction(0)
            eps_c = self.eps * self.closure_share
            measure = ApproxDP(eps_c, self.closure_delta) if self.closure_delta else PureDP(eps_c)
            closure = Cost.of(measure, self.neighbours)
        p = self.public(universe_size, max_record_items)
        cost = run_cost(registry.get(self.mechanism), p, self.top, eps_sup, self.accountant)
        return cost if closure is None else cost.plus(closure)

    @property
    def whole_supports(self) -> bool:
        """--supports that the mechanism adds itself, inside its own budget (levelwise:
        noisy parity coefficients from a share of its zCDP, docs/privacy.md §24)."""
        return self.supports and registry.get(self.mechanism).whole_run is not None

    @property
    def eps_support(self) -> Fraction:
        """The --supports eps spent apart from the mechanism (0 without them, when the
        mechanism adds them itself, and for a rules run: its closure is charged apart, after
        the selection)."""
        if self.closure_share is not None or self.whole_supports:
            return Fraction(0)
        return shares(self.eps, self.supports, self.support_share)[1]

    def split(self, max_record_items: int | None = None) -> Split:
        """How this run's (eps, delta) is split among its K rounds (Accountant.split)."""
        p = self.public(None, max_record_items)
        spec = registry.get(self.mechanism)
        return split_of(spec, p, self.top, self.eps_support, self.accountant)

    def round_public(
        self, universe_size: int | None, max_record_items: int | None
    ) -> registry.Public:
        """One selection round's public parameters: the split's (eps0, delta0)."""
        s = self.split(max_record_items)
        return self.public(universe_size, max_record_items).scaled(s.eps0, s.delta0)

    @property
    def all_sizes(self) -> tuple[int, ...]:
        return self.sizes or (self.size,)

    def public(self, universe_size: int | None, max_record_items: int | None) -> registry.Public:
        """The mechanism's public parameters for the selection (its share of eps)."""
        eps_sel, _ = shares(self.eps, self.supports, self.support_share)
        if self.closure_share is not None:
            eps_sel = self.eps * (1 - self.closure_share)
        if self.whole_supports:  # the mechanism divides the whole budget itself
            eps_sel = self.eps
        return registry.Public(
            eps_sel,
            self.delta - self.closure_delta,
            self.all_sizes,
            self.neighbours,
            self.ell_max,
            self.candidates,
            max_record_items,
            universe_size,
            self.support_share if self.whole_supports else Fraction(0),
            self.param("min_support"),
            self.param("min_count"),
        )


def _threshold_shape(
    more: dict[str, Any], size: int | None, sizes: Any, top: int
) -> tuple[int | None, Any, int]:
    """--max-len L is --sizes 1-L; --min-support / --min-count: default sizes 1-5 and the cap
    --top (500 when it is left at 1). Public parameters only."""
    max_len = more.get("max_len")
    if max_len is not None:
        if sizes is not None or size is not None:
            raise ParameterError("give --max-len or --sizes/--size, not both")
        sizes = tuple(range(1, max_len + 1))
    if more.get("min_support") is not None and more.get("min_count") is not None:
        raise ParameterError("give --min-support or --min-count, not both")
    if more.get("min_support") is None and more.get("min_count") is None:
        return size, sizes, top
    if sizes is None and size is None:
        sizes = DEFAULT_THRESHOLD_SIZES
    return size, sizes, DEFAULT_THRESHOLD_CAP if top == 1 else top


def default_mechanism(
    top: int, sizes: str | Sequence[int] | int | None, bounded: bool = True
) -> str:
    """The mechanism a run gets when none is named: levelwise for --top K >= 2 over the sizes
    1..s (issue 31), else lmm-floor (issue 33). sizes: --sizes as given, or --size, or None
    (the default size 2); bounded: records are capped (--max-record-items) or the vocabulary
    is declared (levelwise's open universe needs one or the other). Public parameters only."""
    if not bounded:
        return DEFAULT_MECHANISM
    if isinstance(sizes, int) or sizes is None:
        parsed: tuple[int, ...] = (2 if sizes is None else sizes,)
    else:
        try:
            parsed = parse_sizes(sizes)
        except ParameterError:
            return DEFAULT_MECHANISM  # check_options reports the bad --sizes itself
    from_one = parsed == tuple(range(1, max(parsed) + 1))
    top_k = not isinstance(top, bool) and isinstance(top, int) and top >= 2
    return TOP_K_MECHANISM if top_k and from_one else DEFAULT_MECHANISM


def check_options(
    *,
    size: int | None,
    eps: Number,
    delta: Number,
    mechanism: str | None = None,
    neighbours: str = "replace",
    ell_max: int = DEFAULT_ELL_MAX,
    candidates: int = DEFAULT_CANDIDATES,
    universe_given: bool = False,
    max_record_items: int | str | None = None,
    top: int = 1,
    sizes: str | Sequence[int] | None = None,
    supports: bool = False,
    support_share: str | Fraction | None = None,
    closure_share: Number | None = None,
    accountant: str = "basic",
    closure_noise: str | None = None,
    more: Mapping[str, Any] | None = None,
) -> Options:
    """Validate every public parameter before any data is read (usage errors come first).

    max_record_items: None for the default cap (DEFAULT_MAX_RECORD_ITEMS), "none" (NO_CAP) to
    opt out, or B >= the largest size.
    closure_share: a rules run (dpfim/rules.py) and the share of eps its closure supports get;
    closure_noise: its noise (auto, laplace, gaussian), resolved here from public values.
    accountant: how --top K splits (eps, delta): "basic" (eps/K, delta/K) or "tight"
    (docs/privacy.md §20.4; needs dp-accounting)."""
    max_record_items = check_record_cap(max_record_items)
    acct = get_accountant(accountant)
    more = dict(more or {})
    size, sizes, top = _threshold_shape(more, size, sizes, top)
    if mechanism is None and (more.get("min_support") or more.get("min_count")):
        mechanism = THRESHOLD_MECHANISM
    if mechanism is None:
        bounded = max_record_items is not None or universe_given
        mechanism = default_mechanism(top, sizes if sizes is not None else size, bounded)
    if mechanism not in registry.REGISTRY:
        raise ParameterError(f"--mechanism must be one of {', '.join(MECHANISMS)}: {mechanism!r}")
    if neighbours not in NEIGHBOURS:
        raise ParameterError(f"--neighbours must be one of {', '.join(NEIGHBOURS)}: {neighbours!r}")
    spec = registry.get(mechanism)
    if neighbours not in spec.neighbours:
        raise ParameterError(
            f"--mechanism {mechanism} is valid only under add/remove neighbours: "
            "pass --neighbours add-remove (it then does not release n)"
        )
    if spec.needs_vocabulary and not universe_given:
        raise ParameterError(
            f"--mechanism {mechanism} needs a finite universe: declare the public vocabulary "
            "with --universe-items FILE"
        )
    if spec.needs_record_bound and max_record_items is None:
        raise ParameterError(
            f"--mechanism {mechanism} needs a record-length cap (its growth bound is C(B, r)): "
            "drop --max-record-items none, or give --max-record-items B"
        )
    if spec.whole_run is not None and max_record_items is None and not universe_given:
        raise ParameterError(  # levelwise's open universe: one record adds at most B items
            f"--mechanism {mechanism} in the open universe needs the record-length cap: drop "
            "--max-record-items none, or declare the vocabulary with --universe-items FILE"
        )
    if candidates < 1:
        raise ParameterError(f"--candidates must be at least 1, got {candidates}")
    if isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= MAX_TOP:
        raise ParameterError(f"--top must be an integer from 1 to {MAX_TOP}, got {top!r}")
    if sizes is not None and size is not None:
        raise ParameterError("give --size or --sizes, not both")
    parsed = () if sizes is None else parse_sizes(sizes)
    if more.get("min_support") is not None or more.get("min_count") is not None:
        supports = supports or closure_share is None  # a threshold's answer has its supports
    if support_share is not None and not supports:
        raise ParameterError("--support-share needs --supports")
    share = DEFAULT_SUPPORT_SHARE
    if support_share is not None:
        share = check_fraction(support_share, "--support-share")
        if not 0 < share < 1:
            raise ParameterError(f"--support-share must be in (0, 1), got {support_share}")
    closure = None
    if closure_share is not None:
        if supports:
            raise ParameterError(
                "--supports does not apply to rules: the closure's noisy supports are released"
            )
        if not acct.exact:  # its ledger composes by exact sums
            raise ParameterError(
                "dpfim rules splits its budget by basic composition: --accountant tight applies "
                "to its --ledger only"
            )
        closure = check_fraction(closure_share, "--closure-share")
        if not 0 < closure < 1:
            raise ParameterError(f"--closure-share must be in (0, 1), got {closure_share}")
    opts = Options(
        check_size(parsed[0] if parsed else 2 if size is None else size),
        check_eps(eps),
        check_delta(delta),
        mechanism,
        neighbours,
        check_ell_max(ell_max),
        candidates,
        top,
        parsed if len(parsed) > 1 else (),
        supports,
        share,
        max_record_items,
        closure,
        acct,
        more=tuple(sorted(more.items())),
    )
    if opts.thresholded and mechanism != THRESHOLD_MECHANISM:
        raise ParameterError(
            f"--min-support and --min-count choose how many itemsets with --mechanism "
            f"{THRESHOLD_MECHANISM}: drop --mechanism {mechanism}"
        )
    if opts.param("min_count") is not None:  # public: refused before any data is read
        from dpfim.mechanisms import levelwise

        public = opts.round_public(1 if universe_given else None, max_record_items)
        levelwise.check_threshold_count(public, opts.param("min_count"), top)
    if closure is not None:
        noise = choose_noise(
            check_noise(closure_noise),
            top,
            opts.all_sizes,
            neighbours,
            max_record_items,
            opts.eps * closure,
            opts.delta,
        )
        opts = dataclasses.replace(opts, closure_noise=noise)
    if max_record_items is not None and max_record_items < max(opts.all_sizes):
        raise ParameterError(
            f"--max-record-items must be at least --size ({max(opts.all_sizes)}), "
            f"got {max_record_items}"
        )
    if spec.check is not None and (max_record_items is not None or not spec.needs_record_bound):
        # its proof's preconditions, at the (eps, delta) each selection round really gets
        spec.check(opts.round_public(None, max_record_items))
    elif acct.requires_extra:
        opts.split(max_record_items)  # a missing dp-accounting is a usage error now
    return opts


def none_hint(opts: Options, max_record_items: int | None = None) -> str:
    """The curator's hint after a "none" answer: the chosen mechanism's own margin, at the
    (eps, delta) one selection round gets. Public parameters only."""
    round_p = opts.round_public(None, max_record_items)
    sizes = "/".join(map(str, opts.all_sizes))
    hint = registry.none_hint(opts.mechanism, round_p, f"{sizes}-itemset")
    if opts.top > 1:
        hint += opts.split(max_record_items).accountant.round_hint(opts.top)
    return hint


def parse_sizes(text: str | Sequence[int]) -> tuple[int, ...]:
    """--sizes "2,3" or "1-3" (or a sequence of ints): distinct sizes, ascending."""
    if not isinstance(text, str):
        values = [check_size(int(v)) for v in text]
    else:
        values = []
        for part in (t.strip() for t in text.split(",")):
            lo, dash, hi = part.partition("-")
            try:
                bounds = (int(lo), int(hi)) if dash else (int(part), int(part))
            except ValueError:
                raise ParameterError(f"--sizes must be like 2,3 or 1-3, got {text!r}") from None
            if bounds[0] > bounds[1]:
                raise ParameterError(f"--sizes: empty range {part!r}")
            values.extend(check_size(v) for v in range(bounds[0], bounds[1] + 1))
    if not values:
        raise ParameterError("--sizes: give at least one size")
    return tuple(sorted(set(values)))


# The release modes, as CLI arguments (K = 5 where a mode takes K; a first word that is not a
# flag names the command, else `mine`): every one works with every engine, mechanism, universe
# and input format, or is refused with a usage error before any data is read
# (tests/test_contract.py runs the matrix generated from this table, the engine table and the
# mechanism registry). `rules` is a consumer of the same release path (the closure's supports).
RELEASE_MODES: dict[str, tuple[str, ...]] = {
    "top 1": (),
    "top K": ("--top", "5"),
    "top K with supports": ("--top", "5", "--supports"),
    "several sizes, top K": ("--sizes", "1-3", "--top", "5"),
    "rules of the top K": ("rules", "--top", "5", "--sizes", "1-2"),
    "above a support threshold": ("--min-support", "0.3", "--max-len", "3"),
}


def release_command(mode: str) -> tuple[str, tuple[str, ...]]:
    """(command, flags) of a release mode."""
    args = RELEASE_MODES[mode]
    if args and not args[0].startswith("-"):
        return args[0], args[1:]
    return "mine", args
