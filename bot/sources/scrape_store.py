"""Scraped profiles into the sample store (``profiles/store.py``): one segment per round.

Rules:

* **Only parsed profiles are written**, all of a round's in one commit under the store's lock.
  A round in which every target failed does not touch the store, nor create its folder.
* **Key**: a profile is known by the SHA-256 of its bytes, as ``regbot ingest`` knows a pprof
  file, so the same answer stored twice (or ingested from a saved copy) counts once.
* **Label**: each profile's manifest entry (``ingested``) names its target,
  ``<name> (<url>)``. The store keeps no service per sample: the targets of one run share the
  store, their samples pooled per bucket (one config is one service, and gCPU is the share over
  its whole fleet); scrape different services into different stores (``--store``).
* **Stacks** are re-interned from each target's own table into the store's, so ids stay dense.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from regbot.bot.sources.pprof_scrape import TargetResult
from regbot.profiles.model import ProfileSamples
from regbot.profiles.stacks import StackTable
from regbot.profiles.store import locked, open_store


@dataclass(frozen=True, slots=True)
class StoreTotals:
    """What a round added (``stored``, ``already``: profiles already there) and what the store
    holds afterwards."""

    stored: int
    already: int
    frames: int
    stacks: int
    buckets: int
    first_bucket_s: float | None
    last_bucket_s: float | None
    bucket_width_s: int


def reinterned(samples: ProfileSamples, source: StackTable, into: StackTable) -> ProfileSamples:
    """``samples`` with their stacks named by ids of ``into`` instead of ``source``."""
    frames, stacks = source.frames, source.stacks
    ids = [into.intern_stack(frames[f] for f in stacks[s]) for s in samples.stack_ids.tolist()]
    return replace(samples, stack_ids=np.array(ids, dtype=np.int64))


def append_round(
    store_dir: Path, results: Sequence[TargetResult], bucket_width_s: int | None
) -> StoreTotals | None:
    """Append the round's parsed profiles to the store in ``store_dir`` (module rules); None
    when there was none."""
    parsed = [r for r in results if r.samples is not None and r.table is not None]
    if not parsed:
        return None
    stored = already = 0
    with locked(store_dir):
        store = open_store(store_dir, bucket_width_s)
        for result in parsed:
            assert result.samples is not None and result.table is not None
            key = result.digest
            if store.has(key):
                already += 1
                continue
            samples = reinterned(result.samples, result.table, store.table)
            label = f"{result.target.name} ({result.url})"
            store.add(replace(samples, source=label), key)
            stored += 1
        store.commit()
        records = store.records()
    buckets = np.unique(records.bucket_s)
    return StoreTotals(
        stored,
        already,
        len(store.table.frames),
        len(store.table.stacks),
        len(buckets),
        float(buckets[0]) if len(buckets) else None,
        float(buckets[-1]) if len(buckets) else None,
        store.bucket_width_s,
    )
