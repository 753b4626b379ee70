"""A deploy's change set: the commits of ``previous..deploy`` with what attribution reads from
each one (FBDetect §5.6): title, body, author, time, files, pull request, diff, the identifiers
on its changed lines and the subroutines it modifies.

The history is read in three ``git log`` passes over the same revision range, whatever its size:
commit headers (``-z``), the stored diff (``-U3``) and the analysis diff (``-U0 --full-index``
with per-language diff drivers, so that every hunk header names the function right above its
change). Python files are then mapped exactly with ``ast`` on both blobs (read through
gitpython's persistent ``cat-file``); other files by their hunk headers (approximate).

Choices:

* Order is oldest first: ``git log --date-order --reverse`` (parents before children, otherwise
  by commit date), over git's ``previous..deploy`` (commits reachable from ``deploy`` and not
  from ``previous``).
* Every diff is against the first parent (the root commit: against the empty tree), with rename
  detection (``-M``); a renamed file is listed by its new path, a deleted one by its old path.
* A merge commit (``is_merge``) keeps its first-parent diff, files and identifiers (what it
  changed on the mainline) but no ``subroutines``: its changes are already counted in the
  commits it brings in, which are part of the same change set.
* ``pull_request``: a commit's own title decides first (``Merge pull request #N from ...`` or a
  squash title ending ``(#N)``); otherwise the number of a PR merge commit that brought it in
  (reachable from the merge's second parent, not from its first) applies, the oldest such
  merge first so that a nested PR keeps its own number.
* ``diff`` is cut at ``max_diff_chars`` characters (0 skips reading it).
* ``identifiers``: distinct names (``[A-Za-z_][A-Za-z0-9_]*``, not inside a number, length >= 3,
  not a Python/C/Go/Java/JS keyword) of the removed and added lines, in diff order, at most 500.
* Binary files, symlinks and submodules are listed in ``files`` but have no subroutines.
"""

from __future__ import annotations

import keyword
import re
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import git
from gitdb.exc import BadName, BadObject

from regbot.attribution.hunk_subroutines import (
    FileDiff,
    attributes_text,
    diff_driver_for,
    git_diff_config,
    hunk_subroutines,
    parse_diff,
)
from regbot.attribution.model import Commit, ModifiedSubroutine
from regbot.attribution.python_subroutines import module_name, outline, python_subroutines
from regbot.errors import InputError

MAX_IDENTIFIERS = 500
_NO_SUBROUTINE_MODES = frozenset({"120000", "160000"})  # symlinks, submodules (gitlinks)

# ---------------------------------------------------------------------------------------------
# Pull request numbers.

_MERGE_PR = re.compile(r"^Merge pull request #(\d+) from \S")
_SQUASH_PR = re.compile(r"\(#(\d+)\)\s*$")


def pull_request_of(title: str) -> int | None:
    """The PR number a commit title shows: ``Merge pull request #123 from org/branch`` or a
    squash title ending ``(#123)``; None otherwise."""
    match = _MERGE_PR.match(title) or _SQUASH_PR.search(title)
    return int(match.group(1)) if match else None


@dataclass(frozen=True, slots=True)
class CommitHeader:
    """What ``git log`` says of a commit before its diff."""

    sha: str
    parents: tuple[str, ...]
    author: str
    authored_at_s: float
    title: str
    body: str

    @property
    def is_merge(self) -> bool:
        return len(self.parents) > 1


def _ancestors_in(start: str, parents: dict[str, tuple[str, ...]]) -> set[str]:
    """``start`` and its ancestors among the keys of ``parents`` (the change set). Within
    ``previous..deploy`` that is exact: every commit between an in-range commit and an
    in-range ancestor is in range too."""
    seen: set[str] = set()
    stack = [start] if start in parents else []
    while stack:
        sha = stack.pop()
        if sha in seen:
            continue
        seen.add(sha)
        stack.extend(parent for parent in parents[sha] if parent in parents)
    return seen


def pull_requests(headers: Sequence[CommitHeader]) -> dict[str, int | None]:
    """PR number per commit sha: its own title's, else the one of the oldest PR merge commit
    that brought it in (reachable from one of the merge's other parents, not the first)."""
    numbers = {header.sha: pull_request_of(header.title) for header in headers}
    parents = {header.sha: header.parents for header in headers}
    for header in headers:  # oldest first
        number = numbers[header.sha]
        if not header.is_merge or number is None:
            continue
        mainline = _ancestors_in(header.parents[0], parents)
        for side_parent in header.parents[1:]:
            for sha in _ancestors_in(side_parent, parents) - mainline:
                if numbers[sha] is None:
                    numbers[sha] = number
    return numbers


# ---------------------------------------------------------------------------------------------
# Identifiers.

_C_KEYWORDS = (
    "auto break case char const continue default do double else enum extern float for goto if "
    "inline int long register restrict return short signed sizeof static struct switch typedef "
    "union unsigned void volatile while _Bool _Complex _Imaginary _Alignas _Alignof _Atomic "
    "_Generic _Noreturn _Static_assert _Thread_local"
)
_GO_KEYWORDS = (
    "break case chan const continue default defer else fallthrough for func go goto if import "
    "interface map package range return select struct switch type var"
)
_JAVA_KEYWORDS = (
    "abstract assert boolean break byte case catch char class const continue default do double "
    "else enum extends final finally float for goto if implements import instanceof int "
    "interface long native new package private protected public return short static strictfp "
    "super switch synchronized this throw throws transient try void volatile while true false "
    "null var record yield sealed permits"
)
_JS_KEYWORDS = (
    "break case catch class const continue debugger default delete do else export extends "
    "finally for function if import in instanceof new return super switch this throw try "
    "typeof var void while with yield let static enum await implements package protected "
    "interface private public null true false async of undefined"
)
KEYWORDS = frozenset(
    [
        *keyword.kwlist,
        *(" ".join((_C_KEYWORDS, _GO_KEYWORDS, _JAVA_KEYWORDS, _JS_KEYWORDS))).split(),
    ]
)
"""Language keywords of Python, C, Go, Java and JavaScript (case-sensitive)."""

_IDENTIFIER = re.compile(r"(?<![A-Za-z0-9_])[A-Za-z_][A-Za-z0-9_]*")


def identifiers_of(lines: Iterable[str], *, limit: int = MAX_IDENTIFIERS) -> tuple[str, ...]:
    """Distinct identifiers of ``lines`` (length >= 3, no keywords), first seen first."""
    found: dict[str, None] = {}
    for line in lines:
        for match in _IDENTIFIER.finditer(line):
            name = match.group()
            if len(name) >= 3 and name not in KEYWORDS and name not in found:
                found[name] = None
                if len(found) >= limit:
                    return tuple(found)
    return tuple(found)


def _changed_texts(files: Sequence[FileDiff]) -> Iterable[str]:
    """Removed then added lines of every hunk, in diff order."""
    for file in files:
        for hunk in file.hunks:
            for _, text in hunk.removed:
                yield text
            for _, text in hunk.added:
                yield text


# ---------------------------------------------------------------------------------------------
# Subroutines of one commit.

BlobReader = Callable[[str], bytes | None]


def subroutines_of(files: Sequence[FileDiff], read_blob: BlobReader) -> list[ModifiedSubroutine]:
    """The subroutines one (non-merge) commit's file diffs modify: Python files exactly from
    both blobs, others from hunk headers. A Python file whose blob cannot be read is read
    from its hunk headers too."""
    found: list[ModifiedSubroutine] = []
    for file in files:
        if file.binary or not file.hunks:
            continue
        if file.old_mode in _NO_SUBROUTINE_MODES or file.new_mode in _NO_SUBROUTINE_MODES:
            continue
        if diff_driver_for(file.path) != "python":
            found += hunk_subroutines(file)
            continue
        old_source = read_blob(file.old_blob) if file.old_blob else None
        new_source = read_blob(file.new_blob) if file.new_blob else None
        if (file.old_path is not None and old_source is None) or (
            file.new_path is not None and new_source is None
        ):
            found += hunk_subroutines(file, language="python", module=module_name(file.path))
            continue
        old_ranges, new_ranges = file.changed_ranges()
        found += python_subroutines(
            file.path,
            old_source,
            new_source,
            old_ranges,
            new_ranges,
            old_path=file.renamed_from,
            file_diff=file,
        )
    return found


def functions_of(
    files: Sequence[FileDiff], read_blob: BlobReader
) -> tuple[tuple[str, frozenset[str]], ...]:
    """Every function of each Python file one commit changed, at either side of its diff, by
    path (and by the path before a rename): the outline frame matching checks before it
    matches a frame fuzzily (``frame_match``). Files that do not parse on either side give
    what the other side has."""
    found: dict[str, frozenset[str]] = {}
    for file in files:
        if file.binary or diff_driver_for(file.path) != "python":
            continue
        names: frozenset[str] = frozenset()
        for blob in (file.old_blob, file.new_blob):
            source = read_blob(blob) if blob else None
            parsed = outline(source) if source is not None else None
            if parsed is not None:
                names |= parsed.qualnames
        for path in (file.path, file.renamed_from):
            if path and names:
                found[path] = found.get(path, frozenset()) | names
    return tuple(sorted(found.items()))


# ---------------------------------------------------------------------------------------------
# git.


@dataclass(frozen=True, slots=True)
class _Analysis:
    files: tuple[str, ...]
    identifiers: tuple[str, ...]
    subroutines: tuple[ModifiedSubroutine, ...]
    functions: tuple[tuple[str, frozenset[str]], ...] = ()


class _GitLog:
    """Runs ``git log`` passes over one revision range of one repository."""

    def __init__(self, repo: git.Repo, shown_path: Path, config: list[str], revisions: str):
        self.cwd = repo.working_tree_dir or repo.git_dir
        self.shown_path = shown_path
        self.revisions = revisions
        self.base = [
            git.Git.GIT_PYTHON_GIT_EXECUTABLE or "git",
            *config,
            "log",
            "--no-color",
            "--no-show-signature",
            "--date-order",
            "--reverse",
        ]

    def _failure(self, stderr: bytes) -> InputError:
        message = stderr.decode("utf-8", errors="replace").strip().splitlines()
        return InputError(
            f"repository {self.shown_path}",
            f"a readable history for {self.revisions}",
            message[-1] if message else None,
        )

    def headers(self) -> list[CommitHeader]:
        command = [
            *self.base,
            "-z",
            "--format=%H%x00%P%x00%an%x00%at%x00%B",
            self.revisions,
            "--",
        ]
        done = subprocess.run(command, cwd=self.cwd, capture_output=True, check=False)
        if done.returncode != 0:
            raise self._failure(done.stderr)
        text = done.stdout.decode("utf-8", errors="replace")
        if text.endswith("\0"):
            text = text[:-1]
        fields = text.split("\0") if text else []
        if len(fields) % 5:
            raise self._failure(b"unexpected git log output")
        headers = []
        for i in range(0, len(fields), 5):
            sha, parents, author, authored, message = fields[i : i + 5]
            title, _, body = message.strip("\n").partition("\n")
            headers.append(
                CommitHeader(
                    sha=sha.strip(),
                    parents=tuple(parents.split()),
                    author=author,
                    authored_at_s=float(authored),
                    title=title.strip(),
                    body=body.strip(),
                )
            )
        return headers

    def patches(
        self,
        options: Sequence[str],
        handle: Callable[[str, list[str]], None],
        *,
        max_chars: int | None = None,
    ) -> None:
        """Stream ``git log -p`` and call ``handle(sha, diff lines)`` per commit; lines past
        ``max_chars`` characters of a commit are dropped while reading."""
        command = [
            *self.base,
            "--format=%x00%H",
            "-p",
            "-M",
            "--root",
            "--diff-merges=first-parent",
            "--no-ext-diff",
            "--no-textconv",
            "--submodule=short",
            "--src-prefix=a/",
            "--dst-prefix=b/",
            "--no-relative",
            *options,
            self.revisions,
            "--",
        ]
        with tempfile.TemporaryFile() as stderr:
            process = subprocess.Popen(command, cwd=self.cwd, stdout=subprocess.PIPE, stderr=stderr)
            assert process.stdout is not None
            sha: str | None = None
            lines: list[str] = []
            size = 0
            try:
                for raw in process.stdout:
                    if raw.startswith(b"\0"):
                        if sha is not None:
                            handle(sha, lines)
                        sha, lines, size = raw[1:].strip().decode("ascii"), [], 0
                    elif sha is not None and (max_chars is None or size <= max_chars):
                        line = raw.decode("utf-8", errors="replace").rstrip("\n")
                        lines.append(line)
                        size += len(line) + 1
                if sha is not None:
                    handle(sha, lines)
            finally:
                process.stdout.close()
                code = process.wait()
            if code != 0:
                stderr.seek(0)
                raise self._failure(stderr.read())


def _open_repo(repo_path: Path) -> git.Repo:
    try:
        return git.Repo(repo_path)
    except (git.NoSuchPathError, git.InvalidGitRepositoryError) as error:
        raise InputError(
            f"repository {repo_path}", "a git repository", type(error).__name__
        ) from None


def _resolve(repo: git.Repo, repo_path: Path, revision: str) -> str:
    where = f"revision {revision!r} in repository {repo_path}"
    if not isinstance(revision, str) or not revision.strip() or revision.startswith("-"):
        raise InputError(where, "a commit name (sha, branch or tag)")
    try:
        return repo.git.rev_parse("--verify", "--quiet", f"{revision}^{{commit}}").strip()
    except git.GitCommandError:
        raise InputError(where, "a commit the repository knows") from None


def resolve_revision(repo_path: Path, revision: str) -> str:
    """The full sha of the commit ``revision`` names in ``repo_path`` (InputError otherwise)."""
    repo_path = Path(repo_path)
    repo = _open_repo(repo_path)
    try:
        return _resolve(repo, repo_path, revision)
    finally:
        repo.close()


def read_change_set(
    repo_path: Path, previous: str, deploy: str, *, max_diff_chars: int = 200_000
) -> list[Commit]:
    """The commits of ``previous..deploy`` in ``repo_path``, oldest first (module docstring).

    Raises InputError naming the repository for a path that is no git repository, and the
    revision and the repository for a revision that names no commit.
    """
    if not isinstance(max_diff_chars, int) or max_diff_chars < 0:
        raise InputError("max_diff_chars", "a number of characters >= 0", max_diff_chars)
    repo_path = Path(repo_path)
    repo = _open_repo(repo_path)
    try:
        revisions = f"{_resolve(repo, repo_path, previous)}..{_resolve(repo, repo_path, deploy)}"
        with tempfile.TemporaryDirectory(prefix="regbot-attributes-") as folder:
            attributes = Path(folder) / "attributes"
            attributes.write_text(attributes_text(), encoding="utf-8")
            log = _GitLog(repo, repo_path, git_diff_config(attributes), revisions)
            return _read(repo, log, max_diff_chars)
    finally:
        repo.close()


def _read(repo: git.Repo, log: _GitLog, max_diff_chars: int) -> list[Commit]:
    headers = log.headers()
    if not headers:
        return []
    merges = {header.sha for header in headers if header.is_merge}

    @lru_cache(maxsize=128)
    def read_blob(blob: str) -> bytes | None:
        try:
            return repo.odb.stream(bytes.fromhex(blob)).read()
        except (ValueError, BadName, BadObject, git.GitError):
            return None

    analyses: dict[str, _Analysis] = {}

    def analyse(sha: str, lines: list[str]) -> None:
        files = parse_diff(lines)
        merge = sha in merges
        analyses[sha] = _Analysis(
            files=tuple(dict.fromkeys(file.path for file in files)),
            identifiers=identifiers_of(_changed_texts(files)),
            subroutines=() if merge else tuple(subroutines_of(files, read_blob)),
            functions=() if merge else functions_of(files, read_blob),
        )

    log.patches(["-U0", "--inter-hunk-context=0", "--full-index"], analyse)

    diffs: dict[str, str] = {}

    def keep_diff(sha: str, lines: list[str]) -> None:
        text = "\n".join(lines).lstrip("\n")
        diffs[sha] = (text + "\n" if text else "")[:max_diff_chars]

    if max_diff_chars:
        log.patches(["-U3"], keep_diff, max_chars=max_diff_chars)

    numbers = pull_requests(headers)
    commits = []
    for header in headers:
        analysis = analyses.get(header.sha, _Analysis((), (), ()))
        commits.append(
            Commit(
                sha=header.sha,
                title=header.title,
                body=header.body,
                author=header.author,
                authored_at_s=header.authored_at_s,
                files=analysis.files,
                pull_request=numbers[header.sha],
                diff=diffs.get(header.sha, ""),
                subroutines=analysis.subroutines,
                functions=analysis.functions,
                identifiers=analysis.identifiers,
                is_merge=header.is_merge,
            )
        )
    return commits
