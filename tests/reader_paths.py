"""Switches between the readers' small-input and big-input paths (tests import this)."""

from __future__ import annotations

import pytest

from dpfim.readers import basket, fimi, jsonl, long, pipeline


def force_fast_readers(monkeypatch: pytest.MonkeyPatch, *, pipelined: bool = True) -> None:
    """Make the readers take their big-input paths on any input: the compiled FIMI, basket and
    JSON-lines tokenisers (whole-chunk splits for the basket chunks they give back), pyarrow's
    CSV parser for quote-free long CSV chunks, and the compiled long grouping. pipelined: the
    tokenisers on two threads, merged in order (dpfim/readers/pipeline.py; whatever the
    machine's load), else in one thread."""
    monkeypatch.setattr(pipeline, "ENABLED", pipelined)
    monkeypatch.setattr(fimi, "COMPILED_FROM", 0)
    monkeypatch.setattr(basket, "FAST_FROM", 0)
    monkeypatch.setattr(basket, "COMPILED_FROM", 0)
    monkeypatch.setattr(jsonl, "COMPILED_FROM", 0)
    monkeypatch.setattr(long, "ARROW_FROM", 0)
    monkeypatch.setattr(long, "COMPILED_FROM", 0)


def force_slow_readers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the readers on their small-input paths whatever the input's size."""
    monkeypatch.setattr(pipeline, "ENABLED", False)
    monkeypatch.setattr(fimi, "COMPILED_FROM", 1 << 62)
    monkeypatch.setattr(basket, "FAST_FROM", 1 << 62)
    monkeypatch.setattr(basket, "COMPILED_FROM", 1 << 62)
    monkeypatch.setattr(jsonl, "COMPILED_FROM", 1 << 62)
    monkeypatch.setattr(long, "ARROW_FROM", 1 << 62)
    monkeypatch.setattr(long, "COMPILED_FROM", 1 << 62)
