"""Margin needed to certify a rank l, for the options of docs/lmm-tight-design.md.

    python benchmarks/tight_margins.py [--optimise] [--plot docs/evaluation/margins.png]

"Margin needed" is the threshold on c(1) - c(l+1) above which the search passes at l with
probability >= 1/2 (the noise is symmetric): tau(l) for lmm and lmm-gap (records), T_l + 1 rounded
to the threshold T_l for the integer-threshold options. Grid options certify only l = 1, 2, 4, ...:
at l they need the margin of the smallest grid rank >= l (over c(l'+1)). All tails are the
discrete-Laplace tails dpfim uses. Public parameters only; no data is read.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import math
from collections.abc import Callable
from fractions import Fraction

from dpfim.mechanisms import lmm_floor as lf
from dpfim.mechanisms import lmm_tight as lt
from dpfim.mechanisms.thresholds import gap_split, paper_split, tau
from dpfim.samplers import interval as iv

EPS, DELTA = Fraction(1), Fraction(1, 10**6)
ELLS = (1, 10, 100)
PREC = 64  # certified tails at a lower precision: only makes s (slightly) larger
_PREC = PREC

# --- exact discrete-Laplace tails (certified), for the certification options O4, O5 -------------


def _q(rate: Fraction, prec: int) -> iv.Interval:
    """q = exp(-rate): DLap(1/rate) has P(X = x) proportional to q^|x|."""
    return iv.exp(iv.exact(-rate, prec), prec)


def _pow(x: iv.Interval, k: int, prec: int) -> iv.Interval:
    return iv.exp(iv.mul(iv.exact(k, prec), iv.log(x, prec), prec), prec)


def tail_offset(eps1: Fraction, s: int, prec: int = _PREC) -> iv.Interval:
    """P(-G >= s) = q^s/(1 + q) for G ~ DLap(1/eps1) and an integer s >= 1 (certified)."""
    if s < 1:
        raise ValueError("s must be >= 1")
    q = _q(eps1, prec)
    return iv.div(_pow(q, s, prec), iv.add(iv.exact(1, prec), q, prec), prec)


def tail_difference(eps1: Fraction, eps2: Fraction, s: int, prec: int = _PREC) -> iv.Interval:
    """P(nu - G >= s) for independent G ~ DLap(1/eps1), nu ~ DLap(1/eps2), integer s >= 1.

    With A = -G (parameter a = e^-eps1), B = nu (b = e^-eps2), k_a = (1-a)/(1+a):
    sum over A <= s-1 of P(A) P(B >= s-A) + sum over A >= s of P(A) P(B >= s-A)
      = k_a/(1+b) (b^s ab/(1-ab) + b(b^s - a^s)/(b - a))  +  a^s/(1+a) (1 - ab^2)/((1+b)(1-ab))
    (docs/privacy.md §18.3; b(b^s - a^s)/(b - a) is s b^s when a = b).
    """
    if s < 1:
        raise ValueError("s must be >= 1")
    p = prec
    one = iv.exact(1, p)
    a, b = _q(eps1, p), _q(eps2, p)
    a_s, b_s = _pow(a, s, p), _pow(b, s, p)
    ab = iv.mul(a, b, p)
    one_ab = iv.sub(one, ab, p)
    one_a, one_b = iv.add(one, a, p), iv.add(one, b, p)
    k_a = iv.div(iv.sub(one, a, p), one_a, p)
    if eps1 == eps2:
        geo = iv.mul(iv.exact(s, p), b_s, p)
    else:
        geo = iv.div(iv.mul(b, iv.sub(b_s, a_s, p), p), iv.sub(b, a, p), p)
    below = iv.mul(iv.div(k_a, one_b, p), iv.add(iv.div(iv.mul(b_s, ab, p), one_ab, p), geo, p), p)
    above = iv.mul(
        iv.div(a_s, one_a, p),
        iv.div(iv.sub(one, iv.mul(ab, b, p), p), iv.mul(one_b, one_ab, p), p),
        p,
    )
    return iv.add(below, above, p)


def _smallest_s(tail: functools.partial[iv.Interval], budget: Fraction) -> int:
    """The smallest integer s >= 1 whose certified tail is <= budget (tail decreasing in s).

    Only an s whose upper bound is certainly <= budget is ever returned, so the result is valid
    even if a comparison were undecided (that would only make s larger)."""
    limit = iv.exact(budget, _PREC)

    def ok(s: int) -> bool:
        return iv.certainly_at_most(tail(s=s), limit)

    hi = 1
    while not ok(hi):
        hi *= 2
    lo = hi // 2  # ok(lo) is False, or lo = 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if mid >= 1 and ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _dlap_t(rate: float, p: float) -> float:
    """Real t with P(X >= t) <= p for X ~ DLap(1/rate): e^(-rate t)/(1 + q) = p."""
    q = math.exp(-rate)
    return math.log(1 / ((1 + q) * p)) / rate


def floor_margin(eps: Fraction, delta: Fraction) -> float:
    """Group-privacy floor: a margin m lets D move to a neighbour with another top in m steps."""
    e = float(eps)
    return math.log((math.exp(e) - 1) / float(delta)) / e


def stability_margin(eps: Fraction, delta: Fraction) -> float:
    """dpfim's stability (A_dist) threshold, l = 1 only."""
    return 1 + math.ceil(float(4 / eps) * math.log(1 / float(delta)))


# --- the options ---------------------------------------------------------------------------------
# Each takes the shares (x1, x2, y0, y1) of (eps, delta) and returns l -> margin.
# x1: offset / check share of eps; x2: per-rank / RNM share; selection gets 1 - x1 - x2.
# y0, y1: delta shares (option-specific meaning, see the docstrings); beta gets the rest.


def o1_split_only(x1: float, x2: float, y0: float, y1: float) -> Callable[[int], float]:
    """lmm-gap's mechanism (general SVT, the paper's selection lemma), split optimised:
    G ~ DLap(1/e1), Z ~ DLap(2/e2), delta_G = y0 d, delta_Z = y1 d (weights 1/(l(l+1))),
    beta e^(e1+e2) = rest."""
    e = float(EPS)
    e1, e2, aa = x1 * e, x2 * e, (1 - x1 - x2) * e
    d = float(DELTA)
    beta = (1 - y0 - y1) * d * math.exp(-(e1 + e2))

    def m(ell: int) -> float:
        t_g = _dlap_t(e1, y0 * d)
        t_z = _dlap_t(e2 / 2, y1 * d / (ell * (ell + 1)))
        return t_g + t_z + 2 * (1 + math.log(ell / beta) / aa)

    return m


def _gamma_ar(ell: int, aa: float, beta: float) -> float:
    """Add/remove selection lemma: l = 1 needs 2; l >= 2 needs 1 + ln((l-1)/beta)/alpha_a."""
    return 2.0 if ell == 1 else max(2.0, 1 + math.log((ell - 1) / beta) / aa)


def o2_selection(x1: float, x2: float, y0: float, y1: float) -> Callable[[int], float]:
    """O1 + the add/remove selection lemma (monotone EM, drop-outs within c(l+1) + 1, leak beta
    not multiplied by e^(alpha_s))."""
    e, d = float(EPS), float(DELTA)
    e1, e2, aa = x1 * e, x2 * e, (1 - x1 - x2) * e
    beta = (1 - y0 - y1) * d

    def m(ell: int) -> float:
        t_g = _dlap_t(e1, y0 * d)
        t_z = _dlap_t(e2 / 2, y1 * d / (ell * (ell + 1)))
        return t_g + t_z + _gamma_ar(ell, aa, beta)

    return m


def o3_monotone(x1: float, x2: float, y0: float, y1: float) -> Callable[[int], float]:
    """O2 + the one-sided SVT analysis under add/remove: per-rank noise DLap(1/e2)."""
    e, d = float(EPS), float(DELTA)
    e1, e2, aa = x1 * e, x2 * e, (1 - x1 - x2) * e
    beta = (1 - y0 - y1) * d

    def m(ell: int) -> float:
        t_g = _dlap_t(e1, y0 * d)
        t_z = _dlap_t(e2, y1 * d / (ell * (ell + 1)))
        return t_g + t_z + _gamma_ar(ell, aa, beta)

    return m


def o4_joint(x1: float, x2: float, y0: float, y1: float) -> Callable[[int], float]:
    """O3 + the exact tail of nu_l - G (one union term per rank, (y0 + y1) d weighted
    1/(l(l+1)) over every rank)."""
    e1, e2 = Fraction(x1).limit_denominator(100) * EPS, Fraction(x2).limit_denominator(100) * EPS
    aa = float(EPS - e1 - e2)
    ds = Fraction(y0 + y1).limit_denominator(1000) * DELTA
    beta = float(DELTA - ds)

    def m(ell: int) -> float:
        tail = functools.partial(tail_difference, e1, e2, prec=PREC)
        s = _smallest_s(tail, ds / (ell * (ell + 1)))
        return s + _gamma_ar(ell, aa, beta) - 2

    return m


def o5_certified_grid(x1: float, x2: float, y0: float, y1: float) -> Callable[[int], float]:
    """O4 on the grid 1, 2, 4, ... with no per-rank noise at l = 1 (whose selection is then free:
    a certified gap >= 2 fixes the top on both neighbours). delta_0 = y0 d at l = 1,
    y1 d / (j(j+1)) at l = 2^j, beta = rest."""
    e1 = Fraction(x1).limit_denominator(100) * EPS
    e2 = Fraction(x2).limit_denominator(100) * EPS
    aa = float(EPS - e1 - e2)
    d0 = Fraction(y0).limit_denominator(100) * DELTA
    dg = Fraction(y1).limit_denominator(100) * DELTA
    beta = float(DELTA - d0 - dg)

    @functools.cache
    def at(j: int) -> float:
        if j == 0:
            return _smallest_s(functools.partial(tail_offset, e1, prec=PREC), d0)
        tail = functools.partial(tail_difference, e1, e2, prec=PREC)
        return _smallest_s(tail, dg / (j * (j + 1))) + math.ceil(_gamma_ar(1 << j, aa, beta)) - 2

    return lambda ell: at((ell - 1).bit_length())


def o7_chosen(
    kappa: tuple[int, ...] = lt.KAPPA, shares: tuple[Fraction, Fraction] | None = None
) -> Callable[[int], float]:
    """lmm-tight: search thresholds T_j (docs/privacy.md §18.1); the selection's "none" absorbs
    the top-l instability, so no certification delta is spent. shares: (eps1, eps2) as shares
    of eps (default: the shipped rule at eps = 1)."""
    sp = lt.default_split(EPS, DELTA) if shares is None else lt.make_split(EPS, DELTA, *shares)
    return lambda ell: lt.threshold((ell - 1).bit_length(), sp, kappa)


def o8_floor(
    eps: Fraction = EPS, delta: Fraction = DELTA, default_rank: int = 10
) -> Callable[[int], float]:
    """lmm-floor (docs/privacy.md §22): up to the default rank, limited-domain's margin over
    c(l_d + 1) with a_d = eps - eps1 (none weighs 1/9 of the top: 1 + (ln(l_d/delta) + ln 9)/a_d);
    above it, the smallest tested rank rho >= l passes with probability >= 1/2 from
    c(1) - c(rho+1) = T(rho) + m + 1, m the median of G - nu (G one-sided geometric, nu DLap),
    computed from the two laws (truncated at 1e-15)."""
    sp = lf.make_split(eps, delta)
    q1, q2 = math.exp(-float(sp.eps1)), math.exp(-float(sp.eps2))
    n1 = math.ceil(math.log(1e-15) / math.log(q1))
    n2 = math.ceil(math.log(1e-15) / math.log(q2))
    pg = [(1 - q1) * q1**g for g in range(n1 + 1)]  # g = 0..n1
    pn = [(1 - q2) / (1 + q2) * q2 ** abs(v) for v in range(-n2, n2 + 1)]  # v = -n2..n2
    import numpy as np

    law = np.convolve(pg, pn[::-1])  # G - nu, from -n2 to n1 + n2
    median = int(np.searchsorted(np.cumsum(law), 0.5)) - n2
    base = 1 + (math.log(default_rank / float(delta)) + math.log(9)) / float(sp.alpha_default)
    tested = lf.ranks(default_rank, lf.TOP_RANK)

    def m(ell: int) -> float:
        if ell <= default_rank:
            return base
        rho = next((r for r in tested if r >= ell), None)
        return math.inf if rho is None else lf.threshold(rho, sp) + median + 1

    return m


# The first shipped version (docs/lmm-tight-design.md): eps/10 each, kappa 3 at rank 1, 2 deeper.
FIRST = {"kappa": (3, 2), "shares": (Fraction(1, 10), Fraction(1, 10))}


def o6_rnm_ptr(x1: float, x2: float, y0: float, y1: float) -> Callable[[int], float]:
    """Report-noisy-max over penalised grid gaps (share x2) then one propose-test-release check
    F + DLap(1/e_b) > T (share x1), failure y0 d; beta = rest. The PTR threshold only: the RNM
    step must also pick l, which needs F_l - gamma_l to lead the other grid ranks (not counted)."""
    e, d = float(EPS), float(DELTA)
    eb, aa = x1 * e, (1 - x1 - x2) * e
    beta = (1 - y0) * d
    s = math.ceil(_dlap_t(eb, y0 * d))

    def m(ell: int) -> float:
        j = (ell - 1).bit_length()
        return s + _gamma_ar(1 << j, aa, beta) - 2

    return m


OPTIONS: dict[str, Callable[[float, float, float, float], Callable[[int], float]]] = {
    "O1 lmm-gap, optimised split": o1_split_only,
    "O2 + add/remove selection lemma": o2_selection,
    "O3 + one-sided SVT (nu ~ DLap(1/e2))": o3_monotone,
    "O4 + exact tail of nu - G": o4_joint,
    "O5 + grid 1,2,4,..., no rank-1 noise": o5_certified_grid,
    "O6 RNM over grid + PTR check (PTR part)": o6_rnm_ptr,
}


def objective(m: Callable[[int], float]) -> float:
    return sum(m(ell) for ell in ELLS)


def optimise(
    make: Callable[[float, float, float, float], Callable[[int], float]], coarse: bool = False
) -> tuple[float, tuple[float, float, float, float]]:
    """Grid search over the shares (data-independent: public eps and delta only)."""
    step = 10 if coarse else 20
    xs = [k / step for k in range(1, step)]
    ys = (0.125, 0.25, 1 / 3, 0.5, 0.625)
    best: tuple[float, tuple[float, float, float, float]] = (math.inf, (0, 0, 0, 0))
    for x1, x2, y0, y1 in itertools.product(xs, xs, ys, ys):
        if x1 + x2 >= 1 or y0 + y1 >= 0.95:
            continue
        val = objective(make(x1, x2, y0, y1))
        if val < best[0]:
            best = (val, (x1, x2, y0, y1))
    return best


# The shares found by --optimise (grid search minimising the sum of the margins at l = 1, 10, 100
# at eps = 1, delta = 1e-6), so that a plain run reproduces docs/lmm-tight-design.md's table.
DEFAULTS = {
    "O1 lmm-gap, optimised split": (0.25, 0.4, 0.25, 1 / 3),
    "O2 + add/remove selection lemma": (0.3, 0.45, 0.25, 0.5),
    "O3 + one-sided SVT (nu ~ DLap(1/e2))": (0.3, 0.4, 1 / 3, 1 / 3),
    "O4 + exact tail of nu - G": (0.3, 0.3, 0.125, 0.625),
    "O5 + grid 1,2,4,..., no rank-1 noise": (0.3, 0.3, 0.25, 1 / 3),
    "O6 RNM over grid + PTR check (PTR part)": (0.5, 0.05, 0.625, 0.125),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--optimise", action="store_true", help="search the shares per option")
    ap.add_argument("--plot", help="write the margin-against-l curve (PNG)")
    args = ap.parse_args()
    print(f"eps = {EPS}, delta = {float(DELTA):g}; margin needed at l = {ELLS}")
    print(f"floor ln((e^eps-1)/delta)/eps = {floor_margin(EPS, DELTA):.1f}")
    print(f"stability (dpfim, l = 1 only) = {stability_margin(EPS, DELTA):.0f}")
    ps, gs = paper_split(EPS, DELTA), gap_split(EPS, DELTA)
    print("| option | shares (x1, x2, y0, y1) | " + " | ".join(f"l = {e}" for e in ELLS) + " |")
    print("|---|---|" + "---|" * len(ELLS))
    print("| lmm (paper) | thirds | " + " | ".join(f"{tau(e, ps):.1f}" for e in ELLS) + " |")
    print("| lmm-gap | 2/3, 1/3 | " + " | ".join(f"{tau(e, gs):.1f}" for e in ELLS) + " |")
    for name, make in OPTIONS.items():
        shares = DEFAULTS[name]
        if args.optimise:
            _, shares = optimise(make, coarse=name.startswith(("O4", "O5")))
        m = make(*shares)
        sh = ", ".join(f"{x:.3g}" for x in shares)
        print(f"| {name} | {sh} | " + " | ".join(f"{m(e):.1f}" for e in ELLS) + " |")
    sp = lt.default_split(EPS, DELTA)
    shipped = f"{float(sp.eps1 / EPS):g}, {float(sp.eps2 / EPS):g}, -, -"
    for label, m, sh in (
        ("O7 first version, kappa = (3; 2)", o7_chosen(**FIRST), "0.1, 0.1, -, -"),
        ("O7 kappa = (0; 0)", o7_chosen((0, 0)), shipped),
        (f"O7 lmm-tight (shipped), kappa = {lt.KAPPA}", o7_chosen(), shipped),
    ):
        print(f"| {label} | {sh} | " + " | ".join(f"{m(e):.0f}" for e in ELLS) + " |")
    m = o7_chosen()
    print(
        "lmm-tight at l = 1, 2, 4, ..., 2^12: " + ", ".join(f"{m(1 << j):.0f}" for j in range(13))
    )
    ld = 1 + (math.log(10 / float(DELTA)) + math.log(9)) / float(EPS)
    print(f"| limited-domain, k = 10 (over c(11), l = 10 only) | - | - | {ld:.1f} | - |")
    fl = o8_floor()
    fs = lf.make_split(EPS, DELTA)
    print(
        f"| lmm-floor (shipped; l <= 10: over c(11)) | {fs.eps1}, {fs.eps2} | "
        + " | ".join(f"{fl(e):.0f}" for e in ELLS)
        + " |"
    )
    print(
        "lmm-floor at l = 10, 16, 32, ..., 4096: "
        + ", ".join(f"{fl(e):.0f}" for e in [10, *lf.ranks(10, 4096)])
    )
    if args.plot:
        _plot(args.plot)


def _plot(path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ells = sorted({round(10 ** (k / 8)) for k in range(0, 8 * 6 + 1)})
    ps, gs = paper_split(EPS, DELTA), gap_split(EPS, DELTA)
    tight = o7_chosen()
    first = o7_chosen(**FIRST)
    certified = o5_certified_grid(*DEFAULTS["O5 + grid 1,2,4,..., no rank-1 noise"])
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    ax.plot(ells, [tau(e, ps) for e in ells], label="lmm (paper split)")
    ax.plot(ells, [tau(e, gs) for e in ells], label="lmm-gap")
    ax.step(ells, [tight(e) for e in ells], where="post", label="lmm-tight (grid 1, 2, 4, ...)")
    ax.step(ells, [first(e) for e in ells], where="post", ls="--", label="lmm-tight, first version")
    ax.step(ells, [certified(e) for e in ells], where="post", ls=":", label="O5 certified grid")
    floor = o8_floor()
    fe = [e for e in ells if e <= lf.TOP_RANK]
    ax.step(fe, [floor(e) for e in fe], where="post", lw=2, label="lmm-floor (l <= 10: over c(11))")
    ld = 1 + (math.log(10 / float(DELTA)) + math.log(9)) / float(EPS)
    ax.plot([10], [ld], "^", label="limited-domain k = 10 (over c(11))")
    ax.plot([1], [stability_margin(EPS, DELTA)], "s", mfc="none", label="stability (l = 1 only)")
    ax.axhline(floor_margin(EPS, DELTA), ls="--", c="grey", label="floor ln((e^eps-1)/delta)/eps")
    ax.set_xscale("log")
    ax.set_xlabel("certified rank l")
    ax.set_ylabel("margin c(1) - c(l+1) needed (records)")
    ax.set_title("Margin needed against l, eps = 1, delta = 1e-6 (add/remove)", fontsize=10)
    ax.set_ylim(0, None)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
