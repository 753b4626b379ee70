"""Pyroscope's flamebearer JSON (``profiles/flamebearer.py``) decoded from the Pyroscope
project's own render fixtures (``tests/fixtures/pyroscope/README.md``): every stack and weight
the body encodes, the totals of its nodes, recursion counted once, and the errors."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from regbot.errors import InputError
from regbot.profiles.flamebearer import parse_flamebearer
from regbot.profiles.gcpu import build_gcpu
from regbot.profiles.sample_index import SampleIndex
from regbot.profiles.stacks import StackTable
from regbot.profiles.store import aggregate_records, bucket_start

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pyroscope"
SIMPLE = (FIXTURES / "simple-golang-app-cpu.json").read_bytes()
SERVER = (FIXTURES / "pyroscope.server.cpu.json").read_bytes()
AT = 1_632_335_270.0


def stacks_of(data: bytes) -> Counter[tuple[str, ...]]:
    table = StackTable()
    samples = parse_flamebearer(data, source="render.json", table=table, at_s=AT)
    assert (samples.times_s == AT).all() and samples.sample_type == "samples"
    assert list(samples.stack_ids) == sorted(set(samples.stack_ids.tolist()))
    return Counter(
        {
            tuple(table.frames[f] for f in table.stacks[s]): w
            for s, w in zip(samples.stack_ids.tolist(), samples.weights.tolist())
        }
    )


def test_the_simple_go_app_has_the_four_stacks_its_levels_encode() -> None:
    # levels [0,214,214,3, 2,1,1,5, 0,771,771,3] under [0,214,0,5, 0,3,2,4, 0,771,0,2]:
    # the second node of the last level starts at 214 + 2 = 216, inside main.main [214, 217)
    assert stacks_of(SIMPLE) == {
        ("runtime.main", "main.fastFunction", "main.work"): 214,
        ("runtime.main", "main.main"): 2,
        ("runtime.main", "main.main", "main.fastFunction"): 1,
        ("runtime.main", "main.slowFunction", "main.work"): 771,
    }


@pytest.mark.parametrize("data", [SIMPLE, SERVER], ids=["simple-golang-app", "pyroscope-server"])
def test_every_node_total_is_the_weight_of_the_stacks_under_it(data: bytes) -> None:
    """Decode the body's nodes independently (absolute starts, parents by span) and check that
    each node's total and self are what the decoded stacks carry."""
    body = json.loads(data)["flamebearer"]
    stacks = stacks_of(data)
    assert sum(stacks.values()) == body["numTicks"]
    spans: list[tuple[int, int, tuple[str, ...]]] = [(0, body["numTicks"], ())]
    for level in body["levels"][1:]:
        x, nodes = 0, []
        for i in range(0, len(level), 4):
            delta, total, self_, name = level[i : i + 4]
            start = x + delta
            parent = next(p for s, t, p in spans if s <= start < s + t or (t == 0 == total))
            path = (*parent, body["names"][name])
            under = sum(w for stack, w in stacks.items() if stack[: len(path)] == path)
            assert under == total, path
            if self_:
                assert stacks[path] == self_, path
            nodes.append((start, total, path))
            x = start + total
        spans = nodes


def test_a_recursive_function_counts_once_per_sample() -> None:
    table = StackTable()
    samples = parse_flamebearer(SERVER, source="s", table=table, at_s=AT)
    clone = "github.com/pyroscope-io/pyroscope/pkg/structs/transporttrie.(*trieNode).clone"
    deepest = max((table.stacks[s] for s in samples.stack_ids), key=len)
    assert [table.frames[f] for f in deepest].count(clone) == 12
    records = aggregate_records(
        bucket_start(samples.times_s, 60), samples.stack_ids, samples.weights
    )
    gcpu = build_gcpu(SampleIndex(table, records), floor=0.0)
    share = dict(zip(gcpu.subroutines, gcpu.overall.tolist()))
    assert share[clone] == pytest.approx(1 / 26)
    assert share["runtime.mcall"] == pytest.approx(16 / 26)


def test_children_max_nodes_dropped_leave_their_weight_on_the_parent() -> None:
    body = json.loads(SIMPLE)
    body["flamebearer"]["levels"].pop()  # as if max-nodes had cut the deepest level
    assert stacks_of(json.dumps(body).encode()) == {
        ("runtime.main", "main.fastFunction"): 214,
        ("runtime.main", "main.main"): 3,
        ("runtime.main", "main.slowFunction"): 771,
    }


def test_an_empty_answer_has_no_samples() -> None:
    for levels in ([], [[0, 0, 0, 0]]):
        body = {"flamebearer": {"names": ["total"], "levels": levels, "numTicks": 0}}
        assert stacks_of(json.dumps(body).encode()) == {}


def broken(change: str) -> bytes:
    body = json.loads(SIMPLE)
    levels = body["flamebearer"]["levels"]
    if change == "double":
        body["metadata"]["format"] = "double"
    elif change == "ragged":
        levels[2].append(0)
    elif change == "negative":
        levels[2][1] = -1
    elif change == "name":
        levels[3][3] = 99
    elif change == "outside":
        levels[3][0] = 5000
    elif change == "too big":
        levels[3][1] = 500
    elif change == "fraction":
        levels[3][1] = 0.5
    elif change == "names":
        body["flamebearer"]["names"][1] = 7
    elif change == "no flamebearer":
        del body["flamebearer"]
    return json.dumps(body).encode()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"<html>", "render.json: expected a JSON render answer"),
        (
            b"[1, 2]",
            "render.json: expected a JSON object (a Pyroscope render answer), found 'list'",
        ),
        (broken("no flamebearer"), "expected a Pyroscope render answer with a flamebearer object"),
        (
            broken("double"),
            "expected a single profile (flamebearer format 'single'), found 'double'",
        ),
        (broken("ragged"), "levels[2]: expected a list of nodes, four numbers each"),
        (broken("negative"), "levels[2]: expected numbers >= 0"),
        (broken("name"), "levels[3]: expected name indexes into names"),
        (broken("outside"), "levels[3]: expected nodes inside a parent's span"),
        (broken("too big"), "levels[3]: expected nodes inside a parent's span"),
        (broken("fraction"), "levels[3]: expected whole numbers"),
        (broken("names"), "render.json: flamebearer.names: expected a list of strings"),
    ],
)
def test_a_broken_answer_is_one_line_naming_the_part(data: bytes, message: str) -> None:
    with pytest.raises(InputError) as error:
        parse_flamebearer(data, source="render.json", table=StackTable(), at_s=AT)
    assert message in str(error.value) and "\n" not in str(error.value)
