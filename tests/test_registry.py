"""The mechanism registry: one Mechanism per mechanism, read by api, cli, evaluate and the audit."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from cli_run import run

from dpfim import api
from dpfim.accounting import ApproxDP, BoundedRange, PureDP, approx
from dpfim.mechanisms import baselines, registry
from dpfim.mechanisms.base import Outcome, RankedCounts
from dpfim.mechanisms.thresholds import gap_split, paper_split, threshold
from dpfim.samplers.rng import RandomSource

EPS, DELTA = Fraction(1), Fraction(1, 10**6)


def test_the_registry_keeps_the_rules_api_had() -> None:
    assert registry.NAMES == (
        "lmm",
        "lmm-gap",
        "lmm-tight",
        "lmm-floor",
        "em",
        "noisy-max-laplace",
        "permute-and-flip",
        "stability",
        "choosing",
        "limited-domain",
        "levelwise",
    )
    assert api.FINITE_UNIVERSE == ("em", "noisy-max-laplace", "permute-and-flip")
    assert api.ADD_REMOVE_ONLY == (
        "lmm-gap",
        "lmm-tight",
        "choosing",
        "limited-domain",
    )
    assert api.PURE == ("em", "noisy-max-laplace", "permute-and-flip")
    assert [n for n, s in registry.REGISTRY.items() if s.needs_record_bound] == ["choosing"]


@pytest.mark.parametrize("name", registry.NAMES)
@pytest.mark.parametrize("eps,delta", [("1", "1e-6"), ("0.3", "1e-9"), ("1/7", "3/1000")])
def test_each_cost_is_exactly_the_declared_budget(name: str, eps: str, delta: str) -> None:
    spec = registry.get(name)
    neighbours = "replace" if "replace" in spec.neighbours else "add-remove"
    p = registry.Public(
        Fraction(eps), Fraction(delta), (2,), neighbours, max_record_items=4, universe_size=10
    )
    eps, delta = approx(spec.cost(p))
    assert eps == p.eps
    assert delta == (0 if spec.pure else p.delta)
    assert spec.spent(p) == (eps, delta)
    ledger = spec.ledger_of(p)
    assert ledger["eps"]["exact"] == str(p.eps)
    assert ledger["delta"]["exact"] == str(delta)


def test_each_cost_says_what_the_mechanism_really_is() -> None:
    """Issue 20 #1: em is bounded range; the noisy-max pair is pure only (not bounded range:
    privacy-loss ranges of 1.13 eps and 1.80 eps exist); the rest are one generic pair for the
    whole run (never the per-step rows)."""
    p = registry.Public(EPS, DELTA, (2,), "add-remove", max_record_items=4, universe_size=10)
    kinds = {n: type(registry.get(n).cost(p)) for n in registry.NAMES}
    assert kinds == {
        "lmm": ApproxDP,
        "lmm-gap": ApproxDP,
        "lmm-tight": ApproxDP,
        "lmm-floor": ApproxDP,
        "em": BoundedRange,
        "noisy-max-laplace": PureDP,
        "permute-and-flip": PureDP,
        "stability": ApproxDP,
        "choosing": ApproxDP,
        "limited-domain": ApproxDP,
        "levelwise": ApproxDP,  # its K rounds are one run-level pair (docs/privacy.md §23.3)
    }
    for n in registry.NAMES:
        assert registry.get(n).pure == (kinds[n] is not ApproxDP)


def test_each_none_hint_quotes_its_own_threshold() -> None:
    p = registry.Public(EPS, DELTA, (2,), "add-remove", candidates=10, max_record_items=6)
    hints = {n: registry.get(n).none_hint(p) for n in registry.NAMES}
    assert str(threshold(1, paper_split(EPS, DELTA))) in hints["lmm"]
    assert str(threshold(1, gap_split(EPS, DELTA))) in hints["lmm-gap"]
    assert str(baselines.stability_threshold(EPS, DELTA)) in hints["stability"]
    m = max(15, 1 << 25)  # k = C(6, 2) = 15; M = 2^25 rows listed at most (one size)
    assert str(baselines.choosing_threshold(EPS, DELTA, m)) in hints["choosing"]
    assert "k-bar = 10" in hints["limited-domain"]
    assert "about 17 records" in hints["limited-domain"]  # 1 + ln(1e7) = 17.1
    for name in ("stability", "choosing", "limited-domain", "em"):
        assert "LMM" not in hints[name] and "429" not in hints[name]
    assert len(set(hints.values())) >= 6  # the three pure ones share one sentence


@pytest.mark.parametrize(
    "mechanism,extra,own",
    [
        ("stability", [], "stability names the top itemset only when"),
        ("choosing", ["--neighbours", "add-remove", "--max-record-items", "2"], "choosing"),
        ("limited-domain", ["--neighbours", "add-remove"], "limited-domain names"),
        ("lmm-gap", ["--neighbours", "add-remove"], "lmm-gap certifies"),
    ],
)
def test_cli_none_hint_is_the_mechanisms_own(
    tmp_path: Path, mechanism: str, extra: list[str], own: str
) -> None:
    """Issue 10 #6: the hint used to name LMM and quote its 429-record margin for everyone."""
    data = tmp_path / "tie.csv"
    data.write_text("a,b\nc,d\n" * 5)  # a tie of two pairs at 5: every mechanism says none
    code, out, err = run(
        [
            "mine",
            str(data),
            "--eps",
            "1",
            "--delta",
            "1e-6",
            "--seed",
            "1",
            "--mechanism",
            mechanism,
            *extra,
        ]
    )
    assert code == 0, err
    assert json.loads(out)["itemset"] is None
    assert own in err and "429" not in err
    if mechanism != "lmm-gap":
        assert "LMM" not in err


def _always_first(counts: RankedCounts, p: registry.Public, rng: RandomSource) -> Outcome:
    counts.ensure(1)
    return Outcome(None, None, 0 if len(counts.counts) else None)


def test_adding_a_mechanism_is_one_registry_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = registry.Mechanism(
        "first",
        registry.BOTH,
        _always_first,
        lambda p: ApproxDP(p.eps, p.delta),
        lambda p: "never none",
        extra=lambda p: {"hello": 1},
    )
    monkeypatch.setitem(registry.REGISTRY, "first", spec)
    recs = [["a", "b"]] * 5 + [["c", "d"]] * 3
    result = api.mine(recs, eps="1", delta="1e-6", mechanism="first", rng=1)
    assert result["itemset"] == ["a", "b"] and result["params"]["hello"] == 1
    top = api.mine(recs, eps="1", delta="1e-6", mechanism="first", rng=1, top=2)
    assert [e["items"] for e in top["itemsets"]] == [["a", "b"], ["c", "d"]]
    assert top["ledger"]["eps"]["exact"] == "1"
