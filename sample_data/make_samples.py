"""Generate the synthetic sample data sets in sample_data/ (deterministic: fixed seed).

    python sample_data/make_samples.py

Writes groceries_sample.csv (basket), groceries_sample_long.csv (customer_id,item) and
groceries_sample.jsonl: the same 20,000 synthetic baskets. The data are synthetic and public,
so printing their exact top supports here is fine; dpfim itself never releases them.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
from collections import Counter
from pathlib import Path

import numpy as np

SEED = 20261122
N_BASKETS = 20_000
HERE = Path(__file__).resolve().parent

ITEMS = [
    "whole milk",
    "other vegetables",
    "rolls/buns",
    "soda",
    "yogurt",
    "bottled water",
    "root vegetables",
    "tropical fruit",
    "shopping bags",
    "sausage",
    "pastry",
    "citrus fruit",
    "bottled beer",
    "newspapers",
    "canned beer",
    "pip fruit",
    "fruit/vegetable juice",
    "whipped/sour cream",
    "brown bread",
    "domestic eggs",
    "frankfurter",
    "margarine",
    "coffee",
    "pork",
    "butter",
    "curd",
    "beef",
    "napkins",
    "chocolate",
    "frozen vegetables",
    "chicken",
    "white bread",
    "cream cheese",
    "waffles",
    "salty snack",
    "long life bakery product",
    "dessert",
    "sugar",
    "UHT-milk",
    "berries",
    "hamburger meat",
    "hygiene articles",
    "onions",
    "specialty chocolate",
    "candy",
    "misc. beverages",
    "frozen meals",
    "oil",
    "butter milk",
    "specialty bar",
    "ham",
    "meat",
    "ice cream",
    "sliced cheese",
    "hard cheese",
    "cat food",
    "grapes",
    "chewing gum",
    "detergent",
    "red/blush wine",
    "white wine",
    "pickled vegetables",
    "baking powder",
    "semi-finished bread",
    "dishes",
    "flour",
    "soft cheese",
    "processed cheese",
    "herbs",
    "canned fish",
    "pasta",
    "seasonal products",
    "pot plants",
    "packaged fruit/vegetables",
    "cereals",
    "dog food",
    "liquor",
    "frozen fish",
    "spread cheese",
    "condensed milk",
    "salt",
    "mustard",
    "rice",
    "jam",
    "vinegar",
    "canned vegetables",
    "instant coffee",
    "cheese, sliced",
    "flower (seeds)",
    "soups",
    "ketchup",
    "sweet spreads",
    "tea",
    "honey",
    "mayonnaise",
    "light bulbs",
    "nuts/prunes",
    "spices",
    "cling film/bags",
    "zwieback",
    "finished products",
    "popcorn",
    "cake bar",
    "kitchen towels",
    "rum",
    "female sanitary products",
    "turkey",
    "dish cleaner",
    "sparkling wine",
    "cocoa drinks",
    "house keeping products",
    "snack products",
    "potato products",
    "frozen dessert",
    "soap",
    "organic sausage",
    "cookware",
    "bags",
    "baby food",
    "decalcifier",
]


def baskets(rng: np.random.Generator) -> list[list[str]]:
    """Skewed basket sizes, Zipf-like item popularity, and two planted buying habits."""
    weights = 1.0 / np.arange(1, len(ITEMS) + 1) ** 0.55
    weights /= weights.sum()
    out = []
    for _ in range(N_BASKETS):
        size = min(30, 1 + rng.poisson(2.6) + (rng.random() < 0.1) * rng.poisson(6))
        chosen = set(rng.choice(len(ITEMS), size=size, replace=False, p=weights).tolist())
        if rng.random() < 0.09:  # breakfast habit: the top pair
            chosen |= {0, 2}
        if rng.random() < 0.02:  # a weaker habit
            chosen |= {1, 6}
        out.append([ITEMS[i] for i in sorted(chosen)])
    return out


def top_supports(data: list[list[str]], r: int) -> list[tuple[tuple[str, ...], int]]:
    counts: Counter[tuple[str, ...]] = Counter()
    for basket in data:
        counts.update(itertools.combinations(sorted(basket), r))
    return counts.most_common(2)


def main() -> None:
    data = baskets(np.random.default_rng(SEED))
    basket_csv = io.StringIO()
    writer = csv.writer(basket_csv, lineterminator="\n")
    for basket in data:
        writer.writerow(basket)
    (HERE / "groceries_sample.csv").write_text(basket_csv.getvalue(), encoding="utf-8")

    long_csv = io.StringIO()
    writer = csv.writer(long_csv, lineterminator="\n")
    writer.writerow(["customer_id", "item"])
    for k, basket in enumerate(data, 1):
        for item in basket:
            writer.writerow([f"c{k:06d}", item])
    (HERE / "groceries_sample_long.csv").write_text(long_csv.getvalue(), encoding="utf-8")

    with (HERE / "groceries_sample.jsonl").open("w", encoding="utf-8") as fh:
        for basket in data:
            fh.write(json.dumps(basket, ensure_ascii=False) + "\n")

    sizes = [len(b) for b in data]
    print(
        f"{len(data)} baskets, {len({i for b in data for i in b})} items, "
        f"size mean {np.mean(sizes):.2f} max {max(sizes)}"
    )
    for r in (1, 2, 3):
        (top, c1), (second, c2) = top_supports(data, r)
        print(f"r={r}: top {list(top)} ({c1}), runner-up {list(second)} ({c2}), gap {c1 - c2}")


if __name__ == "__main__":
    main()
