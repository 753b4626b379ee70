"""Scrape targets as written in ``regbot.yml`` and on the command line
(``bot/scrape_targets.py``): their URL, their name, and the one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from regbot.bot.config import ScrapeSource, ScrapeTarget, parse_config
from regbot.bot.scrape_targets import target_from_text
from regbot.errors import InputError


@pytest.mark.parametrize(
    ("written", "name", "url"),
    [
        ("http://10.0.0.5:6060", "10.0.0.5:6060", "http://10.0.0.5:6060/debug/pprof/profile"),
        ("http://svc:6060/", "svc:6060", "http://svc:6060/debug/pprof/profile"),
        ("https://svc", "svc", "https://svc/debug/pprof/profile"),
        ("http://[::1]:6060", "[::1]:6060", "http://[::1]:6060/debug/pprof/profile"),
        ("http://svc:8080/prof/cpu", "svc:8080/prof/cpu", "http://svc:8080/prof/cpu"),
        ("http://svc/p?debug=0&a=b", "svc/p", "http://svc/p?debug=0&a=b"),
        ("web-1=http://svc:6060", "web-1", "http://svc:6060/debug/pprof/profile"),
        (" api = http://svc:6060 ", "api", "http://svc:6060/debug/pprof/profile"),
    ],
)
def test_a_command_line_target(written: str, name: str, url: str) -> None:
    assert target_from_text(written, "--target") == ScrapeTarget(name, url)


@pytest.mark.parametrize(
    ("written", "message"),
    [
        ("svc:6060", "expected an http:// or https:// URL with a host"),
        ("=http://svc", "expected NAME=URL with a name, or a URL"),
        ("http://svc:port", "expected an http:// or https:// URL"),
        ("http://svc:6060?seconds=30", "expected a URL without seconds="),
        ("ftp://svc", "expected an http:// or https:// URL with a host"),
    ],
)
def test_a_bad_command_line_target(written: str, message: str) -> None:
    with pytest.raises(InputError, match="^--target: ") as error:
        target_from_text(written, "--target")
    assert message in str(error.value)


def read(scrape: object) -> ScrapeSource:
    config = parse_config({"sources": {"scrape": scrape}}, source="r.yml", base_dir=Path("/cfg"))
    assert config.sources.scrape is not None
    return config.sources.scrape


def test_config_targets_are_urls_or_name_and_url() -> None:
    scrape = read({"targets": ["http://a:6060", {"name": "b-1", "url": "http://b:6060/"}]})
    assert scrape.targets == (
        ScrapeTarget("a:6060", "http://a:6060/debug/pprof/profile"),
        ScrapeTarget("b-1", "http://b:6060/debug/pprof/profile"),
    )
    assert read({"targets": "http://a:6060"}).targets == scrape.targets[:1]  # one, not a list
    assert read({}) == ScrapeSource(store=Path("/cfg/.regbot/scraped"))  # the defaults


@pytest.mark.parametrize(
    ("targets", "message"),
    [
        ([{"url": "http://a", "nme": "x"}], "r.yml: sources.scrape.targets[0].nme: unknown key"),
        ([{"name": "x"}], "r.yml: sources.scrape.targets[0]: expected a value for url"),
        (
            ["http://a", "http://a/"],
            "r.yml: sources.scrape.targets: expected targets with distinct",
        ),
        ([3], "r.yml: sources.scrape.targets[0]: expected a non-empty string, found 3"),
    ],
)
def test_bad_config_targets_name_the_key(targets: object, message: str) -> None:
    with pytest.raises(InputError) as error:
        read({"targets": targets})
    assert str(error.value).startswith(message)
