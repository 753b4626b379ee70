"""regbot's GitHub adapter against the local fake GitHub (real HTTP on 127.0.0.1): upserted
comments, pagination, retries of 5xx and secondary rate limits, permission errors, the gate and
its commit-status fallback, deployments, and configuration from the environment."""

from __future__ import annotations

import json
import socket
import urllib.request

import pytest
from fake_github import FakeGitHub

from regbot.bot.github.api import (
    CommentInfo,
    DeploymentInfo,
    GitHubClient,
    GitHubError,
    PullRequestInfo,
    RequestPolicy,
)
from regbot.errors import InputError

TOKEN = "fake-token"
REPO = "octo/service"
MARKER = "<!-- regbot:group=abc -->"
FAST = RequestPolicy(
    retries=3,
    backoff_factor_s=0.0,
    secondary_rate_wait_s=0.3,
    max_rate_limit_wait_s=5.0,
    timeout_s=5,
    seconds_between_writes_s=0.0,
)


def sha(i: int) -> str:
    return f"{i:040x}"


@pytest.fixture
def fake():
    with FakeGitHub(REPO, TOKEN) as server:
        server.add_pull(12, "Faster parser", sha(0xABC), commits=[sha(0xAB1)], author="alice")
        yield server


@pytest.fixture
def client(fake):
    with GitHubClient(REPO, TOKEN, fake.api_url, policy=FAST) as github:
        yield github


def body(text: str) -> str:
    return f"{MARKER}\n{text}"


# ---------------------------------------------------------------- comments


def test_upsert_creates_once_then_edits_and_skips_identical(fake, client):
    comment, created = client.upsert_comment(12, MARKER, body("run 0"))
    assert created
    for run in range(1, 4):
        again, created = client.upsert_comment(12, MARKER, body(f"run {run}"))
        assert not created
        assert again.id == comment.id
        assert again.body == body(f"run {run}")
    stored = fake.comments(12)
    assert [c["body"] for c in stored] == [body("run 3")]
    assert len(fake.requests_to("POST", r"/issues/12/comments$")) == 1
    assert len(fake.requests_to("PATCH", r"/issues/comments/\d+$")) == 3

    unchanged, created = client.upsert_comment(12, MARKER, body("run 3"))
    assert not created and unchanged.id == comment.id
    assert len(fake.requests_to("PATCH", r"/issues/comments/\d+$")) == 3  # identical: no edit
    assert len(fake.comments(12)) == 1


def test_upsert_finds_marker_written_by_someone_else_and_other_markers_are_left_alone(fake, client):
    other = fake.add_comment(12, "<!-- regbot:group=zzz -->\nold", user="someone")
    mine = fake.add_comment(12, body("old"), user="someone")
    comment, created = client.upsert_comment(12, MARKER, body("new"))
    assert not created and comment.id == mine
    bodies = {c["id"]: c["body"] for c in fake.comments(12)}
    assert bodies == {other: "<!-- regbot:group=zzz -->\nold", mine: body("new")}


def test_upsert_rejects_body_without_marker(client):
    with pytest.raises(ValueError, match="marker"):
        client.upsert_comment(12, MARKER, "no marker here")


def test_marker_on_second_page_of_more_than_100_comments(fake, client):
    for i in range(130):
        fake.add_comment(12, f"chatter {i}", user="bob", created_s=1_700_000_000 + i)
    marked = fake.add_comment(12, body("first"), user="regbot[bot]")
    comment, created = client.upsert_comment(12, MARKER, body("second"))
    assert not created and comment.id == marked
    pages = [r.query.get("page", "1") for r in fake.requests_to("GET", r"/issues/12/comments$")]
    assert pages == ["1", "2"]
    assert len(fake.comments(12)) == 131
    assert fake.comments(12)[-1]["body"] == body("second")


def test_list_comments_reads_minus_one_reactions_only_for_marked_comments(fake, client):
    plain = fake.add_comment(12, "unrelated", user="bob")
    marked = fake.add_comment(12, body("regression"), user="regbot[bot]")
    fake.add_reaction(plain, "-1", "carol")
    fake.add_reaction(marked, "-1", "carol")
    fake.add_reaction(marked, "+1", "dave")
    fake.add_reaction(marked, "-1", "erin")
    comments = client.list_comments(12, with_reactions_for=MARKER)
    by_id = {c.id: c for c in comments}
    assert by_id[marked].minus_one_users == ("carol", "erin")
    assert by_id[plain].minus_one_users == ()
    assert by_id[marked].author == "regbot[bot]"
    assert by_id[marked].url.endswith(f"/pull/12#issuecomment-{marked}")
    reaction_reads = fake.requests_to("GET", r"/reactions$")
    assert [r.path.split("/")[-2] for r in reaction_reads] == [str(marked)]


def test_replies_since_returns_comments_created_at_or_after(fake, client):
    fake.add_comment(12, "before", user="bob", created_s=1_700_000_000)
    fake.add_comment(
        12, "edited later", user="bob", created_s=1_700_000_010, updated_s=1_700_000_500
    )
    fake.add_comment(12, "/regbot false-positive", user="carol", created_s=1_700_000_100)
    replies = client.replies_since(12, 1_700_000_100)
    assert [(c.body, c.author) for c in replies] == [("/regbot false-positive", "carol")]
    assert replies[0].created_at_s == 1_700_000_100
    listed = fake.requests_to("GET", r"/issues/12/comments$")[-1]
    assert listed.query["since"] == "2023-11-14T22:15:00Z"


def test_comment_permission_403_names_the_permission_and_is_not_retried(fake, client):
    fake.forbid("POST", r"/issues/\d+/comments$")
    with pytest.raises(GitHubError) as caught:
        client.upsert_comment(12, MARKER, body("x"))
    message = str(caught.value)
    assert "pull-requests: write" in message and "issues: write" in message
    assert "Resource not accessible by integration" in message
    assert "\n" not in message
    assert caught.value.status == 403
    assert len(fake.requests_to("POST", r"/issues/12/comments$")) == 1


# ---------------------------------------------------------------- retries


def test_two_server_errors_are_retried(fake, client):
    fake.add_comment(12, body("hello"))
    fake.fail_next(2, status=500)
    comments = client.list_comments(12)
    assert [c.body for c in comments] == [body("hello")]
    statuses = [r.status for r in fake.requests_to("GET", r"/issues/12/comments$")]
    assert statuses == [500, 500, 200]


def test_edit_is_retried_after_a_502(fake, client):
    comment_id = fake.add_comment(12, body("old"))
    fake.fail_next(1, status=502, method="PATCH")
    edited = client.edit_comment(comment_id, body("new"))
    assert edited.body == body("new")
    assert [r.status for r in fake.requests_to("PATCH", r"/comments/\d+$")] == [502, 200]


def test_server_errors_beyond_the_retries_become_a_github_error(fake, client):
    fake.fail_next(10, status=503)
    with pytest.raises(GitHubError, match=r"GitHub failed to read pull request #12: 503") as caught:
        client.pull_request(12)
    assert caught.value.status == 503
    assert len(fake.requests_to("GET", r"/pulls/12$")) == FAST.retries + 1


def test_secondary_rate_limit_waits_for_retry_after(fake, client):
    fake.secondary_rate_limit_next(1, retry_after=1)
    assert client.pull_request(12).title == "Faster parser"
    limited, retried = fake.requests_to("GET", r"/pulls/12$")
    assert (limited.status, retried.status) == (403, 200)
    assert retried.time_s - limited.time_s >= 1.0


def test_secondary_rate_limit_without_retry_after_waits_the_configured_time(fake, client):
    fake.secondary_rate_limit_next(1, retry_after=None)
    assert client.pull_request(12).number == 12
    limited, retried = fake.requests_to("GET", r"/pulls/12$")
    assert (limited.status, retried.status) == (403, 200)
    assert retried.time_s - limited.time_s >= FAST.secondary_rate_wait_s


def test_secondary_rate_limit_that_never_lifts_is_reported_as_rate_limit(fake):
    policy = RequestPolicy(
        retries=1, backoff_factor_s=0.0, secondary_rate_wait_s=0.05, seconds_between_writes_s=0.0
    )
    fake.secondary_rate_limit_next(5, retry_after=None)
    with GitHubClient(REPO, TOKEN, fake.api_url, policy=policy) as github:
        with pytest.raises(GitHubError, match="rate limit") as caught:
            github.pull_request(12)
    assert caught.value.rate_limited and caught.value.status == 403


# ---------------------------------------------------------------- the gate


def test_gate_as_check_run(fake, client):
    used = client.set_gate(
        sha(0xABC),
        "regbot/performance",
        "failure",
        "2 regressions",
        "details",
        details_url="https://ci.example/run/1",
    )
    assert used == "check_run"
    (run,) = fake.check_runs
    assert run["name"] == "regbot/performance"
    assert run["head_sha"] == sha(0xABC)
    assert (run["status"], run["conclusion"]) == ("completed", "failure")
    assert (run["output"]["title"], run["output"]["summary"]) == ("2 regressions", "details")
    assert run["details_url"] == "https://ci.example/run/1"
    assert fake.statuses == []


def test_gate_falls_back_to_commit_status_when_check_runs_are_forbidden(fake, client):
    fake.forbid("POST", r"/check-runs$", "Resource not accessible by personal access token")
    assert client.set_gate(sha(0xABC), "regbot/performance", "neutral", "no baseline", "s") == (
        "status"
    )
    assert client.set_gate(sha(0xABD), "regbot/performance", "failure", "x" * 300, "s") == "status"
    neutral, failure = fake.statuses
    assert (neutral["state"], neutral["context"]) == ("success", "regbot/performance")
    assert neutral["description"] == "neutral: no baseline"
    assert neutral["sha"] == sha(0xABC)
    assert failure["state"] == "failure"
    assert len(failure["description"]) == 140
    assert fake.check_runs == []


def test_gate_with_both_forbidden_names_both_permissions(fake, client):
    fake.forbid("POST", r"/check-runs$")
    fake.forbid("POST", r"/statuses/")
    with pytest.raises(GitHubError) as caught:
        client.set_gate(sha(1), "regbot/performance", "success", "ok", "s")
    assert "statuses: write" in str(caught.value) and "checks: write" in str(caught.value)


def test_gate_does_not_fall_back_on_a_rate_limit(fake):
    policy = RequestPolicy(retries=0, backoff_factor_s=0.0, seconds_between_writes_s=0.0)
    fake.secondary_rate_limit_next(3, retry_after=None, path=r"/check-runs$")
    with GitHubClient(REPO, TOKEN, fake.api_url, policy=policy) as github:
        with pytest.raises(GitHubError, match="rate limit"):
            github.set_gate(sha(1), "regbot/performance", "success", "ok", "s")
    assert fake.statuses == []


# ---------------------------------------------------------------- errors


def test_bad_token_is_a_clear_error(fake):
    with GitHubClient(REPO, "wrong", fake.api_url, policy=FAST) as github:
        with pytest.raises(GitHubError) as caught:
            github.list_comments(12)
    assert str(caught.value).startswith("the token in $GITHUB_TOKEN was refused")
    assert caught.value.status == 401


def test_unknown_repository_is_named(fake):
    with GitHubClient("octo/nothing", TOKEN, fake.api_url, policy=FAST) as github:
        with pytest.raises(GitHubError, match=r"repository octo/nothing not found at http://"):
            github.pull_request(1)


def test_missing_pull_request_in_an_existing_repository(client):
    with pytest.raises(GitHubError, match=r"could not read pull request #99: not found"):
        client.pull_request(99)


def test_unreachable_api_names_the_url():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    policy = RequestPolicy(retries=1, backoff_factor_s=0.0, timeout_s=2)
    with GitHubClient(REPO, TOKEN, url, policy=policy) as github:
        with pytest.raises(GitHubError) as caught:
            github.pull_request(1)
    message = str(caught.value)
    assert message.startswith(f"could not reach the GitHub API at {url} to read pull request #1")
    assert "\n" not in message and caught.value.status is None


def test_invalid_repository_and_url_are_input_errors():
    with pytest.raises(InputError, match="repository.github: expected owner/name"):
        GitHubClient("just-a-name", TOKEN)
    with pytest.raises(InputError, match="github.api_url"):
        GitHubClient(REPO, TOKEN, "ftp://example.com")


# ---------------------------------------------------------------- pulls, compare, deployments


def test_pulls_for_commit(fake, client):
    fake.add_pull(
        13,
        "Merged change",
        sha(0xDEF),
        commits=[sha(0xAB1)],
        author="bob",
        merged=True,
        head_ref="bob/fix",
        merge_commit_sha=sha(0xFED),
    )
    fake.add_commit(sha(0x999))
    pulls = client.pulls_for_commit(sha(0xAB1))
    assert pulls == [
        PullRequestInfo(
            12,
            "Faster parser",
            "open",
            False,
            "alice",
            "alice/change-12",
            "main",
            f"{fake.root_url}/octo/service/pull/12",
        ),
        PullRequestInfo(
            13,
            "Merged change",
            "closed",
            True,
            "bob",
            "bob/fix",
            "main",
            f"{fake.root_url}/octo/service/pull/13",
        ),
    ]
    assert [p.number for p in client.pulls_for_commit(sha(0xFED))] == [13]
    assert client.pulls_for_commit(sha(0x999)) == []
    assert client.pull_request(13).merged
    with pytest.raises(GitHubError, match="No commit found"):
        client.pulls_for_commit(sha(0x5555))


def test_compare_over_several_pages(fake, client):
    history = fake.add_commits(sha(i) for i in range(1, 301))
    assert client.compare(history[9], history[259]) == history[10:260]
    pages = [r.query["page"] for r in fake.requests_to("GET", r"/compare/")]
    assert pages == ["1", "2", "3"]
    assert client.compare(history[5], history[5]) == []
    with pytest.raises(GitHubError, match="compare"):
        client.compare(history[0], sha(0xBAD))


def test_deployments_newest_first_with_latest_state(fake, client):
    first = fake.add_deployment(sha(1), "production", created_at=1_000, state="success")
    third = fake.add_deployment(sha(3), "production", created_at=3_000, state="failure")
    second = fake.add_deployment(sha(2), "production", created_at=2_000, state="in_progress")
    fake.add_deployment_status(second, "success", 2_100)
    fake.add_deployment(sha(9), "staging", created_at=5_000, state="success")
    pending = fake.add_deployment(sha(4), "production", created_at=4_000, state=None)
    assert client.deployments("production") == [
        DeploymentInfo(pending, sha(4), "production", 4_000.0, None),
        DeploymentInfo(third, sha(3), "production", 3_000.0, "failure"),
        DeploymentInfo(second, sha(2), "production", 2_000.0, "success"),
        DeploymentInfo(first, sha(1), "production", 1_000.0, "success"),
    ]
    assert len(client.deployments(None)) == 5


def test_previous_successful_deployment(fake, client):
    fake.add_deployment(sha(1), created_at=1_000, state="success")
    two = fake.add_deployment(sha(2), created_at=2_000, state="success")
    fake.add_deployment(sha(3), created_at=3_000, state="failure")
    fake.add_deployment(sha(4), created_at=4_000, state="success")
    fake.add_deployment(sha(4), created_at=4_500, state="success")  # a redeploy of sha 4
    fake.add_deployment(sha(5), created_at=5_000, state="success")
    found = client.previous_successful_deployment("production", sha(4))
    assert found == DeploymentInfo(two, sha(2), "production", 2_000.0, "success")
    assert client.previous_successful_deployment("production", sha(5)).sha == sha(4)
    assert client.previous_successful_deployment("production", sha(1)) is None
    assert client.previous_successful_deployment("production", sha(77)) is None


def test_deployments_forbidden_names_deployments_read(fake, client):
    fake.forbid("GET", r"/deployments$")
    with pytest.raises(GitHubError, match="deployments: read"):
        client.deployments("production")


# ---------------------------------------------------------------- configuration


def test_from_environment_honours_github_api_url(fake):
    with FakeGitHub(REPO, "enterprise-token", path_prefix="/api/v3") as enterprise:
        enterprise.add_pull(5, "On GHE", sha(5))
        environ = {"REGBOT_TOKEN": "enterprise-token", "GITHUB_API_URL": enterprise.api_url}
        github = GitHubClient.from_environment(
            REPO,
            "https://github.invalid",
            token_env="REGBOT_TOKEN",
            environ=environ,
            policy=FAST,
        )
        with github:
            assert github.api_url == enterprise.api_url
            assert github.pull_request(5).title == "On GHE"
        assert enterprise.requests[-1].path == "/repos/octo/service/pulls/5"
    assert fake.requests == []


def test_from_environment_uses_configured_url_without_github_api_url(fake):
    github = GitHubClient.from_environment(
        REPO, fake.api_url, environ={"GITHUB_TOKEN": TOKEN}, policy=FAST
    )
    with github:
        assert github.pull_request(12).number == 12
    default = GitHubClient.from_environment(REPO, None, environ={"GITHUB_TOKEN": TOKEN})
    assert default.api_url == "https://api.github.com"


def test_missing_token_is_an_input_error_naming_the_variable():
    with pytest.raises(InputError, match=r"^\$GITHUB_TOKEN: expected a GitHub token"):
        GitHubClient.from_environment(REPO, None, environ={})
    with pytest.raises(InputError, match=r"\$MY_TOKEN"):
        GitHubClient.from_environment(REPO, None, token_env="MY_TOKEN", environ={"MY_TOKEN": " "})
    with pytest.raises(InputError, match=r"\$GITHUB_API_URL"):
        GitHubClient.from_environment(
            REPO, None, environ={"GITHUB_TOKEN": TOKEN, "GITHUB_API_URL": "not a url"}
        )


# ---------------------------------------------------------------- the fake itself


def raw_get(fake: FakeGitHub, path: str, token: str = TOKEN):
    request = urllib.request.Request(
        fake.api_url + path, headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), json.loads(error.read())


def test_fake_link_headers_and_rate_limit_headers(fake):
    for i in range(45):
        fake.add_comment(12, f"c{i}")
    status, headers, page = raw_get(fake, "/repos/octo/service/issues/12/comments?per_page=20")
    assert status == 200 and len(page) == 20
    assert headers["Link"] == (
        f'<{fake.api_url}/repos/octo/service/issues/12/comments?per_page=20&page=2>; rel="next", '
        f'<{fake.api_url}/repos/octo/service/issues/12/comments?per_page=20&page=3>; rel="last"'
    )
    for name in ("Limit", "Remaining", "Reset", "Used", "Resource"):
        assert f"X-RateLimit-{name}" in headers
    status, headers, page = raw_get(
        fake, "/repos/octo/service/issues/12/comments?per_page=20&page=3"
    )
    assert [c["body"] for c in page] == [f"c{i}" for i in range(40, 45)]
    assert 'rel="next"' not in headers["Link"] and 'rel="first"' in headers["Link"]
    assert int(headers["X-RateLimit-Used"]) == 2
    status, _, error = raw_get(fake, "/user", token="nope")
    assert (status, error["message"]) == (401, "Bad credentials")
    status, _, user = raw_get(fake, "/user")
    assert (status, user["login"]) == (200, "regbot[bot]")
    status, _, error = raw_get(fake, "/repos/other/repo")
    assert (status, error["message"]) == (404, "Not Found")


def test_comment_info_defaults_allow_hand_built_values():
    info = CommentInfo(1, "b", "a", "u", ("x",))
    assert info.minus_one_users == ("x",) and info.created_at_s is None
