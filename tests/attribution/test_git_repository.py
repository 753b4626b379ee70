"""regbot.git_repository, the one git adapter: commands, streamed output, and git's failures as
one-line InputErrors."""

from __future__ import annotations

from pathlib import Path

import git
import pytest
from git_repo import GitRepo

from regbot.attribution.changes import read_change_set
from regbot.attribution.git_log import GitLog
from regbot.errors import InputError
from regbot.git_repository import GitFailure, GitRepository, require_git

FAILURE = GitFailure("repository here", "a readable history")


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    repo = GitRepo(tmp_path / "r")
    for k in range(3):
        repo.commit(f"commit {k}", {"a.txt": f"{k}\n"})
    return repo


def test_run_returns_git_output_as_written_and_feeds_stdin(repo: GitRepo) -> None:
    with GitRepository.open(repo.path) as adapter:
        assert adapter.run(["show", "main:a.txt"], FAILURE) == b"2\n"
        sha = adapter.run(["hash-object", "--stdin"], FAILURE, stdin=b"2\n").decode().strip()
        assert adapter.blob(sha) == b"2\n"
        assert adapter.blob("00" * 20) is None
        assert adapter.output(["show", "main:gone.txt"]) is None


def test_a_failed_command_is_one_line_naming_what_was_expected(repo: GitRepo) -> None:
    with GitRepository.open(repo.path) as adapter:
        with pytest.raises(InputError) as error:
            adapter.run(["log", "no-such-revision", "--"], FAILURE)
    assert str(error.value) == (
        'repository here: expected a readable history, found "fatal: bad revision '
        "'no-such-revision'\""
    )


def test_streamed_lines_come_in_order_and_a_failure_is_raised_after_the_block(
    repo: GitRepo,
) -> None:
    with GitRepository.open(repo.path) as adapter:
        with adapter.lines(["log", "--format=%s", "--reverse"], FAILURE) as lines:
            assert list(lines) == [b"commit 0\n", b"commit 1\n", b"commit 2\n"]
        seen: list[bytes] = []
        with pytest.raises(InputError, match="readable history"):
            with adapter.lines(["log", "no-such-revision", "--"], FAILURE) as lines:
                seen.extend(lines)
        assert seen == []


def test_leaving_a_stream_early_stops_git(repo: GitRepo) -> None:
    with GitRepository.open(repo.path) as adapter:
        with pytest.raises(KeyError):
            with adapter.lines(["log", "--format=%s"], FAILURE) as lines:
                next(lines)
                raise KeyError("handler failed")
        assert adapter.resolve_commit("main") == repo.git("rev-parse", "main")


def test_git_log_passes_read_through_the_adapter(repo: GitRepo) -> None:
    with GitRepository.open(repo.path) as adapter:
        log = GitLog(adapter, [], "main~2..main")
        assert [h.title for h in log.headers()] == ["commit 1", "commit 2"]
        diffs: dict[str, list[str]] = {}
        log.patches(["-U0"], lambda sha, lines: diffs.setdefault(sha, lines))
        assert [sha for sha in diffs] == [h.sha for h in log.headers()]
        assert all("+++ b/a.txt" in lines for lines in diffs.values())
        bad = GitLog(adapter, [], "main..no-such-branch")
        with pytest.raises(InputError, match=r"a readable history for main\.\.no-such-branch"):
            bad.headers()
        with pytest.raises(InputError, match=r"a readable history for main\.\.no-such-branch"):
            bad.patches([], lambda sha, lines: None)


def test_a_missing_git_binary_is_an_input_error(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(git.Git, "GIT_PYTHON_GIT_EXECUTABLE", str(tmp_path / "no-git"))
    expected = r"git: expected the git command on PATH \(regbot reads"
    with pytest.raises(InputError, match=expected):
        read_change_set(repo.path, "main~1", "main")
    with pytest.raises(InputError, match=r"the git command on PATH \(testing\)"):
        require_git("testing")
    with GitRepository.open(repo.path, needs="testing") as adapter:
        with pytest.raises(InputError, match=r"the git command on PATH \(testing\)"):
            with adapter.lines(["log"], FAILURE):
                pass
        with pytest.raises(InputError, match=r"the git command on PATH \(testing\)"):
            adapter.output(["log"])


def test_git_runs_only_in_a_folder_that_exists(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="a folder for git to run in"):
        GitRepository(tmp_path / "absent")
    with pytest.raises(InputError, match="a git repository"):
        GitRepository.open(tmp_path)
