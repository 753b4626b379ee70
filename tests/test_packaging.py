"""The wheel holds every package: each folder with an ``__init__.py`` under the package-dir
mapping of pyproject.toml is listed in ``packages`` (a non-editable install, as the Action
makes, has only those), and nothing listed is missing on disk."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_on_disk_is_in_the_wheel() -> None:
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    on_disk = set()
    for package, folder in setuptools["package-dir"].items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            relative = init.parent.relative_to(base)
            if "__pycache__" in relative.parts:
                continue
            on_disk.add(".".join([package, *relative.parts]))
    assert on_disk - listed == set(), "packages missing from pyproject.toml"
    assert listed - on_disk == set(), "listed packages with no folder"
