"""The small Python service that the bot's end-to-end tests deploy, and the pieces that point
regbot at it: its source (``handle_request`` calls ``parse``, ``compute`` and ``render``), the
`regbot.yml` of a scenario folder and the `regbot run` command line.

Each test plants its regression in its own variant of the service (``compute`` scaled by a
``ROUNDS`` constant or not, ``render`` doing work or not, a request loop around it or not), so
the functions are kept here one by one and a test picks its variants in ``service_source``;
what a test changes in them stays in the test."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

PARSE = """\
def parse(n):
    total = 0
    for i in range(n):
        total += i % 7
    return total
"""

COMPUTE = """\
def compute(n):
    total = 0
    for i in range(n):
        total += (i * i) % 11
    return total
"""

# ``compute`` whose work scales with ``ROUNDS``, a module constant the service must define.
COMPUTE_ROUNDS = """\
def compute(n):
    total = 0
    for i in range(n * ROUNDS):
        total += (i * i) % 11
    return total
"""

RENDER_ECHO = """\
def render(x):
    return x
"""

RENDER_XOR = """\
def render(x):
    s = 0
    for i in range(3000):
        s += i ^ x
    return s
"""

HANDLE_REQUEST = """\
def handle_request(i):
    a = parse(3000)
    b = compute(3000)
    return render(a + b + i)
"""


def service_source(
    *,
    compute: str = COMPUTE,
    render: str = RENDER_XOR,
    head: Sequence[str] = (),
    tail: Sequence[str] = (),
) -> str:
    """The service module: ``head`` (imports), ``parse``, ``compute``, ``render`` and
    ``handle_request``, then ``tail`` (more functions, constants, a main guard); each part ends
    in a newline and the parts are separated by two blank lines, as a formatter lays out a
    Python module."""
    return "\n\n".join([*head, PARSE, compute, render, HANDLE_REQUEST, *tail])


def write_regbot_yml(
    root: Path,
    *,
    windows: str,
    repository: str = "{path: repo}",
    extra_sources: str = "",
    bucket: str | None = None,
    extra: str = "",
) -> Path:
    """Write ``root/regbot.yml`` for a scenario folder (the repository in ``root/repo``, folded
    profiles in ``root/profiles/``, the state in ``root/state/regbot.db``): one default workload
    with a 5% relative threshold and ``windows`` (the YAML mapping's body, e.g. ``"historical:
    60s, analysis: 20s, extended: 10s"``); ``bucket`` sets the profile bucket, ``extra_sources``
    goes after the profiles in ``sources`` and ``extra`` (whole lines) at the end."""
    profiles = f"profiles: {{bucket: {bucket}}}\n" if bucket is not None else ""
    config = root / "regbot.yml"
    config.write_text(
        f"repository: {repository}\n"
        f"sources: {{profiles: [profiles/]{extra_sources}}}\n"
        f"{profiles}"
        "workloads:\n"
        "  default:\n"
        "    threshold: {relative: 0.05}\n"
        f"    windows: {{{windows}}}\n"
        "state: state/regbot.db\n" + extra
    )
    return config


def run_argv(
    config: Path, *extra: str, deploy: str, previous: str, deployed_at: int, output: Path | None
) -> list[str]:
    """The arguments of `regbot run` for ``deploy`` (after ``previous``, deployed at
    ``deployed_at``) with the report written to ``output`` (None: no report file); ``extra``
    follows them."""
    written = ["-o", str(output)] if output is not None else []
    return [
        "run",
        "-c",
        str(config),
        "--deploy",
        deploy,
        "--previous",
        previous,
        "--deployed-at",
        str(deployed_at),
        *written,
        *extra,
    ]
