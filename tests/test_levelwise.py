"""levelwise's constants against the hand computation of docs/privacy.md §23.4, its refusals,
and what a run releases (the lattice itself: tests/test_levelwise_lattice.py; its privacy:
tests/audit/test_audit_levelwise.py)."""

from __future__ import annotations

import decimal
import json
import math
from fractions import Fraction
from pathlib import Path

import pytest
from cli_run import run

from dpfim.errors import ParameterError
from dpfim.mechanisms import levelwise
from dpfim.mechanisms.levelwise import WEIGHT_SCALE, calibrate, item_threshold

E6 = Fraction(1, 10**6)


def _rho(eps: float, delta: float) -> float:
    """Bun & Steinke's conversion solved for rho, by hand: (sqrt(L + eps) - sqrt(L))^2."""
    log = math.log(1 / delta)
    return (math.sqrt(log + eps) - math.sqrt(log)) ** 2


def test_open_universe_constants_match_the_hand_computation() -> None:
    c = calibrate(Fraction(1), E6, 50, "add-remove", False, 64)
    assert c.delta_z == Fraction(9, 10**7)
    assert c.delta1 == Fraction(268941, 10**13)  # 1e-7 / (1 + e) = 2.689414e-8, six digits down
    rho = _rho(1.0, 9e-7)
    assert rho == pytest.approx(0.0173412, abs=1e-7)
    eps0 = math.sqrt(8 * 0.75 * rho / 50)
    assert float(c.eps0) == pytest.approx(eps0, rel=1e-5) and float(c.eps0) <= eps0
    assert c.eps0 == Fraction("0.0456173") and c.eta == c.eps0
    sigma2 = WEIGHT_SCALE**2 / (2 * 0.25 * rho)
    assert math.sqrt(float(c.sigma2 or 0)) / WEIGHT_SCALE == pytest.approx(10.739, abs=1e-3)
    by_hand = max(
        math.isqrt(WEIGHT_SCALE**2 // n)
        - 1
        + math.ceil(math.sqrt(2 * sigma2 * math.log(n / 2.68941e-8)))
        for n in range(1, 65)
    )
    assert c.threshold is not None and abs(c.threshold - by_hand) <= 2
    assert c.threshold == 4_633_057  # the figure docs/privacy.md §23.4 states


def test_declared_vocabulary_spends_all_of_rho_on_the_rounds() -> None:
    c = calibrate(Fraction(1), E6, 50, "add-remove", True, 64)
    assert c.delta_z == E6 and c.delta1 == 0 and c.sigma2 is None and c.threshold is None
    assert c.eps0 == Fraction("0.0528679")
    assert float(c.eps0) <= math.sqrt(8 * _rho(1.0, 1e-6) / 50)


def test_replace_halves_the_exponent_and_raises_the_item_threshold() -> None:
    add = calibrate(Fraction(1), E6, 50, "add-remove", False, 64)
    rep = calibrate(Fraction(1), E6, 50, "replace", False, 64)
    assert rep.eps0 == add.eps0 and rep.eta == add.eps0 / 2
    assert rep.sigma2 == 2 * (add.sigma2 or 0)  # L2 sensitivity sqrt(2) M
    assert rep.threshold is not None and add.threshold is not None
    assert rep.threshold > add.threshold


@pytest.mark.parametrize(
    ("eps", "delta", "k", "neighbours", "declared"),
    [
        (Fraction(1, 10), E6, 50, "add-remove", False),
        (Fraction(1, 2), Fraction(1, 10**9), 100, "replace", False),
        (Fraction(2), E6, 500, "add-remove", False),
        (Fraction(1, 2), E6, 1, "replace", True),
    ],
)
def test_the_run_spends_at_most_what_it_is_charged(
    eps: Fraction, delta: Fraction, k: int, neighbours: str, declared: bool
) -> None:
    c = calibrate(eps, delta, k, neighbours, declared, 64)
    assert c.eps <= eps and c.delta <= delta
    assert c.rho >= k * c.eps0**2 / 8


def test_the_item_threshold_meets_delta1_for_every_record_length() -> None:
    """n exp(-(T + 1 - w(n))^2 / (2 sigma^2)) <= delta1 at 50 digits, n = 1..B (§23.2)."""
    sigma2, delta1, cap = Fraction(10**12, 7), Fraction(3, 10**9), 40
    t = item_threshold(sigma2, delta1, cap)
    ctx = decimal.Context(prec=50)
    worst = decimal.Decimal(0)
    for n in range(1, cap + 1):
        w = math.isqrt(WEIGHT_SCALE**2 // n)
        m = decimal.Decimal(t + 1 - w)
        s2 = decimal.Decimal(sigma2.numerator) / decimal.Decimal(sigma2.denominator)
        term = ctx.multiply(n, ctx.exp(-(m * m) / (2 * s2)))
        worst = max(worst, term)
    d1 = decimal.Decimal(delta1.numerator) / decimal.Decimal(delta1.denominator)
    assert worst <= d1
    assert worst > d1 / 2  # and T is not far above what it needs (within one unit of slack)


def test_the_open_universe_needs_the_record_cap() -> None:
    with pytest.raises(ParameterError, match="record-length cap"):
        calibrate(Fraction(1), E6, 10, "add-remove", False, None)


def test_sizes_must_start_at_one() -> None:
    from dpfim.mechanisms.base import Public

    with pytest.raises(ParameterError, match="sizes 1-3"):
        levelwise.check(Public(Fraction(1), E6, (2, 3)))
    levelwise.check(Public(Fraction(1), E6, (1, 2, 3)))


def _data(tmp_path: Path) -> Path:
    lines = ["a b c"] * 60 + ["a b"] * 40 + ["c d"] * 30 + ["e"] * 5 + ["a c e f"] * 10
    path = tmp_path / "baskets.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_mine_top_k_across_sizes_releases_the_lattice_in_order(tmp_path: Path) -> None:
    args = ["mine", str(_data(tmp_path)), "--eps", "4", "--delta", "1e-6", "--top", "6"]
    args += ["--sizes", "1-3", "--mechanism", "levelwise", "--seed", "5", "--supports"]
    code, out, err = run(args)
    assert code == 0, err
    res = json.loads(out)
    released = [tuple(x["items"]) for x in res["itemsets"]]
    assert 1 <= len(released) <= 6 and len(set(released)) == len(released)
    for j, items in enumerate(released):  # every subset of a release was released before it
        for drop in range(len(items) if len(items) > 1 else 0):
            assert items[:drop] + items[drop + 1 :] in released[:j]
    assert all("noisy_support" in x for x in res["itemsets"])
    book = res["ledger"]
    assert book["levelwise"]["proven_eps"] <= 4.0  # the whole eps: supports are inside it
    assert Fraction(book["levelwise"]["support_rho"]) > 0
    assert book["levelwise"]["item_threshold"] > 0
    assert res["params"]["mechanism"] == "levelwise" and res["private"] is False
    again = run(args)[1]
    assert json.loads(again)["itemsets"] == res["itemsets"]  # seeded: reproducible


def test_mine_refuses_levelwise_without_sizes_from_one(tmp_path: Path) -> None:
    args = ["mine", str(_data(tmp_path)), "--eps", "1", "--delta", "1e-6", "--top", "3"]
    code, _, err = run([*args, "--sizes", "2-3", "--mechanism", "levelwise"])
    assert code == 2 and "--sizes 1-3" in err and "Traceback" not in err


def test_supports_take_their_share_of_rho_and_the_rest_is_split_as_before() -> None:
    whole = calibrate(Fraction(1), E6, 50, "add-remove", False, 64)
    part = calibrate(Fraction(1), E6, 50, "add-remove", False, 64, Fraction(1, 4))
    rho = _rho(1.0, 9e-7)
    assert float(part.rho_supports) == pytest.approx(rho / 4, rel=1e-6)
    assert float(part.eps0) == pytest.approx(float(whole.eps0) * math.sqrt(3 / 4), rel=1e-5)
    assert part.eps <= 1 and part.delta <= E6
    assert part.rho >= part.rho_supports + 50 * part.eps0**2 / 8


def _exact(recs: list[list[str]], sizes: tuple[int, ...]) -> dict[tuple[str, ...], int]:
    import itertools

    exact: dict[tuple[str, ...], int] = {}
    for r in recs:
        for size in sizes:
            for sub in itertools.combinations(sorted(r), size):
                exact[sub] = exact.get(sub, 0) + 1
    return exact


def test_levelwise_noisy_supports_are_centred_on_the_exact_ones() -> None:
    """Seeded: 40 runs of --top 3 --sizes 1-2 --supports at eps = 1 (replace, open universe);
    each support's error divided by its stated sd: the 120 standardised errors' mean is within
    4 standard errors of 0 (false alarm about 6e-5 for a correct sampler) and their spread
    within 25 % of 1 (about 4 standard errors of a sample standard deviation of 120)."""
    from dpfim import api

    recs = [["a", "b", "c"]] * 600 + [["a", "b"]] * 400 + [["c", "d"]] * 300 + [["e"]] * 50
    exact = _exact(recs, (1, 2))
    z = []
    for seed in range(40):
        res = api.mine(recs, eps="1", delta="1e-6", top=3, sizes="1-2", supports=True, rng=seed)
        assert res["params"]["mechanism"] == "levelwise"
        z += [
            (e["noisy_support"] - exact[tuple(e["items"])]) / e["support_sd"]
            for e in res["itemsets"]
        ]
    mean = sum(z) / len(z)
    sd = math.sqrt(sum((x - mean) ** 2 for x in z) / (len(z) - 1))
    assert len(z) == 120
    assert abs(mean) < 4 * sd / math.sqrt(len(z))
    assert 0.75 < sd < 1.25


def test_levelwise_supports_come_with_their_sd_and_a_consistent_projection() -> None:
    """The released set is downward closed, so the projection can order every release against
    its subsets: consistent supports are >= 0, <= n (public under replace; the noisy n under
    add/remove), and a subset's is at least each superset's; support_sd is the parity plan's
    (public values: the released keys and rho_s), the interval noisy +- 1.96 sd."""
    from dpfim import api
    from dpfim.mechanisms import parity

    recs = [["a", "b", "c"]] * 300 + [["a", "b"]] * 200 + [["c", "d"]] * 150 + [["e"]] * 25
    for seed, relation in [(s, r) for s in range(4) for r in ("replace", "add-remove")]:
        res = api.mine(
            recs,
            eps="0.3",
            delta="1e-6",
            top=8,
            sizes="1-3",
            supports=True,
            rng=seed,
            neighbours=relation,
        )
        entries = res["itemsets"]
        cal = calibrate(Fraction(3, 10), E6, 8, relation, False, 64, Fraction(1, 4))
        ids = {name: j for j, name in enumerate(sorted({i for e in entries for i in e["items"]}))}
        keys = [tuple(sorted(ids[i] for i in e["items"])) for e in entries]
        plan = parity.plan(keys, cal.rho_supports, relation == "replace")
        bound = res["n"] if relation == "replace" else res["noisy_n"]
        assert ("noisy_n" in res) is (relation == "add-remove") and ("n" in res) is not (
            relation == "add-remove"
        )
        got = {tuple(e["items"]): e["consistent_support"] for e in entries}
        for e, var in zip(entries, plan.variances, strict=True):
            assert e["support_sd"] == pytest.approx(math.sqrt(var), rel=1e-6)
            lo, hi = e["support_interval"]
            assert hi == pytest.approx(e["noisy_support"] + 1.959964 * e["support_sd"], abs=2e-3)
            assert lo == pytest.approx(
                max(0.0, e["noisy_support"] - 1.959964 * e["support_sd"]), abs=2e-3
            )
            assert 0 <= e["consistent_support"] <= bound + 1e-6
            items = tuple(e["items"])
            for drop in range(len(items) if len(items) > 1 else 0):
                sub = items[:drop] + items[drop + 1 :]
                assert got[sub] >= e["consistent_support"] - 1e-6


def test_the_open_universe_without_a_cap_is_refused_before_reading() -> None:
    from dpfim.request import check_options

    with pytest.raises(ParameterError, match="record-length cap"):
        check_options(
            size=None,
            sizes="1-2",
            eps="1",
            delta="1e-6",
            top=5,
            mechanism="levelwise",
            max_record_items="none",
        )
    # declared vocabulary: no cap needed; and the default falls back to lmm-floor without one
    check_options(
        size=None,
        sizes="1-2",
        eps="1",
        delta="1e-6",
        top=5,
        mechanism="levelwise",
        max_record_items="none",
        universe_given=True,
    )
    opts = check_options(
        size=None, sizes="1-2", eps="1", delta="1e-6", top=5, max_record_items="none"
    )
    assert opts.mechanism == "lmm-floor"
