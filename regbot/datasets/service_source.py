"""The scenario service's Python source, rendered from its model (``render``), with the line of
every function's work loop, loop body and call sites: the lines the profiles' frames name.

Design: docs/design/datasets_service.md
"""

from __future__ import annotations

from dataclasses import dataclass

from regbot.datasets.service_model import SERVER, Function, Module, State


@dataclass(frozen=True)
class Lines:
    """A function's work loop line, loop body line and call lines (1-based)."""

    loop: int
    body: int
    calls: tuple[int, ...]


@dataclass(frozen=True)
class Rendered:
    """The service's files at one commit and the lines its profiles' frames name."""

    files: dict[str, str]
    lines: dict[str, Lines]
    module_line: int  # main.py's `main()` call
    main_line: int  # main()'s call of serve_forever
    serve_line: int  # serve_forever's call of handle_request
    idle_line: int  # serve_forever's time.sleep


def _call_expression(caller: Function, callee: Function, modules: dict[str, Module]) -> str:
    if callee.module == caller.module:
        return f"self.{callee.name}" if callee.cls else callee.name
    if callee.cls:
        return f"{callee.module}.{modules[callee.module].instance}.{callee.name}"
    return f"{callee.module}.{callee.name}"


def _function_lines(fn: Function, state: State, out: list[str]) -> tuple[int, int, tuple[int, ...]]:
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


def render(state: State) -> Rendered:
    files: dict[str, str] = {"app/__init__.py": f'"""The {state.service} service."""\n'}
    lines: dict[str, Lines] = {}
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
            lines[key] = Lines(loop, body, calls)
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
    return Rendered(files, lines, len(main), main_line, serve_line, idle_line)
