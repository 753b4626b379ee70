"""Shared fixtures for regbot's tests.

Plain builders that tests call (candidates and their windows) live in ``tests/support/factories.py``,
imported as ``from factories import build_candidate``: with ``--import-mode=importlib`` a test module
cannot import ``conftest``, while ``tests/support`` is on ``pythonpath``."""

from __future__ import annotations

from pathlib import Path

import pytest

from regbot.profiles.stacks import StackTable

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture
def table() -> StackTable:
    return StackTable()
