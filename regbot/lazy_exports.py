"""Entry points re-exported by a package's ``__init__`` and imported on first use (PEP 562), so
that importing one module of a package does not import the whole package."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def resolver(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: each name of ``homes`` is read from the
    submodule ``homes[name]`` the first time it is asked for; other names are an AttributeError."""

    def resolve(name: str) -> Any:
        if name in homes:
            return getattr(import_module(f"{package}.{homes[name]}"), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return resolve
