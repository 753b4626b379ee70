"""A real sample store of two folded-stack buckets, and its SampleIndex, for attribution tests."""

from __future__ import annotations

from pathlib import Path

from regbot.profiles.folded import parse_folded
from regbot.profiles.model import ParseOptions
from regbot.profiles.sample_index import SampleIndex
from regbot.profiles.store import open_store


def index_of(tmp_path: Path, before: str, after: str, after_s: float = 60.0) -> SampleIndex:
    """The folded text ``before`` as the bucket at time 0 and ``after`` at ``after_s``, ingested
    into a store under ``tmp_path``."""
    store = open_store(tmp_path / "store")
    for text, at, key in ((before, 0.0, "before"), (after, after_s, "after")):
        samples = parse_folded(
            text.encode(), source=key, table=store.table, at_s=at, options=ParseOptions()
        )
        store.add(samples, key)
    store.commit()
    return SampleIndex(store.table, store.records())
