"""Association rules from a Release (issue 21): a consumer of the one release path.

1. The selection: the top-K itemsets through `dpfim.release.release` (any registered mechanism)
   at eps_sel = eps * (1 - closure_share).
2. The closure: every non-empty subset of a selected itemset (a public function of the
   selection), M itemsets; each gets c(I) + DLap(Delta / eps_c), and under add/remove n also
   gets n + DLap(Delta / eps_c) as one more coordinate of the same vector.
3. Consistency: the least-squares projection of the noisy supports onto {non-negative, a
   subset's support at least its superset's, at most n}; post-processing, no privacy cost.
4. Rules: mlxtend's `association_rules` on the consistent supports (post-processing).

Privacy (docs/privacy.md, "Association rules: the closure release"): neighbours as chosen.
One record moves every count by at most 1 (both relations), so the M-vector of closure counts
has L1 sensitivity M (M + 1 with n under add/remove); with a record-length cap B, a record holds
at most S = sum_{j=1}^{r} C(B, j) closure itemsets, so Delta = min(M, S) + 1 under add/remove
and min(M, 2S) under replace. DLap(Delta/eps_c) per coordinate makes the vector (eps_c, 0)-DP
given the selection; M is a function of the selection. Or (--closure-noise gaussian, or auto
when it has less expected error) N_Z(0, Delta/(2 rho)) per coordinate: rho-zCDP (the squared L2
sensitivity is at most Delta), hence (eps_c, delta/10)-DP (docs/privacy.md §21.4). Composition
with the selection's (eps_sel, delta - delta_c) is basic sequential composition: (eps, delta).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import importlib
import itertools
import math
import threading
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from dpfim.accounting import Cost, amount, basic, zcdp_rho_for
from dpfim.choices import DEFAULT_CLOSURE_SHARE, INTERVAL_LEVEL, RULE_METRICS
from dpfim.closure import (
    DEFAULT_NOISE,
    NOISE_NAMES,
    check_noise,
    gaussian_variance,
    sensitivity,
)
from dpfim.counts import Counts
from dpfim.errors import ParameterError
from dpfim.params import Number, check_fraction
from dpfim.samplers.gaussian import discrete_gaussian
from dpfim.samplers.laplace import discrete_laplace
from dpfim.samplers.rng import RandomSource
from dpfim.views import ids_of

if TYPE_CHECKING:
    import pandas as pd

    from dpfim.release import Release

DEFAULT_METRIC = "confidence"
DEFAULT_MIN_THRESHOLD = 0.1
METRICS = RULE_METRICS  # dpfim/choices.py
# mlxtend's association_rules columns (0.25; tests/test_mlxtend_habits.py compares them with
# its own empty frame): a frame without rules has them all, as mlxtend's has
_RULE_COLUMNS = [
    "antecedents",
    "consequents",
    "antecedent support",
    "consequent support",
    "support",
    "confidence",
    "lift",
    "representativity",
    "leverage",
    "conviction",
    "zhangs_metric",
    "jaccard",
    "certainty",
    "kulczynski",
]


def preload() -> threading.Thread:
    """Import pandas and mlxtend in a thread (where `worker()` cannot fork): imports hold the
    GIL, so this overlaps little with reading. No data is touched; the caller joins it."""

    def load() -> None:
        with contextlib.suppress(ImportError):  # the real import reports it, on the main thread
            importlib.import_module("mlxtend.frequent_patterns")

    thread = threading.Thread(target=load, name="dpfim-preload", daemon=True)
    thread.start()
    return thread


class _Worker:
    """mlxtend's association_rules in a forked child process. The child imports pandas and
    mlxtend (about 0.4 s of CPU, which in a thread would hold the GIL against the reader) on
    the other core while the parent reads and selects, then turns the closure's released
    values into rule records. Only released values cross the pipe (post-processing)."""

    def __init__(self) -> None:
        import multiprocessing

        ctx = multiprocessing.get_context("fork")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child,), name="dpfim-rules", daemon=True)
        self._proc.start()
        child.close()

    def records(self, closure: Closure, request: RulesRequest) -> list[dict[str, Any]] | None:
        """The rule records, or None if the child could not give them (the caller then
        computes them itself)."""
        try:
            self._conn.send((closure, request))
            if not self._conn.poll(WORKER_TIMEOUT):
                return None
            status, payload = self._conn.recv()
        except (OSError, EOFError, ValueError):
            return None
        return payload if status == "ok" else None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._conn.close()  # the child, if still waiting, reads EOF and exits
        self._proc.join(timeout=1)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join()


WORKER_TIMEOUT = 30  # seconds to wait for the child's rules before computing them here


def _serve(conn: Any) -> None:
    """The child: quiet (no output, no signal messages: the parent reports), imports, answers
    one request, exits without the parent's exit handlers."""
    import os
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: parent's
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    try:
        with contextlib.suppress(ImportError):
            importlib.import_module("mlxtend.frequent_patterns")
        try:
            closure, request = conn.recv()
        except (EOFError, OSError):
            os._exit(0)
        try:
            out: tuple[str, Any] = ("ok", rules_frame(closure, request).to_dict("records"))
        except Exception as exc:
            out = ("error", repr(exc))
        with contextlib.suppress(OSError):
            conn.send(out)
    finally:
        os._exit(0)


_WORKER: contextvars.ContextVar[_Worker | None] = contextvars.ContextVar(
    "dpfim_rules_worker", default=None
)


def _loaded() -> bool:
    import sys

    return "mlxtend.frequent_patterns" in sys.modules


@contextlib.contextmanager
def worker() -> Iterator[None]:
    """While open, rules_records() asks a forked child (started now, before any file or lock
    is opened) for the rules; where fork is not available, pandas and mlxtend are imported in
    a thread instead."""
    import multiprocessing
    import sys

    if _loaded():  # a library caller that has mlxtend already: nothing to overlap
        yield
        return
    if sys.platform != "linux" or "fork" not in multiprocessing.get_all_start_methods():
        loading = preload()
        try:
            yield
        finally:
            loading.join()
        return
    child = _Worker()
    token = _WORKER.set(child)
    try:
        yield
    finally:
        _WORKER.reset(token)
        child.close()


def rules_records(closure: Closure, request: RulesRequest) -> list[dict[str, Any]]:
    """mlxtend's rules on the consistent supports, as records (from the worker when one is
    open, else computed here)."""
    child = _WORKER.get()
    if child is not None:
        got = child.records(closure, request)
        if got is not None:
            return got
    records: list[dict[str, Any]] = rules_frame(closure, request).to_dict("records")
    return records


@dataclass(frozen=True)
class RulesRequest:
    """The public parameters of a rules run besides the selection's (validated once)."""

    metric: str = DEFAULT_METRIC
    min_threshold: float = DEFAULT_MIN_THRESHOLD
    closure_share: Fraction = DEFAULT_CLOSURE_SHARE
    rules: bool = True  # False: frequent_itemsets (the closure only, no rules computed)
    noise: str = DEFAULT_NOISE  # auto | laplace | gaussian (resolved by request.check_options)


def check_rules(
    metric: str = DEFAULT_METRIC,
    min_threshold: Number = DEFAULT_MIN_THRESHOLD,
    closure_share: Number | None = None,
    *,
    rules: bool = True,
    noise: str | None = None,
) -> RulesRequest:
    """Validate --metric, --min-threshold, --closure-share and --closure-noise (usage errors,
    before any data is read); request.check_options validates the share again with the other
    options and resolves `auto`."""
    noise = check_noise(noise)
    if metric not in METRICS:
        raise ParameterError(f"--metric must be one of {', '.join(METRICS)}: {metric!r}")
    t = float(check_fraction(min_threshold, "--min-threshold"))
    if not math.isfinite(t):
        raise ParameterError(f"--min-threshold must be finite, got {min_threshold!r}")
    share = DEFAULT_CLOSURE_SHARE
    if closure_share is not None:
        share = check_fraction(closure_share, "--closure-share")
        if not 0 < share < 1:
            raise ParameterError(f"--closure-share must be in (0, 1), got {closure_share}")
    return RulesRequest(metric, t, share, rules, noise)


@dataclass(frozen=True)
class Closure:
    """The downward closure of the selection and what was released about it.

    keys: item-id tuples, by size then first appearance; names: their released names;
    noisy: c(I) + noise (ints); consistent: the projected supports (floats, counts);
    n: the n the fractions use (exact and public under replace; the projected noisy n under
    add/remove), noisy_n: the raw noisy n (add/remove only)."""

    keys: list[tuple[int, ...]]
    names: list[list[str]]
    noisy: list[int]
    consistent: list[float]
    n: float
    noisy_n: int | None
    sensitivity: int
    scale: Fraction  # Laplace: the scale Delta/eps_c; Gaussian: sigma^2
    noise: str = "laplace"
    rho: Fraction | None = None  # Gaussian: the closure's zCDP parameter


def clearing(closure: Closure, opts: Any) -> Closure:
    """The closure's itemsets whose consistent support clears --min-support (times the public
    n or the noisy n) or --min-count, with every subset clearing it too (downward closed):
    post-processing of released values, the basis of the rules of a threshold run."""
    from dpfim.mechanisms import threshold

    least = threshold.bar(opts.param("min_support"), opts.param("min_count"), closure.n)
    keep = threshold.clearing(closure.keys, closure.consistent, least)
    return dataclasses.replace(
        closure,
        keys=[closure.keys[j] for j in keep],
        names=[closure.names[j] for j in keep],
        noisy=[closure.noisy[j] for j in keep],
        consistent=[closure.consistent[j] for j in keep],
    )


def closure_keys(selected: Sequence[Sequence[int]]) -> list[tuple[int, ...]]:
    """Every non-empty subset of each selected itemset, once, by size then first appearance:
    a public function of the selection (never of the data)."""
    seen: dict[tuple[int, ...], None] = {}
    for ids in selected:
        items = tuple(sorted(ids))
        for r in range(1, len(items) + 1):
            for sub in itertools.combinations(items, r):
                seen.setdefault(sub, None)
    return sorted(seen, key=len)


def release_closure(
    counts: Counts,
    rel: Release,
    eps_closure: Fraction,
    neighbours: str,
    max_record_items: int | None,
    rng: RandomSource,
    *,
    noise: str = "laplace",
    delta_closure: Fraction = Fraction(0),
) -> Closure:
    """Noisy supports of the closure of rel's picks (and a noisy n under add/remove), made
    consistent. The only exact quantities read are the counts the noise is added to.
    noise: "laplace" (pure eps_closure) or "gaussian" ((eps_closure, delta_closure) through
    rho-zCDP, docs/privacy.md §21.4)."""
    keys = closure_keys([ids_of(q.ids) for q in rel.picks])
    sizes = [len(k) for k in keys]
    delta_1 = sensitivity(len(keys), neighbours, max(sizes, default=1), max_record_items)
    rho = None
    if noise == "gaussian":
        rho = zcdp_rho_for(eps_closure, delta_closure)
        scale = gaussian_variance(delta_1, rho) if delta_1 else Fraction(1)

        def draw() -> int:
            return discrete_gaussian(scale, rng)

    else:
        scale = Fraction(delta_1) / eps_closure

        def draw() -> int:
            return discrete_laplace(scale, rng)

    exact = counts.supports([list(k) for k in keys]) if keys else []
    noisy = [c + draw() for c in exact]
    del exact
    noisy_n = None
    if neighbours == "add-remove":
        noisy_n = counts.n + draw()
    items = counts.items
    from dpfim.release import sort_items

    names = [sort_items(items[i] for i in k) for k in keys]
    fixed_n = float(counts.n) if noisy_n is None else None
    consistent, n_hat = project(keys, [float(v) for v in noisy], noisy_n, fixed_n)
    return Closure(keys, names, noisy, consistent, n_hat, noisy_n, delta_1, scale, noise, rho)


def project(
    keys: Sequence[tuple[int, ...]],
    noisy: Sequence[float],
    noisy_n: int | None,
    fixed_n: float | None,
    *,
    tol: float = 1e-9,
    max_sweeps: int = 20_000,
) -> tuple[list[float], float]:
    """The least-squares projection of the noisy supports (and noisy n) onto the consistent
    ones: x >= 0, x(J) >= x(I) for J a subset of I, x(I) <= n. Dykstra's alternating
    projections onto the half-spaces (each a constraint on at most two coordinates), which
    converge to the Euclidean projection onto their intersection. Post-processing of released
    values only (no privacy cost); float arithmetic is fine here.

    Returns (consistent supports, n): n is the fixed public n (replace) or the projected noisy
    n (add/remove), at least 1 so that fractions are defined."""
    index = {k: i for i, k in enumerate(keys)}
    m = len(keys)
    has_n = noisy_n is not None
    values = [*noisy, float(noisy_n)] if noisy_n is not None else list(noisy)
    x = np.asarray(values, dtype=np.float64)
    top = m if has_n else -1  # the coordinate of n (the empty itemset), when it is released
    # constraints a.x <= b as (i, j, b): x[i] - x[j] <= b (j = -1: x[i] <= b; i = -1: -x[j] <= b)
    cons: list[tuple[int, int, float]] = []
    for k, key in enumerate(keys):
        cons.append((-1, k, 0.0))  # x >= 0
        if len(key) == 1:
            if has_n:
                cons.append((k, top, 0.0))  # x(I) <= n
            elif fixed_n is not None:
                cons.append((k, -1, fixed_n))
        for drop in range(len(key)):
            sub = key[:drop] + key[drop + 1 :]
            if sub:
                cons.append((k, index[sub], 0.0))  # x(I) <= x(J)
    if has_n:
        cons.append((-1, top, 0.0))
    if not _violated(x, cons, tol):
        return _out(x, m, has_n, fixed_n)
    incr = np.zeros((len(cons), 2))
    for _ in range(max_sweeps):
        before: np.ndarray = x.copy()
        for c, (i, j, b) in enumerate(cons):
            # Dykstra: add back this constraint's last correction, project, store the new one
            if i >= 0:
                x[i] += incr[c, 0]
            if j >= 0:
                x[j] += incr[c, 1]
            xi = x[i] if i >= 0 else 0.0
            xj = x[j] if j >= 0 else 0.0
            excess = xi - xj - b
            norm = (i >= 0) + (j >= 0)
            step = excess / norm if excess > 0 else 0.0
            incr[c] = (step if i >= 0 else 0.0, -step if j >= 0 else 0.0)
            if i >= 0:
                x[i] -= step
            if j >= 0:
                x[j] += step
        if float(np.max(np.abs(x - before), initial=0.0)) <= tol * max(1.0, float(np.max(x))):
            break
    return _out(x, m, has_n, fixed_n)


def _violated(x: np.ndarray, cons: list[tuple[int, int, float]], tol: float) -> bool:
    for i, j, b in cons:
        xi = x[i] if i >= 0 else 0.0
        xj = x[j] if j >= 0 else 0.0
        if xi - xj - b > tol:
            return True
    return False


def _out(x: np.ndarray, m: int, has_n: bool, fixed_n: float | None) -> tuple[list[float], float]:
    values = [max(0.0, float(v)) for v in x[:m]]
    if has_n:
        n = max(1.0, float(x[m]), *values)
    else:
        assert fixed_n is not None
        n = max(1.0, fixed_n)
    return values, n


def itemsets_frame(closure: Closure, *, labels: dict[str, Any] | None = None) -> pd.DataFrame:
    """The closure as mlxtend's frequent-itemset frame: `support` (a fraction of n) and
    `itemsets` (frozensets), the n to pass as `num_itemsets` in attrs. Itemsets whose
    consistent support is 0 are left out (their supersets are 0 too: still downward closed).
    labels: item name -> what the frame shows (use_colnames=False: column positions)."""
    import pandas as pd

    rows = [
        (s / closure.n, frozenset(labels[i] for i in names) if labels else frozenset(names))
        for s, names in zip(closure.consistent, closure.names, strict=True)
        if s > 0
    ]
    frame = pd.DataFrame(rows, columns=["support", "itemsets"])
    if not rows:  # mlxtend's empty frame: float support, object itemsets (not two objects)
        frame = frame.astype({"support": "float64", "itemsets": "object"})
    frame.attrs["num_itemsets"] = max(1, round(closure.n))  # mlxtend takes an int
    return frame


def rules_frame(closure: Closure, request: RulesRequest) -> pd.DataFrame:
    """mlxtend's association_rules on the consistent supports (post-processing)."""
    import pandas as pd
    from mlxtend.frequent_patterns import association_rules

    frame = itemsets_frame(closure)
    if not (frame["itemsets"].map(len) > 1).any():
        return pd.DataFrame(columns=_RULE_COLUMNS)
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # conviction 1/0 = inf, as mlxtend says
        out = association_rules(
            frame,
            num_itemsets=max(1, round(closure.n)),
            metric=request.metric,
            min_threshold=request.min_threshold,
        )
    return out.sort_values([request.metric, "support"], ascending=False, kind="stable").reset_index(
        drop=True
    )


def _num(x: Any) -> float | None:
    v = float(x)
    return v if math.isfinite(v) else None  # JSON has no inf (conviction of a 1.0 rule)


def half_width(closure: Closure, alpha: float) -> float:
    """h with P(|noise| > h) <= alpha for one closure coordinate (§21.5): the discrete
    Laplace's exact two-sided tail 2 e^(-(h + 1)/b) / (1 + e^(-1/b)) (scale b), or the discrete
    Gaussian's sub-Gaussian tail 2 e^(-h^2 / (2 sigma^2)) (Canonne, Kamath, Steinke 2020)."""
    scale = float(closure.scale)
    if closure.noise == "gaussian":
        return math.ceil(math.sqrt(2 * scale * math.log(2 / alpha)))
    return max(0, math.ceil(scale * math.log(2 / (alpha * (1 + math.exp(-1 / scale))))) - 1)


def rule_intervals(closure: Closure, ai: int, ci: int, ui: int) -> dict[str, list[float | None]]:
    """Intervals that hold the exact confidence and lift of a rule with probability >= 95 %:
    each raw noisy support involved (and the noisy n under add/remove) within +-h of its exact
    value, h at level 5 % / (how many are involved), by a union bound; the rule's value is
    monotone in each, so the box's corners bound it (§21.5). Post-processing of released
    values; null where a lower end of a denominator reaches 0."""
    both, ante, cons = (float(closure.noisy[i]) for i in (ui, ai, ci))
    h2 = half_width(closure, (1 - INTERVAL_LEVEL) / 2)
    conf_lo = max(0.0, both - h2) / (ante + h2)
    conf_hi = (both + h2) / (ante - h2) if ante - h2 > 0 else None
    out: dict[str, list[float | None]] = {
        "confidence_interval": [
            round(conf_lo, 6),
            None if conf_hi is None else round(min(1.0, conf_hi), 6),
        ]
    }
    m = 3 if closure.noisy_n is None else 4
    h = half_width(closure, (1 - INTERVAL_LEVEL) / m)
    n_lo, n_hi = (
        (closure.n, closure.n)
        if closure.noisy_n is None
        else (closure.noisy_n - h, closure.noisy_n + h)
    )
    lift_lo = max(0.0, both - h) * max(0.0, n_lo) / ((ante + h) * (cons + h))
    lift_hi = (both + h) * n_hi / ((ante - h) * (cons - h)) if min(ante, cons) - h > 0 else None
    out["lift_interval"] = [round(lift_lo, 6), None if lift_hi is None else round(lift_hi, 6)]
    return out


def rules_fields(
    closure: Closure, rules: list[dict[str, Any]] | None, request: RulesRequest, order: Any
) -> dict[str, Any]:
    """The released fields of a rules result (schema dpfim.rules/1) from the rule records
    (rules_records, or a rules frame's to_dict("records")); None: the closure only
    (frequent_itemsets)."""
    by_names = {frozenset(names): i for i, names in enumerate(closure.names)}
    entries = []
    for row in [] if rules is None else rules:
        a, c = row["antecedents"], row["consequents"]
        ai, ci, ui = by_names[a], by_names[c], by_names[a | c]
        entry = {
            "antecedents": order(a),
            "consequents": order(c),
            "support": _num(row["support"]),
            "confidence": _num(row["confidence"]),
            "lift": _num(row["lift"]),
            "antecedent_support": _num(row["antecedent support"]),
            "consequent_support": _num(row["consequent support"]),
            "noisy_supports": {
                "antecedent": closure.noisy[ai],
                "consequent": closure.noisy[ci],
                "both": closure.noisy[ui],
            },
        }
        if request.metric not in entry:
            entry[request.metric] = _num(row[request.metric])
        entry.update(rule_intervals(closure, ai, ci, ui))
        entries.append(entry)
    itemsets = [
        {"items": names, "noisy_support": noisy, "consistent_support": round(cons, 6)}
        for names, noisy, cons in zip(closure.names, closure.noisy, closure.consistent, strict=True)
    ]
    fields: dict[str, Any] = {"closure": itemsets}
    if rules is not None:
        fields["rules"] = entries
    if closure.noisy_n is not None:
        fields["noisy_n"] = closure.noisy_n
    return fields


def rules_ledger(
    rel: Release,
    cost: Cost,
    eps_closure: Fraction,
    neighbours: str,
    closure: Closure,
    delta_closure: Fraction = Fraction(0),
) -> dict[str, Any]:
    """The whole run's ledger: the selection (as the release states it) + the closure's
    supports and n, once; consistency and rules are post-processing. Its total is the run's
    typed cost (Options.cost: the selection's rounds, then the closure), composed by basic
    composition (a rules run splits its budget by basic, dpfim.request.check_options)."""
    sel = rel.ledger  # its top-level eps and delta are the selection's whole cost
    total = basic([cost])
    sel_eps = total.eps - eps_closure
    what = "noisy supports of the M itemsets of the downward closure of the selection"
    if neighbours == "add-remove":
        what += " and a noisy n (one more coordinate: n is private under add/remove)"
    if closure.noise == "gaussian":
        noise_text = (
            f"each + N_Z(0, sigma^2), sigma^2 = Delta / (2 rho), rho = {closure.rho} "
            "(zCDP, Bun-Steinke conversion to (eps_c, delta_c))"
        )
        noise_fields: dict[str, Any] = {
            "noise": "discrete Gaussian",
            "rho": str(closure.rho),
            "sigma2": str(closure.scale),
        }
    else:
        noise_text = "each + DLap(Delta/eps_c)"
        noise_fields = {"noise": "discrete Laplace", "noise_scale": str(closure.scale)}
    steps = [
        {
            "step": "selection: the top-K itemsets through the release path",
            "releases": "the selected itemsets",
            "eps": amount(sel_eps),
            "delta": sel["delta"],
            "ledger": sel,
        },
        {
            "step": f"closure: {what}, {noise_text}; Delta = {closure.sensitivity} bounds the "
            f"vector's L1 sensitivity and its squared L2 sensitivity (M = {len(closure.keys)}, "
            "a function of the selection); noise: " + NOISE_NAMES[closure.noise] + " (chosen "
            "from K, the sizes, B, eps and delta only); docs/privacy.md §21.2, §21.4",
            "releases": "closure[].noisy_support" + (", noisy_n" if closure.noisy_n else ""),
            "eps": amount(eps_closure),
            "delta": amount(delta_closure),
            "sensitivity": closure.sensitivity,
            **noise_fields,
        },
        {
            "step": "consistency (least-squares projection) and mlxtend association_rules: "
            "post-processing of the released values",
            "releases": "closure[].consistent_support, rules",
            "eps": amount(Fraction(0)),
            "delta": amount(Fraction(0)),
        },
    ]
    return {
        "neighbours": neighbours,
        "eps": amount(total.eps),
        "delta": amount(total.delta),
        "composition": "basic sequential composition, exact rationals",
        "split": {
            "selection": str(1 - eps_closure / total.eps),
            "closure supports" + (" and n" if neighbours == "add-remove" else ""): str(
                eps_closure / total.eps
            ),
        },
        "steps": steps,
    }
