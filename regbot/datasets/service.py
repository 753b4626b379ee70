"""A seeded, self-contained scenario of a Python service deployed several times, for `regbot demo`
and the attribution benchmark: a real git repository, py-spy-style folded profiles, metric series
and a ``regbot.yml``, with one planted regression, decoy commits and planted false alarms.

What is built in the given directory::

    repo/            a git repository (branch main) holding the service: app/*.py (11 or 12
                     modules, 41-51 functions and methods forming a call graph), README, docs,
                     tests, config; a few dozen commits across ``deploys`` deploys
    profiles/        <epoch>-web01.folded, one per 10-minute bucket over the deploys' windows
                     (492 files, about 20 MB)
    metrics/         service.csv (SPEC §2 long format)
    state/           where `regbot run` keeps its state; its deploy log holds the deploys
                     before the last (as the runs after them would have left it)
    regbot.yml       repository, sources, windows, attribution and dedup settings (SPEC §5)

**The service.** Modules: ``main``, ``server`` (``serve_forever``, ``handle_request``),
``views`` (the handlers), ``auth``, 4-5 domain modules (orders, catalog, cart, ...; some hold a
class whose methods are called through a module-level instance) and 3 infrastructure modules
(db, cache, codec, ...). Some domain modules keep their last two functions as private helpers: the
heavy leaves of one public function. Its source is generated from a cost model, so the two agree
exactly: every
function has a work loop (``for i in range(N)``, N = its self cost in work units) and calls its
callees, once or in a loop (``for _ in range(c)``: c calls per call). ``handle_request``
dispatches each request to one handler by ``request % 10`` (the request mix, in tenths).
``serve_forever`` is an open loop: a fixed request rate, asleep between requests, so a slower
function raises the service's CPU, not its latency alone. Calls only go from a module to a
later module (or to a later function of the same module), so the call graph is a DAG and every
module imports cleanly.

**Profiles.** Per request, the work of a call path ending in function f is the product of the
call counts along the path times f's work; a path's share of all samples is that times a
constant chosen so the service is 35-55% busy at the first deploy, times the bucket's request
rate (noise of 1.5%) and the handler mix's noise (3% per handler). The rest is idle. Each bucket's
counts are drawn from that multinomial with 2,400-4,800 samples (py-spy at 4-8 Hz with
``--idle``). Frames are written as ``py-spy record -f raw`` writes them for Python 3.11:
``qualname (app/module.py:LINE)`` (``Class.method`` for methods), where LINE is the line the frame
was executing in the source of the deploy that was running: the call line for callers, the loop
line (20% of self samples) or the loop body line (80%) for the leaf; idle samples stop in
``serve_forever`` at its ``time.sleep`` line. Only the last deploy changes costs; the earlier ones
move lines (edits above and inside functions) but not costs.

**The culprit** is one commit of the last deploy, at a random position among its commits:

* ``slower``: one function F's work rises by a factor (its gCPU rises by 0.5-3 points);
  ``culprit_function`` is F's series;
* ``caller_calls_more``: a caller A calls a leaf B more times per call; B's gCPU rises, and
  ``culprit_function`` is B's series (B is a leaf so that the rise is seen in one subroutine's
  series, the one detection reports after collapsing the cascade of callers).

**Decoys** (``Scenario.decoys``, kind → sha; each a commit of the last deploy, each planted when
the call graph allows it):

* ``caller_all_stacks``: a neutral edit of the deepest function on every call path of the
  regressed function T (``handle_request`` at worst; the caller A itself is the culprit's);
* ``caller``: a neutral edit of an ancestor of T on some of its paths only;
* ``sibling``: a function called by one of T's callers, not on T's paths;
* ``callee``: a function T calls (``slower`` only; B is a leaf);
* ``names_function``: a commit whose title names T but that edits an unrelated function;
* ``same_function`` (in about 30% of seeds): a commit touching the culprit's own function without
  changing its cost, so two commits touched the regressed code: truly ambiguous, where a low
  confidence is the right answer;
* ``regressed_function`` (``caller_calls_more``, about 25% of seeds): a neutral edit of B, below
  the culprit's A on every regressed stack;
* ``cost_shift``: the commit of the cost-shift false alarm below.

**Planted false alarms** (``Scenario.planted_false_alarms``): the gCPU series of a leaf Y that
takes over work from a sibling X inside their only caller P (P's inclusive cost stays flat: a
cost shift, planted in the last deploy; the culprit is then planted outside P's subtree; in about
60% of seeds, those whose call graph has two private helpers heavy enough); ``upstream_p99`` with a
transient
spike after the deploy that goes away; ``report_queue_wait`` with a daily cycle that rises through
the analysis window; ``memory_rss``, noise only. ``latency_p50`` rises with the culprit (a real
regression, not planted as a false alarm) and ``throughput`` stays flat.

**History.** The first deploy is the initial import and 1-3 commits; each later deploy has
``commits_per_deploy`` non-merge commits (the last one at least the culprit and its decoys), plus
merge commits. Every commit has fixed author and committer dates; titles follow a per-seed mix of
styles (conventional commits ``perf(orders): ...``, terse ``wip``, descriptive titles that name
functions, ticket references ``[SVC-123] ...``). Changes land as direct pushes, squash merges
(``title (#N)``) or PR branches merged with a merge commit (``Merge pull request #N from
org/branch``, as ``--no-ff`` does, sometimes with a direct push landing while the PR was open).
The history is written with one ``git fast-import`` (a real repository, the same objects ``git
commit`` and ``git merge --no-ff`` would make, in milliseconds instead of hundreds of git calls),
then checked out; the same seed gives the same shas.

**Timeline.** Windows of 3 days (historical), 4 hours (analysis) and 6 hours (extended); the
first deploy starts the profiles, the last one is 3 days later at a random time of day, the
others evenly between. Deploy times fall on bucket starts.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from regbot.bot.state import open_state
from regbot.errors import InputError
from regbot.git_repository import GitFailure, GitRepository, require_git

ScenarioKind = Literal["slower", "caller_calls_more"]
SCENARIO_KINDS: tuple[ScenarioKind, ...] = ("slower", "caller_calls_more")

BUCKET_S = 600
HISTORICAL_S = 3 * 86_400
ANALYSIS_S = 4 * 3_600
EXTENDED_S = 6 * 3_600
HOST = "web01"
FIRST_DAY_S = 1_789_948_800  # 2026-09-21T00:00:00Z; each seed starts a few days later
CALLER_CALLS_MORE_SHARE = 0.25
SAME_FUNCTION_SHARE = 0.3
REGRESSED_FUNCTION_SHARE = 0.25
MIN_FUNCTIONS = 40
MAX_STACKS = 200  # call paths of one deploy's service (×2 lines per leaf in the folded files)

_DAY_S = 86_400
_LOOP_LINE_SHARE = 0.2  # of a function's self samples, on its `for` line; the rest on the body
_GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0"}
_GIT_IDENTITY = ("-c", "user.name=regbot", "-c", "user.email=regbot@example.com")
_NEEDS_GIT = "regbot's scenarios make a repository"


@dataclass
class Scenario:
    """What ``build_scenario`` made, and the truth behind it.

    ``deploys`` are ``(sha, time_s)`` oldest first; the last one holds the culprit.
    ``culprit_function`` is the regressed subroutine's gCPU series id
    (``gcpu:qualname (app/module.py)``); ``decoys`` maps a decoy kind (see the module
    docstring) to its commit; ``planted_false_alarms`` are series ids that must not be reported.
    ``details`` holds the numbers behind the plant (factor, gCPU rise, whether it is ambiguous,
    the culprit's position among the deploy's commits, ...).
    """

    root: Path
    config_path: Path
    repo_path: Path
    deploys: list[tuple[str, float]]
    culprit_sha: str
    culprit_function: str
    decoys: dict[str, str]
    planted_false_alarms: list[str]
    kind: ScenarioKind
    seed: int = 0
    profiles_dir: Path = Path()
    series_dir: Path = Path()
    state_path: Path = Path()
    windows_s: tuple[float, float, float] = (HISTORICAL_S, ANALYSIS_S, EXTENDED_S)
    details: dict[str, object] = field(default_factory=dict)

    @property
    def deploy_sha(self) -> str:
        return self.deploys[-1][0]

    @property
    def previous_sha(self) -> str:
        return self.deploys[-2][0]

    @property
    def deployed_at_s(self) -> float:
        return self.deploys[-1][1]

    @property
    def window_s(self) -> tuple[float, float]:
        """The last deploy's run windows, historical start to extended end."""
        historical, analysis, extended = self.windows_s
        return self.deployed_at_s - historical, self.deployed_at_s + analysis + extended

    def run_arguments(self, output: Path | None = None) -> list[str]:
        """`regbot run --dry-run` arguments for the last deploy (for ``regbot.bot.cli.main``)."""
        arguments = [
            "run",
            "-c",
            str(self.config_path),
            "--deploy",
            self.deploy_sha,
            "--previous",
            self.previous_sha,
            "--deployed-at",
            str(int(self.deployed_at_s)),
            "--dry-run",
        ]
        return arguments + (["-o", str(output)] if output is not None else [])


# =============================================================================================
# The service model.


@dataclass
class _Call:
    """One call site: ``count`` calls per call of the caller, or, for ``handle_request``'s
    dispatch, ``tenths`` of the requests."""

    callee: str
    count: int = 1
    tenths: int | None = None

    @property
    def per_call(self) -> float:
        return self.tenths / 10 if self.tenths is not None else float(self.count)


@dataclass
class _Function:
    """A function or method; ``work`` is its loop count (its self cost in work units)."""

    key: str
    module: str
    name: str
    cls: str | None
    work: int
    calls: list[_Call]
    doc: str
    notes: list[str] = field(default_factory=list)
    salt: int = 31
    local: str = "total"
    guard: bool = False

    @property
    def qualname(self) -> str:
        return f"{self.cls}.{self.name}" if self.cls else self.name

    @property
    def path(self) -> str:
        return f"app/{self.module}.py"

    @property
    def subroutine(self) -> str:
        return f"{self.qualname} ({self.path})"


@dataclass
class _Module:
    name: str
    doc: str
    cls: str | None
    functions: list[str]

    @property
    def instance(self) -> str | None:
        return re.sub(r"(?<!^)(?=[A-Z])", "_", self.cls).upper() if self.cls else None


@dataclass
class _State:
    """The repository's content at one commit: the service model and the other files."""

    service: str
    modules: dict[str, _Module]  # in call order: a module calls only later ones
    functions: dict[str, _Function]
    files: dict[str, str]


SERVER, HANDLE = "server", "server:handle_request"

# Vocabulary: (module, class or None, function names); a module uses a prefix of its names.
_HANDLERS = "get_order list_products checkout search_catalog get_profile update_cart track_shipment"
_AUTH = "authenticate verify_signature load_session check_scopes"
_DOMAIN: tuple[tuple[str, str | None, str], ...] = (
    (
        "orders",
        "OrderService",
        "load_order price_order validate_order apply_discounts summarize_lines attach_invoices",
    ),
    (
        "catalog",
        None,
        "find_products rank_results filter_available load_category merge_variants "
        "collect_facets paginate",
    ),
    ("cart", "CartStore", "load_cart merge_items reserve_stock compute_totals expire_holds"),
    (
        "users",
        None,
        "load_profile resolve_preferences check_permissions recent_activity audit_access",
    ),
    ("pricing", "PriceEngine", "quote convert_currency tax_for round_amount bundle_discount"),
    (
        "search",
        None,
        "tokenize_query score_documents expand_synonyms highlight_terms dedupe_hits spell_check",
    ),
    (
        "inventory",
        "StockLedger",
        "available_units reserve_units reconcile warehouse_for restock_eta",
    ),
    ("shipping", None, "estimate_delivery choose_carrier zone_for_address pack_parcels label_for"),
)
_INFRA: tuple[tuple[str, str | None, str], ...] = (
    ("db", "Connection", "execute fetch_rows decode_row build_query bind_params"),
    ("cache", None, "get_cached make_key store_value evict_expired warm_up"),
    ("codec", None, "encode_response decode_fields escape_text compress_payload write_header"),
    ("util", None, "hash_bytes normalize_text parse_timestamp clamp_quantity retry_delay"),
    ("templates", "Renderer", "render_template format_money expand_includes cache_fragment"),
)
_MODULE_DOCS = {
    "server": "The request loop: an open loop serving a fixed request rate.",
    "views": "HTTP handlers, one per endpoint.",
    "auth": "Request authentication and sessions.",
    "orders": "Orders: loading, pricing and validation.",
    "catalog": "The product catalog.",
    "cart": "Shopping carts.",
    "users": "User profiles and permissions.",
    "pricing": "Prices, currencies and taxes.",
    "search": "Full-text search over the catalog.",
    "inventory": "Stock levels per warehouse.",
    "shipping": "Delivery estimates and carriers.",
    "db": "The database connection.",
    "cache": "An in-process cache.",
    "codec": "Request and response encoding.",
    "util": "Small helpers.",
    "templates": "HTML templates.",
}
_SERVICES = ("shop", "storefront", "market", "bazaar")
_SALTS = (31, 37, 41, 43, 47, 53)
_LOCALS = ("total", "acc", "result", "value")


_DOC_FORMS = 4


def _doc_of(name: str, variant: int = 0) -> str:
    words = name.replace("_", " ")
    forms = (
        f"{words.capitalize()} for one request.",
        f"{words.capitalize()}; called once per request on the hot path.",
        f"{words.capitalize()} (see docs/ for the data model).",
        f"Return the {words} of the request.",
    )
    return forms[variant % len(forms)]


def _count(rng: np.random.Generator) -> int:
    return int(rng.choice([1, 2, 3, 4], p=[0.65, 0.2, 0.1, 0.05]))


def _work(rng: np.random.Generator, median: float) -> int:
    return int(np.clip(round(float(rng.lognormal(np.log(median), 0.8)) / 10) * 10, 40, 8000))


def _generate_service(rng: np.random.Generator) -> _State:
    """Modules, functions (at least ``MIN_FUNCTIONS``) and a call graph (see the module
    docstring); rewired until its call paths are few enough for small profiles."""
    service = str(rng.choice(_SERVICES))
    domain_order = [int(i) for i in rng.permutation(len(_DOMAIN))]
    domain_count = int(rng.integers(4, 6))
    infra_picks = sorted(int(i) for i in rng.choice(len(_INFRA), size=3, replace=False))
    handlers = [str(h) for h in rng.choice(_HANDLERS.split(), int(rng.integers(3, 6)), False)]
    auth = _AUTH.split()[: int(rng.integers(2, 5))]
    full = {name: names.split() for name, _, names in (*_DOMAIN, *_INFRA)}

    def pick(entry: tuple[str, str | None, str], least: int) -> tuple[str, str | None, list[str]]:
        names = full[entry[0]]
        return entry[0], entry[1], names[: int(rng.integers(least, len(names) + 1))]

    domain = [pick(_DOMAIN[i], 4) for i in domain_order[:domain_count]]
    infra = [pick(_INFRA[i], 3) for i in infra_picks]
    while 2 + len(handlers) + len(auth) + sum(len(e[2]) for e in domain + infra) < MIN_FUNCTIONS:
        growing = [e for e in domain + infra if len(e[2]) < len(full[e[0]])]
        if growing:
            entry = growing[int(rng.integers(len(growing)))]
            entry[2].append(full[entry[0]][len(entry[2])])
        else:
            domain.append(pick(_DOMAIN[domain_order[len(domain)]], 4))
    layout = [("views", None, handlers), ("auth", None, auth), *domain, *infra]
    for _ in range(50):
        state = _wire(rng, service, layout, len(domain))
        if len(_call_paths(state)) <= MAX_STACKS:
            return state
    return state


def _wire(
    rng: np.random.Generator,
    service: str,
    layout: list[tuple[str, str | None, list[str]]],
    domain_count: int,
) -> _State:
    """Functions with work and calls for one module layout (views, auth, the domain modules,
    three infrastructure modules). Some domain modules keep their last two functions as private
    helpers: leaves called by one public function of the module only."""
    modules: dict[str, _Module] = {SERVER: _Module(SERVER, _MODULE_DOCS[SERVER], None, [HANDLE])}
    functions: dict[str, _Function] = {
        HANDLE: _Function(HANDLE, SERVER, "handle_request", None, _work(rng, 150), [], "")
    }
    functions[HANDLE].doc = "Handle one request: authenticate, dispatch, encode the response."
    order: list[str] = [HANDLE]
    rank: dict[str, int] = {SERVER: 0}
    for r, (module, cls, names) in enumerate(layout, start=1):
        rank[module] = r
        keys = []
        for name in names:
            key = f"{module}:{cls + '.' if cls else ''}{name}"
            median = 250 if module in ("views", "auth") else 700  # dispatchers are light
            functions[key] = _Function(
                key, module, name, cls, _work(rng, median), [], _doc_of(name, int(rng.integers(4)))
            )
            keys.append(key)
            order.append(key)
        modules[module] = _Module(module, _MODULE_DOCS[module], cls, keys)
    domain = [m for m, _, _ in layout[2 : 2 + domain_count]]
    infra = [m for m, _, _ in layout[2 + domain_count :]]
    public = {m: modules[m].functions[:2] for m in modules if m != SERVER}
    private: set[str] = set()
    for module in domain:
        keys = modules[module].functions
        if len(keys) >= 5 and rng.random() < 0.8:
            owner = public[module][int(rng.integers(2))]
            for helper in keys[-2:]:
                functions[owner].calls.append(_Call(helper, _count(rng)))
                functions[helper].work = _work(rng, 1500)  # where the module's work is done
                private.add(helper)

    def later(key: str) -> list[str]:
        """Functions ``key`` may call: later modules, or later functions of its own module
        (private helpers only by their owner, which already calls them)."""
        f = functions[key]
        own = modules[f.module].functions
        mine = own[own.index(key) + 1 :]
        others = [k for k in order if rank[functions[k].module] > rank[f.module]]
        return [k for k in mine + others if k not in private]

    def add(caller: str, callee: str, count: int | None = None) -> None:
        if callee not in [c.callee for c in functions[caller].calls]:
            functions[caller].calls.append(_Call(callee, count or _count(rng)))

    # handle_request: authenticate, dispatch to the handlers by the request mix, encode.
    functions[HANDLE].calls.append(_Call(modules["auth"].functions[0], 1))
    mix = rng.dirichlet(np.full(len(modules["views"].functions), 2.0))
    tenths = np.maximum(1, np.round(mix * 10)).astype(int)
    while tenths.sum() > 10:
        tenths[int(np.argmax(tenths))] -= 1
    while tenths.sum() < 10:
        tenths[int(np.argmin(tenths))] += 1
    for handler, share in zip(modules["views"].functions, tenths, strict=True):
        functions[HANDLE].calls.append(_Call(handler, 1, int(share)))
    functions[HANDLE].calls.append(_Call(modules[infra[-1]].functions[0], 1))
    for key in modules["views"].functions:
        targets = [k for m in domain for k in public[m]]
        for callee in rng.choice(targets, size=int(rng.integers(2, 4)), replace=False):
            add(key, str(callee))
        if rng.random() < 0.4:
            add(key, str(rng.choice([k for m in infra for k in modules[m].functions])))
    for key in modules["auth"].functions:
        options = later(key)
        own = [k for k in options if functions[k].module == "auth"]
        if key == modules["auth"].functions[0] and own:
            for callee in rng.choice(own, size=min(len(own), 2), replace=False):
                add(key, str(callee), 1)
        add(key, str(rng.choice([k for k in options if functions[k].module in infra])))
    for module in [*domain, *infra]:
        for key in modules[module].functions:
            options = later(key) if key not in private else []
            if not options:
                continue
            own = [k for k in options if functions[k].module == module]
            wanted = int(rng.integers(1, 4) if key in public[module] else rng.integers(0, 3))
            for _ in range(wanted):
                pool = own if own and rng.random() < 0.5 else options
                add(key, str(rng.choice(pool)))
    called = {c.callee for f in functions.values() for c in f.calls}
    for key in order[1:]:
        if key in called or key in private:
            continue
        callers = [k for k in order if key in later(k) and k != HANDLE]
        callers = [k for k in callers if _reachable(functions, k)] or [HANDLE]
        add(str(rng.choice(callers)), key)
        called.add(key)
    return _State(service, modules, functions, _initial_files(service, modules))


def _reachable(functions: dict[str, _Function], key: str) -> bool:
    seen, stack = set(), [HANDLE]
    while stack:
        current = stack.pop()
        if current == key:
            return True
        if current not in seen:
            seen.add(current)
            stack.extend(c.callee for c in functions[current].calls)
    return False


def _initial_files(service: str, modules: dict[str, _Module]) -> dict[str, str]:
    listing = "\n".join(f"- `app/{m}.py`: {modules[m].doc}" for m in modules)
    return {
        "README.md": f"# {service}\n\nThe {service} web service.\n\n## Modules\n\n{listing}\n",
        "docs/operations.md": f"# Operating {service}\n\nDeploys go out from main.\n",
        "config/service.yaml": "workers: 4\ncache_ttl_s: 60\npool_size: 8\n",
        ".gitignore": "__pycache__/\n*.pyc\n",
    }


# =============================================================================================
# Rendering the source, and where each frame's line is.


@dataclass(frozen=True)
class _Lines:
    loop: int
    body: int
    calls: tuple[int, ...]


@dataclass(frozen=True)
class _Rendered:
    files: dict[str, str]
    lines: dict[str, _Lines]
    module_line: int  # main.py's `main()` call
    main_line: int  # main()'s call of serve_forever
    serve_line: int  # serve_forever's call of handle_request
    idle_line: int  # serve_forever's time.sleep


def _call_expression(caller: _Function, callee: _Function, modules: dict[str, _Module]) -> str:
    if callee.module == caller.module:
        return f"self.{callee.name}" if callee.cls else callee.name
    if callee.cls:
        return f"{callee.module}.{modules[callee.module].instance}.{callee.name}"
    return f"{callee.module}.{callee.name}"


def _function_lines(
    fn: _Function, state: _State, out: list[str]
) -> tuple[int, int, tuple[int, ...]]:
    """Append ``fn``'s source to ``out``; its loop, body and call lines (1-based)."""
    pad = "    " if fn.cls else ""
    params = "self, request" if fn.cls else "request"
    out.append(f"{pad}def {fn.name}({params}):")
    out.append(f'{pad}    """{fn.doc}"""')
    out.extend(f"{pad}    # {note}" for note in fn.notes)
    if fn.guard:
        out += [f"{pad}    if request is None:", f"{pad}        return 0"]
    acc = fn.local
    out.append(f"{pad}    {acc} = 0")
    out.append(f"{pad}    for i in range({fn.work}):")
    loop = len(out)
    out.append(f"{pad}        {acc} = ({acc} * {fn.salt} + i) % 1000003")
    body = len(out)
    calls: list[int] = []
    dispatch = [i for i, c in enumerate(fn.calls) if c.tenths is not None]
    cumulative = 0
    for i, call in enumerate(fn.calls):
        expression = _call_expression(fn, state.functions[call.callee], state.modules)
        if call.tenths is not None:
            if i == dispatch[0]:
                out.append(f"{pad}    kind = request % 10")
            cumulative += call.tenths
            if i == dispatch[-1]:
                out.append(f"{pad}    else:")
            else:
                out.append(f"{pad}    {'if' if i == dispatch[0] else 'elif'} kind < {cumulative}:")
            out.append(f"{pad}        {acc} += {expression}(request)")
        elif call.count == 1:
            out.append(f"{pad}    {acc} += {expression}(request)")
        else:
            out.append(f"{pad}    for _ in range({call.count}):")
            out.append(f"{pad}        {acc} += {expression}(request)")
        calls.append(len(out))
    out.append(f"{pad}    return {acc}")
    return loop, body, tuple(calls)


def _render(state: _State) -> _Rendered:
    files: dict[str, str] = {"app/__init__.py": f'"""The {state.service} service."""\n'}
    lines: dict[str, _Lines] = {}
    serve_line = idle_line = 0
    for module in state.modules.values():
        out = [f'"""{module.doc}"""', ""]
        if module.name == SERVER:
            out += ["import time", ""]
        imported = sorted(
            {
                state.functions[c.callee].module
                for key in module.functions
                for c in state.functions[key].calls
                if state.functions[c.callee].module != module.name
            }
        )
        if imported:
            out += [f"from app import {', '.join(imported)}", ""]
        if module.name == SERVER:
            out += ["TICK_S = 0.05", "", ""]
            out += [
                "def serve_forever(rate):",
                '    """Serve ``rate`` requests per tick and sleep for the rest of it (open loop)."""',
                "    request = 0",
                "    while True:",
                "        started = time.monotonic()",
                "        for _ in range(rate):",
                "            request += 1",
                "            handle_request(request)",
            ]
            serve_line = len(out)
            out.append("        time.sleep(max(0.0, TICK_S - (time.monotonic() - started)))")
            idle_line = len(out)
        while out[-1] == "":
            out.pop()
        if module.cls:
            out += ["", "", f"class {module.cls}:", f'    """{module.doc}"""']
        for key in module.functions:
            out += [""] if module.cls else ["", ""]
            loop, body, calls = _function_lines(state.functions[key], state, out)
            lines[key] = _Lines(loop, body, calls)
        if module.cls:
            out += ["", "", f"{module.instance} = {module.cls}()"]
        files[f"app/{module.name}.py"] = "\n".join(out) + "\n"
    main = [
        f'"""Entry point of the {state.service} service."""',
        "",
        "from app import server",
        "",
        "REQUESTS_PER_TICK = 20",
        "",
        "",
        "def main():",
        '    """Run the request loop."""',
        "    server.serve_forever(REQUESTS_PER_TICK)",
    ]
    main_line = len(main)
    main += ["", "", 'if __name__ == "__main__":', "    main()"]
    files["app/main.py"] = "\n".join(main) + "\n"
    files.update(state.files)
    return _Rendered(files, lines, len(main), main_line, serve_line, idle_line)


# =============================================================================================
# Call paths, costs, stacks.


def _call_paths(state: _State) -> list[tuple[tuple[str, ...], tuple[int, ...], float]]:
    """Every call path from handle_request: (function keys, call-site index taken at each
    step, calls per request of its last function)."""
    paths: list[tuple[tuple[str, ...], tuple[int, ...], float]] = []

    def visit(keys: tuple[str, ...], sites: tuple[int, ...], per_request: float) -> None:
        paths.append((keys, sites, per_request))
        for i, call in enumerate(state.functions[keys[-1]].calls):
            visit((*keys, call.callee), (*sites, i), per_request * call.per_call)

    visit((HANDLE,), (), 1.0)
    return paths


@dataclass(frozen=True)
class _Costs:
    """Per request: each function's calls and self work; per call: its inclusive work."""

    calls: dict[str, float]
    inclusive: dict[str, float]
    total: float

    def self_work(self, state: _State, key: str) -> float:
        return self.calls.get(key, 0.0) * state.functions[key].work


def _costs(state: _State) -> _Costs:
    calls: dict[str, float] = {}
    for keys, _, per_request in _call_paths(state):
        calls[keys[-1]] = calls.get(keys[-1], 0.0) + per_request
    inclusive: dict[str, float] = {}

    def inclusive_of(key: str) -> float:
        if key not in inclusive:
            f = state.functions[key]
            inclusive[key] = f.work + sum(c.per_call * inclusive_of(c.callee) for c in f.calls)
        return inclusive[key]

    return _Costs(calls, {k: inclusive_of(k) for k in state.functions}, inclusive_of(HANDLE))


@dataclass(frozen=True)
class _Stacks:
    """One deploy's folded stacks: text, work per request, the handle_request call each runs
    under (0: its own code, i + 1: call site i) for the request-mix noise."""

    texts: list[str]
    work: np.ndarray
    group: np.ndarray
    idle: str
    total_work: float


def _stacks(state: _State, rendered: _Rendered) -> _Stacks:
    root = [
        f"<module> (app/main.py:{rendered.module_line})",
        f"main (app/main.py:{rendered.main_line})",
    ]
    serve = f"serve_forever (app/server.py:{rendered.serve_line})"
    texts: list[str] = []
    work: list[float] = []
    group: list[int] = []
    for keys, sites, per_request in _call_paths(state):
        frames = [*root, serve]
        for key, site in zip(keys[:-1], sites, strict=True):
            f = state.functions[key]
            frames.append(f"{f.qualname} ({f.path}:{rendered.lines[key].calls[site]})")
        leaf = state.functions[keys[-1]]
        lines = rendered.lines[keys[-1]]
        own = per_request * leaf.work
        for line, share in ((lines.loop, _LOOP_LINE_SHARE), (lines.body, 1 - _LOOP_LINE_SHARE)):
            texts.append(";".join([*frames, f"{leaf.qualname} ({leaf.path}:{line})"]))
            work.append(own * share)
            group.append(sites[0] + 1 if sites else 0)
    idle = ";".join([*root, f"serve_forever (app/server.py:{rendered.idle_line})"])
    return _Stacks(texts, np.array(work), np.array(group), idle, float(sum(work)))


# =============================================================================================
# Edits (what one commit does to the state) and their messages.

Edit = Callable[[_State], None]

_NEUTRAL_VARIANTS = ("note", "doc", "local", "salt", "guard")


def _neutral(key: str, variant: str, seed: int) -> Edit:
    """A change to a function's text that leaves its cost as it is."""

    def edit(state: _State) -> None:
        f = state.functions[key]
        chosen = "note" if variant == "guard" and f.guard else variant
        if chosen == "note":
            f.notes.append(
                (
                    "Keep this loop branch-free: it runs once per request.",
                    "The modulus keeps the accumulator small (see docs/operations.md).",
                    "Order matters here: callers rely on a stable result.",
                    f"Checked against production traces (ticket {seed % 900 + 100}).",
                )[(seed + len(f.notes)) % 4]
            )
        elif chosen == "doc":
            forms = [_doc_of(f.name, i) for i in range(_DOC_FORMS)]
            current = forms.index(f.doc) if f.doc in forms else -1
            f.doc = forms[(current + 1 + seed % (_DOC_FORMS - 1)) % _DOC_FORMS]
        elif chosen == "local":
            f.local = _LOCALS[(_LOCALS.index(f.local) + 1 + seed % 3) % len(_LOCALS)]
        elif chosen == "salt":
            others = [s for s in _SALTS if s != f.salt]
            f.salt = others[seed % len(others)]
        else:
            f.guard = True

    return edit


def _slower(key: str, work: int, note: str | None) -> Edit:
    def edit(state: _State) -> None:
        state.functions[key].work = work
        if note:
            state.functions[key].notes.append(note)

    return edit


def _calls_more(caller: str, callee: str, count: int) -> Edit:
    def edit(state: _State) -> None:
        for call in state.functions[caller].calls:
            if call.callee == callee:
                call.count = count

    return edit


def _shift(source: str, target: str, less: int, more: int) -> Edit:
    def edit(state: _State) -> None:
        state.functions[source].work -= less
        state.functions[target].work += more

    return edit


def _append_file(path: str, text: str, header: str = "") -> Edit:
    """Append ``text`` to a file, which starts with ``header`` when this creates it."""

    def edit(state: _State) -> None:
        state.files[path] = state.files.get(path, header) + text

    return edit


# Role phrases: (conventional type, title naming the function(s), title that does not).
_PHRASES: dict[str, tuple[tuple[str, str, str], ...]] = {
    "slower": (
        ("fix", "validate every field in {f}", "validate every field"),
        ("feat", "handle legacy records in {f}", "handle legacy records"),
        ("perf", "use exact decimal math in {f}", "use exact decimal math"),
        ("fix", "recompute checksums in {f}", "recompute checksums on read"),
        ("refactor", "normalize input inside {f}", "normalize input earlier"),
    ),
    "calls_more": (
        ("fix", "retry {g} in {f} until it succeeds", "retry flaky lookups"),
        ("feat", "fetch every page in {f}", "fetch every page"),
        ("fix", "call {g} for each item in {f}", "look items up one by one"),
        ("fix", "re-read {g} results in {f} for consistency", "re-read results for consistency"),
    ),
    "note": (
        ("docs", "explain the loop in {f}", "explain a hot loop"),
        ("docs", "comment on ordering in {f}", "comment on ordering"),
    ),
    "doc": (("docs", "clarify the {f} docstring", "clarify docstrings"),),
    "local": (("refactor", "rename a local in {f}", "rename locals"),),
    "salt": (("refactor", "use a prime multiplier in {f}", "use prime multipliers"),),
    "guard": (("fix", "guard {f} against empty requests", "guard against empty requests"),),
    "names_function": (
        ("perf", "prepare {t} for batching in {g}", "prepare {t} for batching"),
        ("refactor", "move {t} constants next to {g}", "move {t} constants"),
        ("perf", "speed up {t} callers by trimming {g}", "speed up {t} callers"),
        ("fix", "follow-up to the {t} review: tidy {g}", "follow-up to the {t} review"),
    ),
    "cost_shift": (
        ("refactor", "move the {f} checks into {g}", "move checks between helpers"),
        ("refactor", "fold {f} validation into {g}", "fold validation into one place"),
    ),
    "docs": (
        ("docs", "document the {m} module", "update the README"),
        ("docs", "describe {m} in the runbook", "fix typos in the runbook"),
    ),
    "tests": (
        ("test", "cover {f} edge cases", "add tests"),
        ("test", "add a regression test for {f}", "more tests"),
    ),
    "config": (
        ("chore", "raise the cache TTL", "tune config"),
        ("chore", "bump the connection pool", "bump pool size"),
        ("chore", "run more workers", "update service config"),
    ),
}
_TERSE = ("wip", "fix", "fix tests", "address review comments", "cleanup", "tweaks", "update")
_STYLES = ("conventional", "terse", "descriptive", "ticket")
_AUTHORS = (
    ("Ada Lindqvist", "ada"),
    ("Bram Okafor", "bram"),
    ("Chen Wei", "chen"),
    ("Dana Ruiz", "dana"),
    ("Emeka Obi", "emeka"),
    ("Freya Holm", "freya"),
    ("Gil Navon", "gil"),
)


class _Messages:
    """Commit titles and bodies in the seed's team style (a mix of the four styles)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.weights = rng.dirichlet(np.full(len(_STYLES), 0.8))
        self.prefix = str(rng.choice(["SVC", "SHOP", "PLAT", "CORE"]))
        self.ticket = int(rng.integers(100, 900))
        self.authors = [_AUTHORS[int(i)] for i in rng.choice(len(_AUTHORS), size=5, replace=False)]

    def style(self) -> str:
        return str(self.rng.choice(_STYLES, p=self.weights))

    def message(self, role: str, must_name: bool = False, **names: str) -> tuple[str, str]:
        """(title, body) for a change of ``role``; ``names`` fill the phrase (f, g, t, m)."""
        kind, named, vague = _PHRASES[role][int(self.rng.integers(len(_PHRASES[role])))]
        style = self.style()
        if must_name and style == "terse":
            style = "descriptive"
        use_named = must_name or style == "descriptive" or self.rng.random() < 0.5
        phrase = (named if use_named else vague).format(**names)
        scope = names.get("m", "app")
        if style == "terse":
            title = str(self.rng.choice(_TERSE))
        elif style == "conventional":
            title = f"{kind}({scope}): {phrase}"
        elif style == "ticket":
            self.ticket += int(self.rng.integers(1, 40))
            title = f"[{self.prefix}-{self.ticket}] {phrase[0].upper()}{phrase[1:]}"
        else:
            title = phrase[0].upper() + phrase[1:]
        body = ""
        if self.rng.random() < 0.35:
            sentence = named.format(**names)
            reviewer, handle = self.authors[int(self.rng.integers(len(self.authors)))]
            body = (
                f"{sentence[0].upper()}{sentence[1:]}.\n\n"
                f"Reviewed-by: {reviewer} <{handle}@example.com>"
            )
        return title, body


# =============================================================================================
# The history.


@dataclass
class _Change:
    """One non-merge commit of the plan."""

    role: str
    edit: Edit
    title: str
    body: str
    author: int
    touches: frozenset[str]  # function keys and file paths, for conflict-free interleaving


@dataclass
class _Event:
    """How changes reach main: a direct push, a squash merge, or a PR merged with a merge
    commit (``interleaved``: a direct push that landed while the PR was open)."""

    kind: Literal["direct", "squash", "merge"]
    changes: list[_Change]
    pr: int | None = None
    interleaved: _Change | None = None


@dataclass
class _Commit:
    mark: int
    parents: list[int]
    author: tuple[str, str]
    time_s: int
    message: str
    changed: dict[str, str | None]  # path -> new text (None: deleted)


class _History:
    """Commits as they will be written, with the state and files at each mark."""

    def __init__(self, messages: _Messages) -> None:
        self.messages = messages
        self.commits: list[_Commit] = []
        self.files: dict[int, dict[str, str]] = {0: {}}
        self.main_mark = 0
        self.main_state: _State | None = None
        self.roles: dict[str, int] = {}  # role -> mark
        self.order: list[int] = []  # non-merge marks in creation order

    def _write(
        self,
        parents: list[int],
        state: _State,
        author: tuple[str, str],
        time_s: int,
        message: str,
    ) -> int:
        mark = len(self.commits) + 1
        files = _render(state).files
        before = self.files[parents[0]] if parents else {}
        changed: dict[str, str | None] = {p: t for p, t in files.items() if before.get(p) != t}
        changed.update({p: None for p in before if p not in files})
        self.files[mark] = files
        self.commits.append(_Commit(mark, parents, author, time_s, message, changed))
        return mark

    def _author(self, change: _Change) -> tuple[str, str]:
        return self.messages.authors[change.author]

    def initial(self, state: _State, time_s: int) -> None:
        author = self.messages.authors[0]
        title = f"Initial import of the {state.service} service"
        self.main_mark = self._write([], state, author, time_s, title + "\n")
        self.main_state = state
        self.order.append(self.main_mark)

    def _apply(self, base: _State, change: _Change) -> _State:
        state = copy.deepcopy(base)
        change.edit(state)
        return state

    def _direct(self, change: _Change, time_s: int, title: str) -> None:
        assert self.main_state is not None
        state = self._apply(self.main_state, change)
        message = title + ("\n\n" + change.body if change.body else "") + "\n"
        mark = self._write(
            [self.main_mark] if self.main_mark else [], state, self._author(change), time_s, message
        )
        self.main_mark, self.main_state = mark, state
        self.roles.setdefault(change.role, mark)
        self.order.append(mark)

    def event(self, event: _Event, times: list[int]) -> None:
        """Write one event's commits, taking their times from the front of ``times``."""
        assert self.main_state is not None
        if event.kind == "direct":
            self._direct(event.changes[0], times.pop(0), event.changes[0].title)
            return
        if event.kind == "squash":
            change = event.changes[0]
            self._direct(change, times.pop(0), f"{change.title} (#{event.pr})")
            return
        base_mark, branch_state = self.main_mark, self.main_state
        for change in event.changes:
            branch_state = self._apply(branch_state, change)
            message = change.title + ("\n\n" + change.body if change.body else "") + "\n"
            base_mark = self._write(
                [base_mark], branch_state, self._author(change), times.pop(0), message
            )
            self.roles.setdefault(change.role, base_mark)
            self.order.append(base_mark)
        if event.interleaved is not None:
            self._direct(event.interleaved, times.pop(0), event.interleaved.title)
        merged = self.main_state
        for change in event.changes:
            merged = self._apply(merged, change)
        first = event.changes[0]
        words = re.sub(r"[^a-z0-9]+", " ", first.title.lower()).split()
        slug = "-".join(words[:6])
        handle = self._author(first)[1]
        message = (
            f"Merge pull request #{event.pr} from {handle}/{slug or 'patch'}\n\n{first.title}\n"
        )
        mark = self._write(
            [self.main_mark, base_mark], merged, self._author(first), times.pop(0), message
        )
        self.main_mark, self.main_state = mark, merged


def _commit_count(events: list[_Event]) -> int:
    return sum(len(e.changes) + (e.kind == "merge") + (e.interleaved is not None) for e in events)


class _PullRequests:
    """PR numbers as a repository hands them out: increasing, with gaps (issues, closed PRs)."""

    def __init__(self, first: int) -> None:
        self.last = first

    def next(self, rng: np.random.Generator) -> int:
        self.last += int(rng.integers(1, 4))
        return self.last


def _events(rng: np.random.Generator, changes: list[_Change], prs: _PullRequests) -> list[_Event]:
    """Group changes, in order, into direct pushes, squash merges and merged PR branches."""
    merge_share, squash_share = rng.uniform(0.2, 0.5), rng.uniform(0.15, 0.4)
    events: list[_Event] = []
    i = 0
    while i < len(changes):
        draw = rng.random()
        if draw < merge_share:
            size = min(int(rng.integers(1, 4)), len(changes) - i)
            group = changes[i : i + size]
            i += size
            interleaved = None
            if i < len(changes) and rng.random() < 0.3:
                touched = frozenset().union(*(c.touches for c in group))
                if not (changes[i].touches & touched):
                    interleaved = changes[i]
                    i += 1
            events.append(_Event("merge", group, prs.next(rng), interleaved))
        elif draw < merge_share + squash_share:
            events.append(_Event("squash", [changes[i]], prs.next(rng)))
            i += 1
        else:
            events.append(_Event("direct", [changes[i]]))
            i += 1
    return events


def _times(rng: np.random.Generator, count: int, start_s: int, end_s: int) -> list[int]:
    """``count`` increasing commit times inside ``(start_s, end_s)``."""
    raw = np.sort(rng.uniform(start_s + 300, end_s - 300, count)).astype(np.int64)
    return [int(t) + i for i, t in enumerate(raw)]


# =============================================================================================
# Planning the last deploy: culprit, decoys, cost shift, fillers.


class _Planner:
    def __init__(
        self, rng: np.random.Generator, state: _State, messages: _Messages, kappa: float
    ) -> None:
        self.rng = rng
        self.kappa = kappa
        self.state = state
        self.messages = messages
        self.costs = _costs(state)
        self.paths = [keys for keys, _, _ in _call_paths(state)]
        self.counter = 0

    def _seed(self) -> int:
        self.counter += 1
        return int(self.rng.integers(1 << 30)) + self.counter

    def fn(self, key: str) -> _Function:
        return self.state.functions[key]

    def names(self, key: str) -> dict[str, str]:
        return {"f": self.fn(key).name, "m": self.fn(key).module}

    def change(
        self,
        role: str,
        phrase: str,
        edit: Edit,
        touches: set[str],
        must_name: bool = False,
        **names: str,
    ) -> _Change:
        title, body = self.messages.message(phrase, must_name, **names)
        author = int(self.rng.integers(len(self.messages.authors)))
        return _Change(role, edit, title, body, author, frozenset(touches))

    def neutral(self, role: str, key: str) -> _Change:
        variant = str(self.rng.choice(_NEUTRAL_VARIANTS))
        return self.change(
            role, variant, _neutral(key, variant, self._seed()), {key}, **self.names(key)
        )

    def paths_through(self, key: str) -> list[tuple[str, ...]]:
        return [p[: p.index(key) + 1] for p in self.paths if p[-1] == key]

    def descendants(self, key: str) -> set[str]:
        return {k for p in self.paths if key in p for k in p[p.index(key) + 1 :]}

    def share(self, work: float) -> float:
        return self.kappa * work

    # --- culprit -------------------------------------------------------------------------------
    def slower(self, avoid: set[str]) -> tuple[str, _Change, dict[str, object]] | None:
        """F (not in ``avoid``): its work rises so that its gCPU rises by 0.5-3 points
        (factor 1.25-4)."""
        for _ in range(40):
            rise = float(self.rng.uniform(0.005, 0.03))
            options = []
            for key in self.state.functions:
                if key == HANDLE or key in avoid:
                    continue
                own = self.share(self.costs.self_work(self.state, key))
                if own > 0 and 1.25 <= 1 + rise / own <= 4.0:
                    options.append(key)
            if options:
                key = str(self.rng.choice(options))
                f = self.fn(key)
                own = self.share(self.costs.self_work(self.state, key))
                work = int(round(f.work * (1 + rise / own)))
                note = (
                    "Recheck every field: upstream data is not always clean."
                    if self.rng.random() < 0.4
                    else None
                )
                change = self.change(
                    "culprit", "slower", _slower(key, work, note), {key}, **self.names(key)
                )
                real = self.share(self.costs.calls[key] * (work - f.work))
                return key, change, {"factor": work / f.work, "gcpu_rise": real}
        return None

    def calls_more(self, avoid: set[str]) -> tuple[str, str, _Change, dict[str, object]] | None:
        """A caller A calls a leaf B more often (neither in ``avoid``), raising B's gCPU by
        0.5-6 points."""
        options = []
        for key, f in self.state.functions.items():
            if key == HANDLE or key in avoid:
                continue
            for call in f.calls:
                callee = self.fn(call.callee)
                if callee.calls or call.callee in avoid:
                    continue
                step = self.share(self.costs.calls.get(key, 0.0) * callee.work)
                if step <= 0:
                    continue
                extra = max(1, int(np.ceil(0.005 / step)))
                if extra <= 2 * call.count + 1 and extra * step <= 0.06:
                    options.append((key, call.callee, call.count + extra, extra * step))
        if not options:
            return None
        caller, callee, count, rise = options[int(self.rng.integers(len(options)))]
        names = {"f": self.fn(caller).name, "g": self.fn(callee).name, "m": self.fn(caller).module}
        change = self.change(
            "culprit", "calls_more", _calls_more(caller, callee, count), {caller}, **names
        )
        before = next(c.count for c in self.fn(caller).calls if c.callee == callee)
        shared = any(caller not in p for p in self.paths_through(callee))
        details = {"calls": (before, count), "gcpu_rise": rise, "callee_has_other_callers": shared}
        return caller, callee, change, details

    # --- decoys --------------------------------------------------------------------------------
    def decoys(
        self, target: str, culprit_fn: str, kind: ScenarioKind, same: bool, regressed: bool
    ) -> list[_Change]:
        paths = self.paths_through(target)
        above = [p[:-1] for p in paths]
        every = set(above[0]).intersection(*map(set, above[1:])) if above else set()
        some = set().union(*map(set, above)) - every if above else set()
        excluded = {culprit_fn, target}
        out: list[_Change] = []
        every_order = [k for k in reversed(above[0]) if k in every and k not in excluded]
        if every_order:
            out.append(self.neutral("caller_all_stacks", every_order[0]))
        partial = sorted(some - excluded)
        if partial:
            out.append(self.neutral("caller", str(self.rng.choice(partial))))
        ancestors = every | some
        below = self.descendants(target)
        siblings = sorted(
            {c.callee for p in paths if len(p) > 1 for c in self.fn(p[-2]).calls}
            - ancestors
            - below
            - excluded
        )
        if siblings:
            out.append(self.neutral("sibling", str(self.rng.choice(siblings))))
        callees = sorted({c.callee for c in self.fn(target).calls} - excluded)
        if kind == "slower" and callees:
            out.append(self.neutral("callee", str(self.rng.choice(callees))))
        unrelated = sorted(set(self.state.functions) - ancestors - below - excluded - {HANDLE})
        same_module = [k for k in unrelated if self.fn(k).module == self.fn(target).module]
        pool = same_module if same_module and self.rng.random() < 0.5 else unrelated
        if pool:
            other = str(self.rng.choice(pool))
            variant = str(self.rng.choice(_NEUTRAL_VARIANTS))
            out.append(
                self.change(
                    "names_function",
                    "names_function",
                    _neutral(other, variant, self._seed()),
                    {other},
                    must_name=True,
                    t=self.fn(target).name,
                    g=self.fn(other).name,
                    m=self.fn(other).module,
                )
            )
        if same:
            out.append(self.neutral("same_function", culprit_fn))
        if regressed:
            out.append(self.neutral("regressed_function", target))
        return out

    def cost_shift(self) -> tuple[str, str, _Change, float] | None:
        """Work moves from leaf X to leaf Y inside their only caller P: Y's gCPU rises by
        0.3-1.2 points (at most 60% of X's) while P's inclusive cost stays flat. Returns P, Y,
        the change and Y's rise; the culprit is then planted outside P's subtree, so that P
        stays flat."""
        callers: dict[str, set[str]] = {}
        for f in self.state.functions.values():
            for c in f.calls:
                callers.setdefault(c.callee, set()).add(f.key)
        options = []
        for key, f in self.state.functions.items():
            if key == HANDLE:
                continue
            leaves = [
                c for c in f.calls if not self.fn(c.callee).calls and callers[c.callee] == {key}
            ]
            for x in leaves:
                for y in leaves:
                    if x is not y:
                        options.append((key, x, y))
        self.rng.shuffle(options)
        for parent, x, y in options:
            per_call = self.costs.calls.get(parent, 0.0)
            unit = self.share(per_call * x.count * y.count)
            most = min(0.012, 0.6 * self.share(per_call * x.count * self.fn(x.callee).work))
            if unit <= 0 or most < 0.003:
                continue
            k = max(1, int(round(float(self.rng.uniform(0.003, most)) / unit)))
            less, more = k * y.count, k * x.count
            names = {"f": self.fn(x.callee).name, "g": self.fn(y.callee).name}
            names["m"] = self.fn(parent).module
            change = self.change(
                "cost_shift",
                "cost_shift",
                _shift(x.callee, y.callee, less, more),
                {x.callee, y.callee},
                **names,
            )
            return parent, y.callee, change, k * unit
        return None

    # --- fillers -------------------------------------------------------------------------------
    def filler(self, avoid: set[str]) -> _Change:
        draw = self.rng.random()
        keys = [k for k in self.state.functions if k not in avoid]
        if draw < 0.4 and keys:
            return self.neutral("filler", str(self.rng.choice(keys)))
        key = str(self.rng.choice(list(self.state.functions)))
        f = self.fn(key)
        seed = self._seed()
        if draw < 0.6:
            path = str(self.rng.choice(["README.md", "docs/operations.md", f"docs/{f.module}.md"]))
            text = (
                f"\n## {f.module} notes ({seed % 1000})\n\n`{f.qualname}` is part of {f.module}.\n"
            )
            return self.change(
                "filler", "docs", _append_file(path, text), {path}, **self.names(key)
            )
        if draw < 0.85:
            path = f"tests/test_{f.module}.py"
            call = f"{f.module}.{f.name}" if not f.cls else f"{f.module}.{f.cls}().{f.name}"
            text = f"\n\ndef test_{f.name}_{seed % 1000}():\n    assert {call}(1) >= 0\n"
            header = f"from app import {f.module}\n"
            return self.change(
                "filler", "tests", _append_file(path, text, header), {path}, **self.names(key)
            )
        path = "config/service.yaml"
        text = f"# tuned {seed % 1000}\nworkers_{seed % 97}: {seed % 16 + 1}\n"
        return self.change("filler", "config", _append_file(path, text), {path}, m="config")


# =============================================================================================
# Writing the repository.


def _git(repo: GitRepository, *args: str, stdin: bytes | None = None) -> str:
    failure = GitFailure(f"git {args[0]} in {repo.path}", "success")
    out = repo.run([*_GIT_IDENTITY, *args], failure, stdin=stdin)
    return out.decode("utf-8", "replace").strip()


def _fast_import_stream(commits: list[_Commit]) -> bytes:
    out = bytearray()

    def data(payload: bytes) -> None:
        out.extend(b"data %d\n" % len(payload))
        out.extend(payload)
        out.extend(b"\n")

    for c in commits:
        name, handle = c.author
        person = f"{name} <{handle}@example.com> {c.time_s} +0000".encode()
        out.extend(b"commit refs/heads/main\nmark :%d\n" % c.mark)
        out.extend(b"author " + person + b"\ncommitter " + person + b"\n")
        data(c.message.encode())
        if c.parents:
            out.extend(b"from :%d\n" % c.parents[0])
        for parent in c.parents[1:]:
            out.extend(b"merge :%d\n" % parent)
        for path, text in sorted(c.changed.items()):
            if text is None:
                out.extend(f"D {path}\n".encode())
            else:
                out.extend(f"M 100644 inline {path}\n".encode())
                data(text.encode())
        out.extend(b"\n")
    return bytes(out)


def _write_repository(repo: Path, commits: list[_Commit]) -> dict[int, str]:
    """The commits as a git repository (branch main, checked out); mark -> sha."""
    repo.mkdir(parents=True)
    repository = GitRepository(repo, env=_GIT_ENV, needs=_NEEDS_GIT)
    _git(repository, "init", "-q", "-b", "main")
    marks = repo / ".git" / "scenario-marks"
    _git(
        repository,
        "fast-import",
        "--quiet",
        f"--export-marks={marks}",
        stdin=_fast_import_stream(commits),
    )
    shas = {}
    for line in marks.read_text().splitlines():
        mark, sha = line.split()
        shas[int(mark[1:])] = sha
    marks.unlink()
    _git(repository, "reset", "-q", "--hard", "main")
    return shas


# =============================================================================================
# Profiles and metrics.


def _write_profiles(
    folder: Path,
    rng: np.random.Generator,
    periods: list[tuple[int, int, _Stacks]],
    kappa: float,
    samples: np.ndarray,
    rate: np.ndarray,
    mix: np.ndarray,
    first_s: int,
) -> None:
    folder.mkdir(parents=True)
    for start, end, stacks in periods:
        rows = np.arange((start - first_s) // BUCKET_S, (end - first_s) // BUCKET_S)
        share = kappa * stacks.work[None, :] * rate[rows, None] * mix[rows][:, stacks.group]
        idle = 1.0 - share.sum(axis=1)
        if idle.min() < 0.05:
            raise AssertionError("scenario service busier than its samples allow")
        counts = rng.multinomial(samples[rows], np.column_stack([share, idle]))
        for row, bucket in zip(counts, rows, strict=True):
            lines = [f"{t} {n}" for t, n in zip(stacks.texts, row[:-1].tolist()) if n]
            lines.append(f"{stacks.idle} {int(row[-1])}")
            at = first_s + int(bucket) * BUCKET_S
            (folder / f"{at}-{HOST}.folded").write_text("\n".join(lines) + "\n")


def _write_metrics(
    folder: Path,
    rng: np.random.Generator,
    service: str,
    times: np.ndarray,
    work_ratio: np.ndarray,
    rate: np.ndarray,
    deploy_s: int,
) -> list[str]:
    """latency_p50 (rises with the culprit), throughput (flat), and the planted false alarms;
    returns the false alarms' ids."""
    n = len(times)
    cpu_ms, io_ms, rps = rng.uniform(12, 25), rng.uniform(20, 40), rng.uniform(150, 400)
    latency = (io_ms + cpu_ms * work_ratio) * np.exp(rng.normal(0, 0.012, n))
    throughput = rps * rate * np.exp(rng.normal(0, 0.005, n))
    upstream = rng.uniform(90, 150) * np.exp(rng.normal(0, 0.03, n))
    begin = deploy_s + BUCKET_S * int(rng.integers(1, 7))
    spike = (times >= begin) & (times < begin + BUCKET_S * int(rng.integers(3, 7)))
    upstream[spike] *= rng.uniform(1.5, 2.2)
    trough = deploy_s - 3600 * rng.uniform(1, 3)
    amplitude = rng.uniform(6, 10)
    wait = 30 - amplitude * np.cos(2 * np.pi * (times - trough) / _DAY_S) + rng.normal(0, 0.8, n)
    memory = rng.uniform(400, 900) + rng.normal(0, 4, n)
    prefix = f"{service}/"
    rows = ["timestamp,series,value,kind,unit"]
    columns = (
        ("latency_p50", latency, "latency", "ms"),
        ("throughput", throughput, "throughput", "rps"),
        ("upstream_p99", upstream, "latency", "ms"),
        ("report_queue_wait", wait, "latency", "ms"),
        ("memory_rss", memory, "memory", "MB"),
    )
    for name, values, kind, unit in columns:
        rows.extend(
            f"{int(t)},{prefix}{name},{v:.4f},{kind},{unit}"
            for t, v in zip(times.tolist(), values.tolist())
        )
    folder.mkdir(parents=True)
    (folder / "service.csv").write_text("\n".join(rows) + "\n")
    return [f"{prefix}upstream_p99", f"{prefix}report_queue_wait", f"{prefix}memory_rss"]


def _config_text(seed: int, threshold: float) -> str:
    def duration(seconds: int) -> str:
        return f"{seconds // 3600}h" if seconds % _DAY_S else f"{seconds // _DAY_S}d"

    return (
        f"# regbot scenario, seed {seed}: a service, its history and its profiles.\n"
        "repository:\n"
        "  path: repo\n"
        "sources:\n"
        "  profiles: [profiles/]\n"
        "  series: [metrics/]\n"
        "profiles:\n"
        f"  bucket: {BUCKET_S}s\n"
        "workloads:\n"
        "  default:\n"
        f"    threshold: {{absolute: {threshold}}}\n"
        f"    windows: {{historical: {duration(HISTORICAL_S)}, analysis: {duration(ANALYSIS_S)},"
        f" extended: {duration(EXTENDED_S)}}}\n"
        "attribution:\n"
        "  weights: {gcpu_attribution: 0.5, text_similarity: 0.25, correlation: 0.25}\n"
        "  confidence_floor: 0.5\n"
        "  top1_margin: 0.1\n"
        "  max_candidates: 3\n"
        "  scope: informative\n"
        "dedup:\n"
        "  method: fbdetect\n"
        "  seed: 0\n"
        "state: state/regbot.db\n"
    )


# =============================================================================================
# The scenario.

THRESHOLD = 0.002  # absolute gCPU (0.2 points): the plants rise by 0.4-3 points


@dataclass
class _LastDeploy:
    """The last deploy's plan: the culprit's kind, the regressed function T, the function the
    culprit commit edits, the changes in commit order, the cost shift's Y and rise."""

    kind: ScenarioKind
    target: str
    culprit_function: str
    changes: list[_Change]
    shifted: str | None
    shift_rise: float | None
    ambiguous: bool
    details: dict[str, object]


def _plan_last_deploy(
    rng: np.random.Generator,
    planner: _Planner,
    kind: ScenarioKind | None,
    same_function: bool | None,
    commits: tuple[int, int],
) -> _LastDeploy:
    """Culprit, decoys, cost shift and fillers of the last deploy, in a random order. A forced
    ``caller_calls_more`` that the call graph cannot carry falls back to ``slower``."""
    share = rng.random()
    chosen: ScenarioKind = kind or (
        "caller_calls_more" if share < CALLER_CALLS_MORE_SHARE else "slower"
    )
    drawn_same = bool(rng.random() < SAME_FUNCTION_SHARE)  # drawn even when forced: same stream
    same = drawn_same if same_function is None else same_function
    regressed = bool(rng.random() < REGRESSED_FUNCTION_SHARE)
    shift = planner.cost_shift()
    off_limits = {shift[0], *planner.descendants(shift[0])} if shift is not None else set()
    plant = planner.calls_more(off_limits) if chosen == "caller_calls_more" else None
    if plant is not None:
        culprit_fn, target, culprit, details = plant
    else:
        chosen = "slower"
        slow = planner.slower(off_limits) or planner.slower(set())
        if slow is None:
            raise AssertionError("no function can carry the planted regression")
        target, culprit, details = slow
        culprit_fn = target
    if target in off_limits:
        shift = None  # the only function able to regress is below P: no cost shift
    regressed = regressed and chosen == "caller_calls_more"
    plan = [culprit, *planner.decoys(target, culprit_fn, chosen, same, regressed)]
    if shift is not None:
        plan.append(shift[2])
    count = int(rng.integers(commits[0], commits[1] + 1))
    avoid = {target, culprit_fn}.union(*(c.touches for c in plan[1:]))
    plan += [planner.filler(avoid) for _ in range(max(0, count - len(plan)))]
    order = rng.permutation(len(plan))
    return _LastDeploy(
        chosen,
        target,
        culprit_fn,
        [plan[int(i)] for i in order],
        shift[1] if shift else None,
        shift[3] if shift else None,
        same or regressed,
        details,
    )


@dataclass
class _Written:
    """The repository as written: mark -> sha, each deploy's mark and state, the roles' marks,
    the last deploy's non-merge marks in creation order."""

    shas: dict[int, str]
    deploy_marks: list[int]
    snapshots: list[_State]
    roles: dict[str, int]
    last_order: list[int]


def _write_history(
    rng: np.random.Generator,
    repo: Path,
    messages: _Messages,
    planner: _Planner,
    deploy_times: list[int],
    last: _LastDeploy,
    commits: tuple[int, int],
) -> _Written:
    """The initial import, then each deploy's changes as direct pushes, squash merges and merged
    PRs, written with ``git fast-import``."""
    history = _History(messages)
    prs = _PullRequests(int(rng.integers(10, 400)))
    initial_s = deploy_times[0] - int(rng.integers(2, 6)) * _DAY_S
    history.initial(planner.state, initial_s)
    deploy_marks: list[int] = []
    snapshots: list[_State] = []
    first_of_last = 0
    for k, deploy_s in enumerate(deploy_times):
        if k == 0:
            changes = [planner.filler(set()) for _ in range(int(rng.integers(1, 4)))]
        elif k < len(deploy_times) - 1:
            changes = [
                planner.filler(set()) for _ in range(int(rng.integers(commits[0], commits[1] + 1)))
            ]
        else:
            changes = last.changes
        events = _events(rng, changes, prs)
        start = initial_s if k == 0 else deploy_times[k - 1]
        times = _times(rng, _commit_count(events), start, deploy_s)
        first_of_last = len(history.order)
        for event in events:
            history.event(event, times)
        deploy_marks.append(history.main_mark)
        assert history.main_state is not None
        snapshots.append(history.main_state)
    shas = _write_repository(repo, history.commits)
    return _Written(
        shas, deploy_marks, snapshots, dict(history.roles), history.order[first_of_last:]
    )


def _write_observations(
    rng: np.random.Generator,
    root: Path,
    state: _State,
    snapshots: list[_State],
    deploy_times: list[int],
    kappa: float,
) -> list[str]:
    """Profiles (each deploy's code from its deploy time to the next one) and metric series;
    returns the metric series' planted false alarms."""
    first_s, last_s = deploy_times[0], deploy_times[-1]
    end_s = last_s + ANALYSIS_S + EXTENDED_S
    periods = []
    for k, snapshot in enumerate(snapshots):
        stop = deploy_times[k + 1] if k + 1 < len(deploy_times) else end_s
        periods.append((deploy_times[k], stop, _stacks(snapshot, _render(snapshot))))
    buckets = (end_s - first_s) // BUCKET_S
    rate = np.exp(rng.normal(0, 0.015, buckets))
    groups = len(state.functions[HANDLE].calls) + 1
    mix = np.exp(rng.normal(0, 0.03, (buckets, groups)))
    mix[:, 0] = 1.0
    per_bucket = int(rng.choice([4, 5, 6, 8])) * BUCKET_S
    samples = per_bucket - rng.poisson(2, buckets)
    _write_profiles(root / "profiles", rng, periods, kappa, samples, rate, mix, first_s)
    total = _costs(state).total
    ratio = np.ones(buckets)
    for start, stop, stacks in periods:
        ratio[(start - first_s) // BUCKET_S : (stop - first_s) // BUCKET_S] = (
            stacks.total_work / total
        )
    times = first_s + BUCKET_S * np.arange(buckets)
    return _write_metrics(root / "metrics", rng, state.service, times, ratio, rate, last_s)


def _log_earlier_deploys(state_path: Path, deploys: list[tuple[str, float]]) -> None:
    """The deploy log of the deploys before the last, as `regbot run` after each of them would
    have left it (the last one is logged by the run that judges it)."""
    with open_state(state_path) as state:
        previous: str | None = None
        for sha, at in deploys[:-1]:
            state.record_deploy(sha, previous, at, at)
            previous = sha


def build_scenario(
    directory: Path,
    seed: int,
    *,
    deploys: int = 3,
    commits_per_deploy: tuple[int, int] = (8, 14),
    kind: ScenarioKind | None = None,
    same_function: bool | None = None,
) -> Scenario:
    """Build the scenario of ``seed`` in ``directory`` (absent or empty); see the module
    docstring. ``commits_per_deploy`` bounds the non-merge commits of each deploy after the
    first. ``kind`` and ``same_function`` force what the seed would otherwise draw (the
    culprit's kind; whether a second commit touches the culprit's function); the rest of the
    scenario is drawn as without them. The same arguments give the same files and commit shas.
    Raises InputError for bad arguments, a directory that is not empty, or no git on PATH."""
    directory = Path(directory)
    if deploys < 2:
        raise InputError("deploys", "at least 2 (the last deploy and the one before it)", deploys)
    low, high = commits_per_deploy
    if not 1 <= low <= high:
        raise InputError(
            "commits_per_deploy", "(low, high) with 1 <= low <= high", commits_per_deploy
        )
    if kind is not None and kind not in SCENARIO_KINDS:
        raise InputError("kind", "one of " + ", ".join(SCENARIO_KINDS), kind)
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise InputError(str(directory), "an empty or absent directory for the scenario")
    require_git(_NEEDS_GIT)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 20261122]))
    messages = _Messages(rng)
    state = _generate_service(rng)

    # Timeline: the last deploy at a random time of day, the others evenly before it.
    last_s = (
        FIRST_DAY_S
        + int(rng.integers(0, 60)) * _DAY_S
        + HISTORICAL_S
        + int(rng.integers(8 * 6, 18 * 6)) * BUCKET_S
    )
    first_s = last_s - HISTORICAL_S
    step = HISTORICAL_S / (deploys - 1)
    deploy_times = [first_s + int(round(k * step / BUCKET_S)) * BUCKET_S for k in range(deploys)]

    busy = float(rng.uniform(0.35, 0.55))
    kappa = busy / _costs(state).total
    planner = _Planner(rng, state, messages, kappa)
    last = _plan_last_deploy(rng, planner, kind, same_function, (low, high))
    written = _write_history(
        rng, directory / "repo", messages, planner, deploy_times, last, (low, high)
    )
    false_alarms = _write_observations(
        rng, directory, state, written.snapshots, deploy_times, kappa
    )
    if last.shifted is not None:
        false_alarms.insert(0, f"gcpu:{state.functions[last.shifted].subroutine}")
    (directory / "state").mkdir()
    config = directory / "regbot.yml"
    config.write_text(_config_text(seed, THRESHOLD))
    _log_earlier_deploys(
        directory / "state" / "regbot.db",
        [(written.shas[m], float(t)) for m, t in zip(written.deploy_marks, deploy_times, strict=True)],
    )

    culprit_mark = written.roles["culprit"]
    details = dict(last.details)
    details.update(
        {
            "ambiguous": last.ambiguous,
            "culprit_position": written.last_order.index(culprit_mark),
            "deploy_commits": len(written.last_order),
            "culprit_title": next(c.title for c in last.changes if c.role == "culprit"),
            "functions": len(state.functions) + 2,  # with main and serve_forever
            "modules": len(state.modules) + 1,  # with main
            "busy_share": busy,
        }
    )
    if last.shift_rise is not None:
        details["cost_shift_rise"] = last.shift_rise
    shas = written.shas
    return Scenario(
        root=directory,
        config_path=config,
        repo_path=directory / "repo",
        deploys=[
            (shas[m], float(t)) for m, t in zip(written.deploy_marks, deploy_times, strict=True)
        ],
        culprit_sha=shas[culprit_mark],
        culprit_function=f"gcpu:{state.functions[last.target].subroutine}",
        decoys={
            role: shas[mark]
            for role, mark in written.roles.items()
            if role not in ("culprit", "filler")
        },
        planted_false_alarms=false_alarms,
        kind=last.kind,
        seed=seed,
        profiles_dir=directory / "profiles",
        series_dir=directory / "metrics",
        state_path=directory / "state" / "regbot.db",
        details=details,
    )
