"""Each package's ``__init__`` names its entry points in ``__all__``, and every name resolves
(the lazily resolved ones included), so ``from regbot.detection import deduplicate`` works."""

from __future__ import annotations

import importlib

import pytest

PACKAGES = (
    "regbot.attribution",
    "regbot.bot",
    "regbot.bot.cli",
    "regbot.bot.sources",
    "regbot.detection",
    "regbot.detection.dedup",
    "regbot.profiles",
    "regbot.report",
)


@pytest.mark.parametrize("name", PACKAGES)
def test_every_exported_name_resolves(name: str) -> None:
    package = importlib.import_module(name)
    exported = package.__all__
    assert exported, f"{name} exports nothing"
    assert len(set(exported)) == len(exported)
    for attribute in exported:
        assert getattr(package, attribute) is not None, f"{name}.{attribute}"
    with pytest.raises(AttributeError):
        package.no_such_entry_point  # noqa: B018
