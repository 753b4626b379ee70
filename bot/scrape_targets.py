"""Scrape targets: the services ``regbot scrape`` asks for CPU profiles, as written in
``regbot.yml`` (``sources.scrape.targets``) or on the command line (``--target``).

Rules:

* **Forms.** In ``regbot.yml`` a target is a URL (``http://10.0.0.5:6060``) or a mapping
  ``{name: checkout-1, url: http://10.0.0.5:6060}``; on the command line ``URL`` or
  ``NAME=URL`` (text starting with ``http://`` or ``https://`` is a URL, so a URL's own ``=``
  in its query string is never read as a name).
* **URL.** http or https, with a host. A URL without a path (or with ``/``) gets Go's
  ``/debug/pprof/profile`` (net/http/pprof); a URL with a path is used as written, for agents
  that serve pprof elsewhere. Its query string is kept, except ``seconds``: that is regbot's
  to set (``sources.scrape.seconds``, ``--seconds``), and writing it in the URL is an error
  rather than a silent override.
* **Name.** Default: the URL's ``host:port``, followed by its path when that is not Go's
  (``10.0.0.5:8080/profiling/cpu``). Names label the profiles in the store's manifest
  and the messages, so the targets of one list have distinct names.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass

from regbot.bot import config_values as values
from regbot.bot.config_reader import Reader
from regbot.errors import InputError

DEFAULT_PATH = "/debug/pprof/profile"


@dataclass(frozen=True, slots=True)
class ScrapeTarget:
    """One service's pprof endpoint: ``url`` is complete but for ``seconds``."""

    name: str
    url: str


def target_url(text: str, where: str) -> str:
    """The endpoint a written URL names (module rules): Go's path added when there is none."""
    try:
        parts = urllib.parse.urlsplit(text.strip())
        if parts.port is not None and parts.port < 1:  # a port that is no number raises here
            raise ValueError(f"port {parts.port}")
    except ValueError as error:
        raise InputError(where, f"an http:// or https:// URL ({error})", text) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError(where, "an http:// or https:// URL with a host", text)
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    if any(name == "seconds" for name, _ in query):
        raise InputError(where, "a URL without seconds= (regbot sets the profile's length)", text)
    path = parts.path if parts.path not in ("", "/") else DEFAULT_PATH
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def default_name(url: str) -> str:
    """``host:port`` of an endpoint (``host`` when it names no port), and its path when that is
    not Go's."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or url
    if ":" in host:  # IPv6
        host = f"[{host}]"
    name = f"{host}:{parts.port}" if parts.port is not None else host
    return name if parts.path == DEFAULT_PATH else name + parts.path


def target(url: str, where: str, name: str | None = None) -> ScrapeTarget:
    endpoint = target_url(url, where)
    return ScrapeTarget(name if name is not None else default_name(endpoint), endpoint)


def target_from_text(text: str, where: str) -> ScrapeTarget:
    """A command-line target: ``URL`` or ``NAME=URL``."""
    written = text.strip()
    if not written.lower().startswith(("http://", "https://")) and "=" in written:
        name, url = written.split("=", 1)
        if not name.strip():
            raise InputError(where, "NAME=URL with a name, or a URL", text)
        return target(url, where, name.strip())
    return target(written, where)


def distinct_targets(targets: Sequence[ScrapeTarget], where: str) -> tuple[ScrapeTarget, ...]:
    """The targets, each name once (an error names the first repeated one)."""
    seen: set[str] = set()
    for item in targets:
        if item.name in seen:
            raise InputError(where, "targets with distinct names (name: ... per target)", item.name)
        seen.add(item.name)
    return tuple(targets)


def read_targets(r: Reader, value: object, key: str) -> tuple[ScrapeTarget, ...]:
    """``sources.scrape.targets``: one target or a list of them (module rules)."""
    items = value if isinstance(value, list) else [value]
    found = []
    for i, item in enumerate(items):
        at = f"{key}[{i}]" if isinstance(value, list) else key
        if isinstance(item, dict):
            d = r.section(item, at, ("name", "url"))
            if d.get("url") is None:
                raise InputError(r.where(at), "a value for url")
            url = values.text(d["url"], r.where(f"{at}.url"))
            name = r.take(d, at, "name", values.text, None)
            found.append(target(url, r.where(f"{at}.url"), name.strip() if name else None))
        else:
            found.append(target(values.text(item, r.where(at)), r.where(at)))
    return distinct_targets(found, r.where(key))
