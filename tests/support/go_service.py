"""A real Go service for the scrape tests: a small program serving Go's net/http/pprof, with two
CPU-burning functions (``main.burnPrices``, ``main.burnTaxes``) running in the background, so a
CPU profile of it has known frames.

``build_go_service`` writes the program and builds it with ``go build`` (standard library only,
no network: ``GOPROXY=off``, ``GOTOOLCHAIN=local``; caches, ``GOPATH`` and ``HOME`` in the test's
temporary folder). No ``-trimpath``: Debian's Go ships its standard library prebuilt, and
``-trimpath`` would rebuild it (25 s instead of 1 s here), so frames name the temporary folder.
``running`` starts it on a port the kernel picks (the program prints its address first) and
stops it afterwards. ``require_go`` skips when ``go`` is missing, or fails when ``CI`` is set
(``.ci/run`` installs Debian's ``golang-go``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

GO_SOURCE = """\
package main

import (
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
)

var sink float64

//go:noinline
func burnPrices(n int) float64 {
	total := 0.0
	for i := 0; i < n; i++ {
		total += float64(i%7) * 1.0001
	}
	return total
}

//go:noinline
func burnTaxes(n int) float64 {
	total := 1.0
	for i := 0; i < n; i++ {
		total = total*1.0000001 + float64(i&3)
	}
	return total
}

func main() {
	go func() {
		for {
			sink += burnPrices(3000000)
			sink += burnTaxes(1000000)
		}
	}()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(listener.Addr().String())
	if err := http.Serve(listener, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
"""

BURNERS = ("main.burnPrices", "main.burnTaxes")


def require_go() -> str:
    """The ``go`` command; skips the test without it, or fails it when ``CI`` is set."""
    go = shutil.which("go")
    if go is not None:
        return go
    reason = "go not installed (Debian package `golang-go`)"
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI is set, so the Go service tests must run")
    pytest.skip(reason)


def build_go_service(folder: Path) -> Path:
    """The service's binary, built in ``folder`` (module docstring)."""
    go = require_go()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "main.go").write_text(GO_SOURCE, encoding="utf-8")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(folder),
        "GOCACHE": str(folder / "gocache"),
        "GOPATH": str(folder / "gopath"),
        "GOFLAGS": "",
        "GOPROXY": "off",
        "GOTOOLCHAIN": "local",
        "GOTELEMETRY": "off",
    }
    if shutil.which("gcc") is None and shutil.which("cc") is None:
        env["CGO_ENABLED"] = "0"  # no C compiler: pure Go (the net package builds either way)
    built = subprocess.run(
        [go, "build", "-o", "burner", "main.go"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if built.returncode != 0:
        pytest.fail(f"go build failed ({built.returncode}):\n{built.stdout}{built.stderr}")
    return folder / "burner"


@contextmanager
def running(binary: Path) -> Iterator[str]:
    """The service's base URL (``http://127.0.0.1:PORT``) while it runs."""
    process = subprocess.Popen(
        [str(binary)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        address = process.stdout.readline().strip()
        if not address:
            assert process.stderr is not None
            pytest.fail(f"the Go service printed no address: {process.stderr.read()}")
        yield f"http://{address}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
