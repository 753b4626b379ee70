"""Ties on one function split by lines, on real py-spy recordings of a real service in a real
git repository: two commits of one deploy edit ``price``, one doubling its loop's bound, one
changing the multiplier in the loop's body (a new result, the same cost)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from git_repo import GitRepo

from regbot.attribution.attribute import RegressionEvidence, attribute_all
from regbot.attribution.changes import read_change_set
from regbot.attribution.deploy_lines import read_deploy_lines
from regbot.attribution.settings import AttributionSettings
from regbot.bot.sources.profiles import collect_profile_paths, ingest_profiles
from regbot.profiles.gcpu import build_gcpu
from regbot.profiles.sample_index import SampleIndex
from regbot.profiles.store import open_store

PY_SPY = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")
# The service never sleeps: it prices requests and renders pages in a fixed mix, and py-spy
# samples it on CPU only. Shares are then shares of the service's own work, whatever else the
# machine runs (a sleeping service on a loaded machine shows its scheduler's delays instead).
RECORD_S = 6  # at 500 Hz: ~3,000 samples, ~400 of price before and ~100 on its loop header
BUCKET_S = 60
T0 = 1_800_000_000
SERVICE = '''"""A service that prices ten requests, then renders a page, as fast as it can."""

import sys
import time


def price(request):
    total = request
    for i in range(3000):
        total = (total * 31 + i) % 1000003
    return total


def render(page):
    text = page
    for j in range(200000):
        text = (text * 7 + j) % 65521
    return text


def main(seconds):
    start = time.monotonic()
    page = 0
    while time.monotonic() - start < seconds:
        for request in range(10):
            price(request)
        render(page)
        page += 1


if __name__ == "__main__":
    main(float(sys.argv[1]))
'''
RUN = (
    "import runpy, sys; sys.argv = ['service', sys.argv[1]];"
    " runpy.run_path('app/service.py', run_name='__main__')"
)


def _history(repo: GitRepo) -> dict[str, str]:
    shas = {"previous": repo.commit("service", {"app/service.py": SERVICE})}
    repo.replace("app/service.py", "range(3000)", "range(9000)")
    shas["bound"] = repo.commit("price: settle over more rounds")
    repo.replace("app/service.py", "* 31 +", "* 37 +")
    shas["salt"] = repo.commit("use a prime multiplier in price")
    repo.replace(
        "app/service.py", "def price", "def tag(request):\n    return request\n\n\ndef price"
    )
    shas["tag"] = repo.commit("add tag()")
    return shas


def _record(repo: GitRepo, shas: dict[str, str], profiles: Path) -> None:
    """The two code states recorded one after the other, bucket 0 and bucket 1: one service and
    one py-spy at a time leave a core each on a two-core machine. (Two at once overload it, and
    py-spy's wall-clock samples of a descheduled service repeat one line in bursts, which
    makes the per-line shares far noisier than their counts suggest.)"""
    for at, sha in ((T0, shas["previous"]), (T0 + BUCKET_S, shas["tag"])):
        tree = repo.path.parent / f"tree-{at}"
        repo.git("worktree", "add", "-q", "--detach", str(tree), sha)
        out = profiles / f"{at}.folded"
        command = [PY_SPY, "record", "-r", "500", "-f", "raw", "-o", str(out), "--"]
        recorded = subprocess.run(
            [*command, sys.executable, "-c", RUN, str(RECORD_S)],
            cwd=tree,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=RECORD_S * 10,
            check=False,
        )
        if recorded.returncode != 0:
            pytest.skip(f"py-spy could not record here: {recorded.stderr.decode()[-200:]}")


@pytest.mark.skipif(PY_SPY is None, reason="py-spy (the test extra) is not installed")
def test_the_loop_bound_owns_the_rise_not_the_reworded_body(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "repo")
    shas = _history(repo)
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    _record(repo, shas, profiles)
    ingest_profiles(collect_profile_paths([profiles]), tmp_path / "store", bucket_width_s=BUCKET_S)
    store = open_store(tmp_path / "store")
    index = SampleIndex(store.table, store.records())
    gcpu = build_gcpu(index)
    [row] = [i for i, name in enumerate(gcpu.subroutines) if name.startswith("price ")]
    evidence = RegressionEvidence(
        id="price",
        series_id=f"gcpu:{gcpu.subroutines[row]}",
        kind="gcpu",
        subroutine=gcpu.subroutines[row],
        change_time_s=T0 + BUCKET_S,
        window_start_s=T0,
        window_end_s=T0 + 2 * BUCKET_S,
        times_s=np.asarray(gcpu.timestamps_s),
        values=np.asarray(gcpu.values[row]),
    )
    assert evidence.values[1] > 1.5 * evidence.values[0]  # the recordings show the slowdown
    commits = read_change_set(repo.path, shas["previous"], shas["tag"])

    def gcpu_parts(read_lines) -> dict[str, float]:
        _, found = attribute_all([evidence], commits, index, [], AttributionSettings(), read_lines)
        by_sha = {s.commit.sha: s.parts.gcpu_attribution for s in found["price"].ranked}
        return {name: by_sha[sha] for name, sha in shas.items() if sha in by_sha}

    tied = gcpu_parts(None)
    assert tied["bound"] == tied["salt"] == 1.0  # without lines both explain it all

    def read(paths: set[str]):
        return read_deploy_lines(repo.path, shas["previous"], shas["tag"], paths, commits, T0)

    split = gcpu_parts(read)
    # What is left to the salt is sampling noise in the two lines' ratios (~0.1 in log).
    assert split["bound"] >= 0.65, split
    assert split["salt"] <= 0.35, split
    assert split["tag"] == 0.0
