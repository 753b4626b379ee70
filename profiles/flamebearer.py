"""Reader of Pyroscope's flamebearer JSON, the body of its render API (``/pyroscope/render``,
``/render`` before Pyroscope 1.0, with ``format=json``): one merged profile over the range asked.

Shape read: ``{"flamebearer": {"names": [...], "levels": [[...], ...], "numTicks": n},
"metadata": {"format": "single", "units": "samples", ...}, "timeline": ...}``. Reference: the
writer, ``NewFlamebearer`` in grafana/pyroscope ``pkg/querier/flamegraph.go``, and the
project's own render fixtures (tests/fixtures/pyroscope/README.md).

Rules:

* **Levels.** ``levels[d]`` holds the nodes at depth ``d`` as a flat list of four numbers per
  node, ``[x offset, total, self, name index]`` (the ``single`` format; ``double``, a diff of two
  profiles, is refused). Offsets are delta-encoded within a level: a node starts at its own
  number plus the end (start + total) of the node before it in that level, the first one at
  its number alone. Level 0 is the root (``total``), which is no frame.
* **Tree.** A node's parent is the node one level up whose span ``[start, start + total)``
  holds it; a node that no parent holds, whose children's totals exceed its own, or whose
  name index names nothing, is an error.
* **Stacks.** Each node is the stack root-first from level 1 down to it (frame text = its
  name, as Pyroscope wrote it). Its weight is its total minus its children's totals: its
  ``self`` in a complete answer, and, when ``max-nodes`` dropped children, their weight too,
  so every ancestor's share stays exact and only the dropped functions go unseen. The root's
  own weight, if any, is the empty stack (it counts toward the bucket's total).
* **Time.** Every sample is at ``at_s``: the answer covers a range, and the caller asks one
  range per time bucket.
* **Sample type** is ``metadata.units`` (``samples`` when absent).

Errors (``InputError`` naming ``source``): not JSON, no ``flamebearer`` object, names that are
not strings, a level that is not a whole number of nodes, numbers that are not whole or are
negative, and the tree errors above. Cost: O(nodes) numpy per level, plus one tuple per node
for its stack (O(nodes x depth)).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import numpy.typing as npt

from regbot.errors import InputError
from regbot.profiles.model import ProfileSamples
from regbot.profiles.stacks import StackTable

Ints = npt.NDArray[np.int64]


def parse_flamebearer(
    data: bytes, *, source: str, table: StackTable, at_s: float
) -> ProfileSamples:
    """The stacks of one render answer as samples at ``at_s`` (module rules), one row per
    distinct stack with a nonzero weight, stack ids in ascending order."""
    payload = _object(data, source)
    body = payload.get("flamebearer")
    if not isinstance(body, dict):
        raise InputError(source, "a Pyroscope render answer with a flamebearer object")
    metadata = payload.get("metadata") if isinstance(payload.get("metadata"), dict) else {}
    assert isinstance(metadata, dict)
    if metadata.get("format", body.get("format", "single")) != "single":
        found = metadata.get("format", body.get("format"))
        raise InputError(source, "a single profile (flamebearer format 'single')", found)
    names = body.get("names", [])
    levels = body.get("levels", [])
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise InputError(f"{source}: flamebearer.names", "a list of strings")
    if not isinstance(levels, list):
        raise InputError(f"{source}: flamebearer.levels", "a list of levels")
    units = metadata.get("units") or body.get("units") or "samples"
    stack_ids, weights = _stacks(names, levels, source, table)
    unique_ids, inverse = np.unique(np.asarray(stack_ids, dtype=np.int64), return_inverse=True)
    summed = np.bincount(inverse.ravel(), weights=np.asarray(weights, np.float64))
    times = np.full(len(unique_ids), at_s, dtype=np.float64)
    return ProfileSamples(source, times, unique_ids.astype(np.int64), summed, str(units))


def _object(data: bytes, source: str) -> dict[str, Any]:
    try:
        payload = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        text = data[:60].decode("utf-8", "replace").strip()
        raise InputError(source, f"a JSON render answer ({error})", text) from None
    if not isinstance(payload, dict):
        raise InputError(
            source, "a JSON object (a Pyroscope render answer)", type(payload).__name__
        )
    return payload


def _level(level: object, depth: int, source: str) -> tuple[Ints, Ints, Ints]:
    """Start, total and name index of each node of one level (offsets decoded)."""
    where = f"{source}: flamebearer.levels[{depth}]"
    if not isinstance(level, list) or len(level) % 4:
        raise InputError(where, "a list of nodes, four numbers each")
    if not level:
        empty = np.zeros(0, np.int64)
        return empty, empty, empty
    if not all(type(v) is int or (type(v) is float and v.is_integer()) for v in level):
        raise InputError(where, "whole numbers")
    numbers = np.asarray(level, dtype=np.int64).reshape(-1, 4)
    delta, total, self_, name = numbers.T
    if (total < 0).any() or (name < 0).any() or (self_ < 0).any():
        raise InputError(where, "numbers >= 0 (totals, self values and name indexes)")
    ends_before = np.concatenate(([0], np.cumsum(total)[:-1]))
    start = np.cumsum(delta) + ends_before
    return start, total, name


def _stacks(
    names: list[str], levels: list[object], source: str, table: StackTable
) -> tuple[list[int], list[float]]:
    """Stack id and weight of every node with a nonzero weight."""
    frame_ids: dict[int, int] = {}
    stack_ids: list[int] = []
    weights: list[float] = []
    upper: tuple[Ints, Ints, list[tuple[int, ...]]] | None = None
    for depth in range(len(levels) + 1):
        if depth < len(levels):
            start, total, name = _level(levels[depth], depth, source)
        else:
            start = total = name = np.zeros(0, np.int64)
        if upper is not None:
            up_start, up_total, up_paths = upper
            parent = _parents(start, total, up_start, up_total, depth, source)
            children = np.bincount(parent, weights=total, minlength=len(up_start))
            own = up_total - children
            if (own < 0).any():
                where = f"{source}: flamebearer.levels[{depth - 1}]"
                raise InputError(where, "nodes whose children's totals do not exceed their own")
            for i in np.flatnonzero(own > 0).tolist():
                stack_ids.append(table.intern_stack_ids(up_paths[i]))
                weights.append(float(own[i]))
        else:
            parent = np.zeros(len(start), np.int64)
        if depth == len(levels):
            break
        if len(name) and int(name.max()) >= len(names):
            raise InputError(f"{source}: flamebearer.levels[{depth}]", "name indexes into names")
        if depth == 0:
            paths: list[tuple[int, ...]] = [()] * len(start)
        else:
            assert upper is not None
            up_paths = upper[2]
            paths = [
                up_paths[p] + (_frame(frame_ids, table, names, n),)
                for p, n in zip(parent.tolist(), name.tolist())
            ]
        upper = (start, total, paths)
    return stack_ids, weights


def _frame(cache: dict[int, int], table: StackTable, names: list[str], index: int) -> int:
    frame = cache.get(index)
    if frame is None:
        frame = cache[index] = table.intern_frame(names[index])
    return frame


def _parents(
    start: Ints, total: Ints, up_start: Ints, up_total: Ints, depth: int, source: str
) -> Ints:
    """For each node, the node one level up whose span holds it."""
    if not len(start):
        return np.zeros(0, np.int64)
    order = np.argsort(up_start, kind="stable")
    found = np.searchsorted(up_start[order], start, side="right") - 1
    if (found < 0).any():
        raise InputError(f"{source}: flamebearer.levels[{depth}]", "nodes inside a parent's span")
    parent = order[found]
    if ((start + total) > (up_start[parent] + up_total[parent])).any():
        raise InputError(f"{source}: flamebearer.levels[{depth}]", "nodes inside a parent's span")
    return parent.astype(np.int64)
