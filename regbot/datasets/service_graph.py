"""The scenario service's code model, drawn from the seed: modules, functions and a call graph
(a DAG: calls go only to later modules or later functions of the same module), rewired until
its call paths are few enough for small profiles. O(functions × call paths) per wiring.

Design: docs/design/datasets_service.md
"""

from __future__ import annotations

import numpy as np

from regbot.datasets.service_model import (
    HANDLE,
    MAX_STACKS,
    MIN_FUNCTIONS,
    SERVER,
    Call,
    Function,
    Module,
    State,
    doc_of,
)
from regbot.datasets.service_stacks import call_paths

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


def _count(rng: np.random.Generator) -> int:
    return int(rng.choice([1, 2, 3, 4], p=[0.65, 0.2, 0.1, 0.05]))


def _work(rng: np.random.Generator, median: float) -> int:
    return int(np.clip(round(float(rng.lognormal(np.log(median), 0.8)) / 10) * 10, 40, 8000))


def generate_service(rng: np.random.Generator) -> State:
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
        if len(call_paths(state)) <= MAX_STACKS:
            return state
    return state


def _wire(
    rng: np.random.Generator,
    service: str,
    layout: list[tuple[str, str | None, list[str]]],
    domain_count: int,
) -> State:
    """Functions with work and calls for one module layout (views, auth, the domain modules,
    three infrastructure modules). Some domain modules keep their last two functions as private
    helpers: leaves called by one public function of the module only."""
    modules: dict[str, Module] = {SERVER: Module(SERVER, _MODULE_DOCS[SERVER], None, [HANDLE])}
    functions: dict[str, Function] = {
        HANDLE: Function(HANDLE, SERVER, "handle_request", None, _work(rng, 150), [], "")
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
            functions[key] = Function(
                key, module, name, cls, _work(rng, median), [], doc_of(name, int(rng.integers(4)))
            )
            keys.append(key)
            order.append(key)
        modules[module] = Module(module, _MODULE_DOCS[module], cls, keys)
    domain = [m for m, _, _ in layout[2 : 2 + domain_count]]
    infra = [m for m, _, _ in layout[2 + domain_count :]]
    public = {m: modules[m].functions[:2] for m in modules if m != SERVER}
    private: set[str] = set()
    for module in domain:
        keys = modules[module].functions
        if len(keys) >= 5 and rng.random() < 0.8:
            owner = public[module][int(rng.integers(2))]
            for helper in keys[-2:]:
                functions[owner].calls.append(Call(helper, _count(rng)))
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
            functions[caller].calls.append(Call(callee, count or _count(rng)))

    # handle_request: authenticate, dispatch to the handlers by the request mix, encode.
    functions[HANDLE].calls.append(Call(modules["auth"].functions[0], 1))
    mix = rng.dirichlet(np.full(len(modules["views"].functions), 2.0))
    tenths = np.maximum(1, np.round(mix * 10)).astype(int)
    while tenths.sum() > 10:
        tenths[int(np.argmax(tenths))] -= 1
    while tenths.sum() < 10:
        tenths[int(np.argmin(tenths))] += 1
    for handler, share in zip(modules["views"].functions, tenths, strict=True):
        functions[HANDLE].calls.append(Call(handler, 1, int(share)))
    functions[HANDLE].calls.append(Call(modules[infra[-1]].functions[0], 1))
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
    return State(service, modules, functions, _initial_files(service, modules))


def _reachable(functions: dict[str, Function], key: str) -> bool:
    seen, stack = set(), [HANDLE]
    while stack:
        current = stack.pop()
        if current == key:
            return True
        if current not in seen:
            seen.add(current)
            stack.extend(c.callee for c in functions[current].calls)
    return False


def _initial_files(service: str, modules: dict[str, Module]) -> dict[str, str]:
    listing = "\n".join(f"- `app/{m}.py`: {modules[m].doc}" for m in modules)
    return {
        "README.md": f"# {service}\n\nThe {service} web service.\n\n## Modules\n\n{listing}\n",
        "docs/operations.md": f"# Operating {service}\n\nDeploys go out from main.\n",
        "config/service.yaml": "workers: 4\ncache_ttl_s: 60\npool_size: 8\n",
        ".gitignore": "__pycache__/\n*.pyc\n",
    }
