"""Shared factory fixtures for regbot's tests."""

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
