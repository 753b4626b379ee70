"""JSON written atomically: indented while small, compact when large, the same document back
either way; NaN refused before anything is written."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest

from regbot.atomic import INDENT_UP_TO, write_json_atomic


def test_a_small_document_is_indented_and_reads_back(tmp_path: Path) -> None:
    document = {"regressions": [{"id": "r-1", "delta": 0.5}], "funnel": {"series": 3}}
    write_json_atomic(tmp_path / "out.json", document)
    text = (tmp_path / "out.json").read_text()
    assert "\n  " in text and json.loads(text) == document


def test_a_large_document_is_compact_and_reads_back(tmp_path: Path) -> None:
    document = {"filtered": [{"id": f"r-{i}", "values": [i * 0.5] * 20} for i in range(20_000)]}
    assert len(json.dumps(document)) > INDENT_UP_TO
    write_json_atomic(tmp_path / "out.json", document)
    text = (tmp_path / "out.json").read_text()
    assert "\n" not in text and json.loads(text) == document


def test_nan_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    (tmp_path / "out.json").write_text('{"kept": true}')
    with pytest.raises(ValueError):
        write_json_atomic(tmp_path / "out.json", {"delta": float("nan")})
    assert json.loads((tmp_path / "out.json").read_text()) == {"kept": True}


def test_a_fifo_is_written_in_place_not_replaced(tmp_path: Path) -> None:
    """`-o /dev/null` or a pipe: the special file stays what it was and gets the document."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    write_json_atomic(fifo, {"funnel": {"series": 1}})
    reader.join(timeout=10)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert json.loads(received[0]) == {"funnel": {"series": 1}}
