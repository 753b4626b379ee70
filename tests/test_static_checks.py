"""Type checking and linting as tests, so the README's test command runs them.

mypy checks the package ``regbot`` with the settings in pyproject.toml (``[tool.mypy]``: strict on
regbot.profiles, regbot.detection and regbot.attribution, non-strict elsewhere). The top-level
folders install as ``regbot.<name>`` through ``package-dir``, a mapping mypy cannot read from the
sources, so the test lays the package out as installed — a tree of symbolic links built from
``[tool.setuptools.package-dir]`` in a temporary folder — and runs ``mypy -p regbot`` there. Its
messages name the repository's own paths (``bot/gate.py``, not ``regbot/bot/gate.py``).

ruff runs ``ruff check`` and ``ruff format --check`` on the repository with ``[tool.ruff]``."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "regbot"


def package_dirs() -> dict[str, Path]:
    """Each installed package that has a folder of its own (``regbot.bot`` → ``bot/``)."""
    with (ROOT / "pyproject.toml").open("rb") as f:
        mapping: dict[str, str] = tomllib.load(f)["tool"]["setuptools"]["package-dir"]
    return {name: ROOT / folder for name, folder in mapping.items()}


def link_tree(into: Path) -> Path:
    """The package as installed, as symbolic links to the sources under ``into``."""
    dirs = package_dirs()
    top = into / PACKAGE
    top.mkdir(parents=True)
    for entry in sorted(dirs[PACKAGE].iterdir()):
        if entry.name != "__pycache__" and f"{PACKAGE}.{entry.name}" not in dirs:
            (top / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    for name, folder in dirs.items():
        if name != PACKAGE:
            link = into.joinpath(*name.split("."))
            assert link.parent.is_dir(), f"{name}: its parent package is not laid out"
            link.symlink_to(folder, target_is_directory=True)
    return into


def repository_paths(output: str) -> str:
    """mypy's messages with the linked paths (``regbot/bot/…``) turned into the repository's."""
    prefixes = sorted(
        (
            (name.replace(".", "/") + "/", folder.relative_to(ROOT).as_posix() + "/")
            for name, folder in package_dirs().items()
            if name != PACKAGE
        ),
        key=lambda p: -len(p[0]),
    )
    lines = []
    for line in output.splitlines():
        for linked, real in prefixes:
            if line.startswith(linked):
                line = real + line[len(linked) :]
                break
        lines.append(line)
    return "\n".join(lines)


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}
    return subprocess.run(
        [sys.executable, "-m", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_mypy(tmp_path: Path) -> None:
    tree = link_tree(tmp_path / "tree")
    done = run(
        [
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(tmp_path / "mypy-cache"),
            "--python-executable",
            sys.executable,
            "-p",
            PACKAGE,
        ],
        cwd=tree,
    )
    if done.returncode != 0:
        pytest.fail(f"mypy:\n{repository_paths(done.stdout + done.stderr)}", pytrace=False)


@pytest.mark.parametrize(
    "argv",
    [["check", "--no-cache", "."], ["format", "--check", "--no-cache", "."]],
    ids=["check", "format"],
)
def test_ruff(argv: list[str]) -> None:
    done = run(["ruff", *argv], cwd=ROOT)
    if done.returncode != 0:
        pytest.fail(f"ruff {' '.join(argv)}:\n{done.stdout}{done.stderr}", pytrace=False)
