"""Start-up stays light: `regbot --version`, reading the configuration and `regbot explain`
import none of the heavy libraries the detection and attribution stages need (scikit-learn,
scipy.stats, scipy.sparse, statsmodels, pyarrow, git). A property of the import graph, checked
in a fresh interpreter; the seconds are measured in benchmarks, not here."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("sklearn", "scipy.stats", "scipy.sparse", "statsmodels", "pyarrow", "git", "github")


def _imported_by(module: str) -> set[str]:
    program = f"import sys, {module}\nprint('\\n'.join(sorted(sys.modules)))\n"
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    )
    return set(done.stdout.split())


@pytest.mark.parametrize(
    "module", ["regbot.bot.cli.main", "regbot.bot.config", "regbot.bot.cli.explain"]
)
def test_start_up_imports_no_heavy_library(module: str) -> None:
    loaded = _imported_by(module)
    assert not [name for name in HEAVY if name in loaded]
