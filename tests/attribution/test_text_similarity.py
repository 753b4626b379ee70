"""Text similarity (FBDetect §5.6): identifier-aware tokens, the two documents, TF-IDF cosine."""

from __future__ import annotations

import numpy as np
import pytest

from regbot.attribution.model import Commit, ModifiedSubroutine
from regbot.attribution.text_similarity import (
    STOP_WORDS,
    commit_document,
    identifier_tokens,
    regression_document,
    text_similarities,
)

DAY_S = 1_795_341_600.0  # 2026-11-22T10:00:00Z


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("parseHTTPRequest", ["parse", "http", "request", "parsehttprequest"]),
        ("parse_request", ["parse", "request", "parse_request"]),
        ("HTTPServer", ["http", "server", "httpserver"]),
        ("app/views.py:42", ["app", "views", "42"]),
        ("src/cache-warmer.ts", ["cache", "warmer"]),
        ("std::vector", ["vector"]),
        ("utf8Decode", ["utf", "decode", "utf8decode"]),
        ("x86_64", ["86", "64", "x86_64"]),
        ("__init__", ["init"]),
        ("_private_fn", ["private", "private_fn"]),
        ("Fix the cache for self", ["cache"]),
        ("a b c 7", []),
        ("Größe café", ["größe", "café"]),
        ("sync.(*Once).Do", ["sync", "once", "do"]),
    ],
)
def test_identifier_tokens(text: str, expected: list[str]) -> None:
    assert identifier_tokens(text) == expected


def test_stop_words_keep_common_function_names() -> None:
    for word in ("the", "fix", "self", "py", "refactor"):
        assert word in STOP_WORDS
    for word in ("get", "set", "add", "remove", "update", "do", "once", "http", "json"):
        assert word not in STOP_WORDS


def test_regression_document_reads_frames_without_type_noise() -> None:
    document = regression_document(
        "gcpu:std::vector<int, std::allocator<int> >::push_back",
        "gcpu",
        [
            "main",
            "Parser::parse(char const*) [clone .constprop.0]",
            "std::vector<int, std::allocator<int> >::push_back",
            "main",
        ],
        DAY_S,
    )
    tokens = identifier_tokens(document)
    assert "allocator" not in tokens and "int" not in tokens and "constprop" not in tokens
    assert tokens.count("push_back") == 2  # the series and the frame
    assert tokens.count("main") == 1  # frames repeated by the heaviest stacks count once
    assert {"parser", "parse", "gcpu", "20261122"} <= set(tokens)


def test_regression_document_of_a_non_gcpu_series_keeps_its_id() -> None:
    document = regression_document("latency:checkout_api", "latency", [])
    assert identifier_tokens(document) == ["latency", "checkout", "api", "checkout_api", "latency"]


def test_commit_document_fields_and_title_weight() -> None:
    commit = Commit(
        sha="a" * 40,
        title="Speed up cache lookups",
        body="Use a dict.\n\nSigned-off-by: Jane Roe <jane@example.org>\nChange-Id: I0123abc",
        files=("app/cache.py",),
        identifiers=("lookup_table", "warmCache"),
        subroutines=(ModifiedSubroutine("app/cache.py", "Cache.get", module="app.cache"),),
        authored_at_s=DAY_S,
    )
    tokens = identifier_tokens(commit_document(commit))
    assert tokens.count("speed") == 2 and tokens.count("lookups") == 2
    assert "jane" not in tokens and "roe" not in tokens and "i0123abc" not in tokens
    assert {"dict", "lookup_table", "warm", "warmcache", "get", "20261122"} <= set(tokens)
    assert tokens.count("cache") >= 4  # title twice, the file, the module and class


def test_the_commit_naming_the_regressed_function_ranks_first() -> None:
    regression = regression_document(
        "gcpu:handle_request (app/views.py)",
        "gcpu",
        ["main (app/main.py)", "Svc.serve (app/svc.py)", "handle_request (app/views.py:42)"],
    )
    commits = [
        Commit("1" * 40, "Bump requests to 2.32", files=("requirements.txt",)),
        Commit(
            "2" * 40,
            "Validate headers in handle_request",
            files=("app/views.py",),
            identifiers=("handle_request", "validate_headers"),
        ),
        Commit("3" * 40, "Update the README", files=("README.md",)),
        Commit("4" * 40, "Log slow queries", files=("app/db.py",), identifiers=("log_slow",)),
    ]
    scores = text_similarities(regression, [commit_document(c) for c in commits])
    assert scores.shape == (4,) and scores.dtype == np.float64
    assert int(np.argmax(scores)) == 1
    assert np.all((scores >= 0) & (scores <= 1))
    assert scores[2] == 0.0  # nothing in common


def test_loosening_constraints_for_foo() -> None:
    """FBDetect's example: no commit modifies ``foo``; one says it loosens constraints for it."""
    regression = regression_document(
        "gcpu:foo (app/solver.py)",
        "gcpu",
        ["main (app/main.py)", "solve (app/solver.py)", "foo (app/solver.py:17)"],
        DAY_S,
    )
    loosening = Commit(
        "a" * 40,
        "Loosening constraints for foo",
        body="The limits were too strict for large inputs.",
        files=("config/limits.yaml",),
        authored_at_s=DAY_S - 86_400,
    )
    unrelated = [
        Commit("b" * 40, "Add dark mode to the settings page", files=("web/settings.tsx",)),
        Commit("c" * 40, "Rotate the on-call schedule", files=("ops/oncall.yaml",)),
        Commit("d" * 40, "Retry uploads on timeout", files=("app/upload.py",)),
    ]
    documents = [commit_document(c) for c in [loosening, *unrelated]]
    scores = text_similarities(regression, documents)
    assert scores[0] > 0.1
    assert scores[0] > max(scores[1:])


def test_words_shared_by_every_commit_weigh_less() -> None:
    regression = regression_document("gcpu:render (web/billing.py)", "gcpu", [])
    # every commit mentions billing; only one mentions render
    documents = [
        "billing: render invoices lazily",
        "billing: retry card payments",
        "billing: tidy currency codes",
        "billing: cache tax tables",
    ]
    scores = text_similarities(regression, documents)
    assert scores[0] > 2 * max(scores[1:])
    assert np.allclose(scores[1:], scores[1])


def test_sublinear_term_frequency() -> None:
    regression = "render"
    documents = ["render render render render render render render render", "render page", "page"]
    scores = text_similarities(regression, documents)
    # tf 8 gives 1 + ln 8 ≈ 3.1, not 8: the repeated document is still about `render` only
    assert scores[0] == pytest.approx(1.0)
    assert 0 < scores[1] < 1 and scores[2] == 0


def test_empty_documents_score_zero() -> None:
    assert text_similarities("handle", []).shape == (0,)
    assert np.array_equal(text_similarities("", ["handle views", "cache"]), [0.0, 0.0])
    assert np.array_equal(text_similarities("handle", ["", "the of a"]), [0.0, 0.0])
    assert np.array_equal(text_similarities("", [""]), [0.0])
    scores = text_similarities("handle views", ["handle views", ""])
    assert scores[0] == pytest.approx(1.0) and scores[1] == 0.0
