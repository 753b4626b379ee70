"""False-positive feedback: the `/regbot false-positive` command, reading 👎 reactions and replies
from the fake GitHub (real HTTP) into the state without duplicates, the state's comment rows, and
`regbot feedback` (table and JSON)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from factories import build_report, regression_json
from fake_github import FakeGitHub
from rich.console import Console

from regbot.bot.cli import main
from regbot.bot.github.api import CommentInfo, GitHubClient, RequestPolicy
from regbot.bot.github.comment import comment_marker
from regbot.bot.github.feedback import (
    annotate_report,
    collect_feedback,
    feedback_from_listing,
    parse_false_positive,
)
from regbot.bot.state import FeedbackEntry, StoredComment, open_state

REPO = "octo/service"
TOKEN = "fake-token"
FAST = RequestPolicy(
    retries=2, backoff_factor_s=0.0, secondary_rate_wait_s=0.0, seconds_between_writes_s=0.0
)
POSTED = 1_800_000_000.0


# ---------------------------------------------------------------- the command


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("/regbot false-positive", ""),
        ("/regbot false-positive   noisy host  ", "noisy host"),
        ("  /REGBOT False-Positive it was the load test", "it was the load test"),
        ("Thanks!\n/regbot false-positive\tflaky\nmore text", "flaky"),
        ("/regbot false-positive r-0123456789ab cache warm-up", "r-0123456789ab cache warm-up"),
    ],
)
def test_command_is_read_with_its_reason(body, reason):
    assert parse_false_positive(body) == reason


@pytest.mark.parametrize(
    "body",
    [
        "please reply `/regbot false-positive` if wrong",  # not first on its line
        "> /regbot false-positive",  # a quote of someone else
        "/regbot false-positives",
        "/regbot false-positive-ish",
        "/regbot explain r-1",
        "",
    ],
)
def test_other_text_is_not_the_command(body):
    assert parse_false_positive(body) is None


def test_reason_is_bounded():
    assert len(parse_false_positive("/regbot false-positive " + "x" * 5000) or "") == 500


# ---------------------------------------------------------------- from a listing


def stored(group: str, pr: int, comment_id: int, posted: float = POSTED) -> StoredComment:
    return StoredComment(
        group, pr, comment_id, f"https://x/{comment_id}", f"{group}-r", posted, "0" * 64, posted
    )


def info(cid: int, body: str, author: str, created: float, minus_one=()) -> CommentInfo:
    return CommentInfo(cid, body, author, f"https://x/{cid}", tuple(minus_one), created)


def test_listing_gives_reactions_and_replies_about_the_right_comments():
    a, b = stored("r-aaaa", 5, 11), stored("r-bbbb", 5, 12, posted=POSTED + 100)
    listing = [
        info(11, comment_marker("r-aaaa", 5) + "\nbody", "regbot[bot]", POSTED, ["carol"]),
        info(12, comment_marker("r-bbbb", 5) + "\nbody", "regbot[bot]", POSTED + 100),
        info(20, "/regbot false-positive old", "zed", POSTED - 10),  # before regbot's comments
        info(21, "/regbot false-positive warm-up", "dave", POSTED + 50),  # after a, before b
        info(22, "/regbot false-positive r-bbbb only b", "erin", POSTED + 200),  # names b
        info(23, "/regbot false-positive both", "fay", POSTED + 300),
        info(24, "unrelated", "gus", POSTED + 400),
    ]
    found = feedback_from_listing([a, b], listing, now_s=POSTED + 1000)
    got = sorted((e.group_id, e.user, e.kind, e.reason, e.source_id, e.at_s) for e in found)
    assert got == [
        ("r-aaaa", "carol", "reaction", "", 11, POSTED + 1000),
        ("r-aaaa", "dave", "command", "warm-up", 21, POSTED + 50),
        ("r-aaaa", "fay", "command", "both", 23, POSTED + 300),
        ("r-bbbb", "erin", "command", "only b", 22, POSTED + 200),
        ("r-bbbb", "fay", "command", "both", 23, POSTED + 300),
    ]
    assert {e.regression_id for e in found if e.group_id == "r-bbbb"} == {"r-bbbb-r"}
    assert all(e.comment_id in (11, 12) for e in found)


def test_regbots_own_comment_never_counts_as_a_command():
    own = comment_marker("r-aaaa", 5) + "\n/regbot false-positive"
    listing = [info(11, own, "regbot[bot]", POSTED)]
    assert feedback_from_listing([stored("r-aaaa", 5, 11)], listing, POSTED) == []


def test_a_deleted_comment_has_no_reactions():
    assert feedback_from_listing([stored("r-aaaa", 5, 11)], [], POSTED) == []


def test_annotate_marks_flagged_groups_only():
    report = build_report([regression_json("r-a"), regression_json("r-b")])
    marked = annotate_report(report, {"r-a": ("carol",)})
    assert [(e.group, e.feedback, e.feedback_from) for e in marked.regressions] == [
        ("r-a", "false-positive", ("carol",)),
        ("r-b", None, None),
    ]
    assert marked.regressions[0].to_json()["feedback_from"] == ["carol"]
    assert "feedback" not in marked.regressions[1].to_json()


# ---------------------------------------------------------------- state


def test_state_keeps_the_first_posting_time_of_a_comment(tmp_path):
    with open_state(tmp_path / "s.db") as state:
        state.record_comment(stored("r-a", 5, 11, posted=100.0))
        state.record_comment(stored("r-a", 5, 11, posted=900.0))  # an edit: same comment
        assert state.comment("r-a", 5).posted_at_s == 100.0
        state.record_comment(stored("r-a", 5, 77, posted=950.0))  # recreated after a deletion
        [row] = state.comments()
        assert (row.comment_id, row.posted_at_s) == (77, 950.0)
        assert state.comment("r-a", 6) is None


def test_state_records_feedback_once(tmp_path):
    entry = FeedbackEntry("r-a-r", "r-a", 5, "carol", "reaction", "", 1.0, 11, 11)
    with open_state(tmp_path / "s.db") as state:
        assert state.record_feedback([entry, entry]) == [entry]
        assert state.record_feedback([entry]) == []
        later = FeedbackEntry("r-a-r", "r-a", 5, "carol", "command", "x", 2.0, 30, 11)
        assert state.record_feedback([later]) == [later]
        assert state.feedback() == [entry, later]
        assert state.feedback("r-b") == []
        assert state.false_positive_groups() == {"r-a": ("carol",)}


# ---------------------------------------------------------------- against the fake GitHub


@pytest.fixture
def fake():
    clock = iter(range(int(POSTED) + 10, int(POSTED) + 10_000, 5))
    with FakeGitHub(REPO, TOKEN, clock=lambda: float(next(clock))) as server:
        server.add_pull(5, "Faster parser", "ab" * 20)
        server.add_pull(6, "Cache warm-up", "cd" * 20)
        yield server


def seed(fake: FakeGitHub, state, group: str, pr: int) -> int:
    cid = fake.add_comment(pr, comment_marker(group, pr) + "\nregression", "regbot[bot]", POSTED)
    state.record_comment(stored(group, pr, cid))
    return cid


def test_collect_reads_reactions_and_replies_once(tmp_path, fake):
    with (
        open_state(tmp_path / "s.db") as state,
        GitHubClient(REPO, TOKEN, fake.api_url, policy=FAST) as client,
    ):
        on_5 = seed(fake, state, "r-aaaa", 5)
        on_6 = seed(fake, state, "r-bbbb", 6)
        fake.add_reaction(on_5, "-1", "carol")
        fake.add_reaction(on_5, "+1", "dave")
        fake.add_reaction(on_6, "-1", "carol")
        fake.add_comment(6, "/regbot false-positive flag rollout", "erin", POSTED + 30)
        fake.add_comment(6, "/regbot false-positive", "erin", POSTED - 30)  # before: ignored

        first = collect_feedback(client, state, now_s=POSTED + 60)
        assert sorted((e.pull_request, e.user, e.kind, e.reason) for e in first) == [
            (5, "carol", "reaction", ""),
            (6, "carol", "reaction", ""),
            (6, "erin", "command", "flag rollout"),
        ]
        assert collect_feedback(client, state, now_s=POSTED + 120) == []  # re-read: nothing new
        fake.add_reaction(on_5, "-1", "gus")
        [new] = collect_feedback(client, state, now_s=POSTED + 180)
        assert (new.user, new.group_id, new.at_s) == ("gus", "r-aaaa", POSTED + 180)
        assert len(state.feedback()) == 4
        # One listing per pull request per read, reactions only for regbot's comments.
        assert len(fake.requests_to("GET", r"/issues/5/comments$")) == 3
        reaction_reads = {r.path for r in fake.requests_to("GET", r"/reactions$")}
        assert reaction_reads == {
            f"/repos/{REPO}/issues/comments/{on_5}/reactions",
            f"/repos/{REPO}/issues/comments/{on_6}/reactions",
        }


def test_collect_without_recorded_comments_asks_nothing(tmp_path, fake):
    with (
        open_state(tmp_path / "s.db") as state,
        GitHubClient(REPO, TOKEN, fake.api_url, policy=FAST) as client,
    ):
        assert collect_feedback(client, state, now_s=POSTED) == []
    assert fake.requests == []


# ---------------------------------------------------------------- `regbot feedback`


def feedback_cli(*args: str) -> tuple[int, str, str]:
    out, err = StringIO(), StringIO()
    code = main(
        ["feedback", *args],
        out=Console(file=out, width=200),
        err=Console(file=err, width=300, soft_wrap=True),
    )
    return code, out.getvalue(), err.getvalue()


def test_feedback_lists_a_table_and_json(tmp_path):
    path = tmp_path / "state.db"
    with open_state(path) as state:
        state.record_comment(stored("r-aaaa", 5, 11))
        state.record_feedback(
            [
                FeedbackEntry("r-aaaa-r", "r-aaaa", 5, "carol", "reaction", "", POSTED, 11, 11),
                FeedbackEntry(
                    "r-aaaa-r", "r-aaaa", 5, "[bold]dave", "command", "[red]noisy", POSTED, 30, 11
                ),
            ]
        )
    code, out, _ = feedback_cli("--state", str(path))
    assert code == 0
    assert "carol" in out and "👎" in out and "/regbot false-positive" in out
    assert "[bold]dave" in out and "[red]noisy" in out  # shown as written, not as markup
    assert "2 entries on 1 group" in out

    code, out, _ = feedback_cli("--state", str(path), "--json")
    assert code == 0
    rows = json.loads(out)["feedback"]
    assert [(r["user"], r["kind"], r["reason"], r["pull_request"]) for r in rows] == [
        ("carol", "reaction", "", 5),
        ("[bold]dave", "command", "[red]noisy", 5),
    ]
    assert rows[0]["comment_url"] == "https://x/11" and rows[0]["at_s"] == POSTED


def test_feedback_uses_the_configured_state_and_says_when_there_is_none(tmp_path):
    config = tmp_path / "regbot.yml"
    config.write_text("state: st/regbot.db\n")
    code, _, err = feedback_cli("-c", str(config))
    assert code == 2
    assert "st/regbot.db" in err and "state database" in err
    with open_state(tmp_path / "st/regbot.db"):
        pass
    code, out, _ = feedback_cli("-c", str(config))
    assert code == 0 and "no feedback recorded" in out
