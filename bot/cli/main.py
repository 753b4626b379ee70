"""regbot's command line: parses arguments, dispatches through a table, turns errors into exit codes."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from rich.console import Console

from regbot import __version__
from regbot.bot.cli.exit_codes import EXIT_BAD_INPUT, EXIT_OK
from regbot.errors import InputError, RegbotError


class _ArgumentParser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line and exit code 2, like every other bad input."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise InputError(f"{self.prog}", message.replace("\n", " "))


def consoles() -> tuple[Console, Console]:
    """stdout for tables, stderr for diagnostics and progress; NO_COLOR honoured by rich."""
    return Console(), Console(stderr=True)


def _command_ingest(args: argparse.Namespace, out: Console, err: Console) -> int:
    from regbot.bot.cli import ingest as ingest_command

    return ingest_command.run(args, out, err)


def _command_gcpu(args: argparse.Namespace, out: Console, err: Console) -> int:
    from regbot.bot.cli import ingest as ingest_command

    return ingest_command.run_gcpu(args, out, err)


def _command_scrape(args: argparse.Namespace, out: Console, err: Console) -> int:
    from regbot.bot.cli import scrape as scrape_command

    return scrape_command.run(args, out, err)


def _command_detect(args: argparse.Namespace, out: Console, err: Console) -> int:
    from regbot.bot.cli import detect as detect_command

    return detect_command.run(args, out, err)


def _command_run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from regbot.bot.cli import run as run_command

    return run_command.run(args, out, err)


def _command_explain(args: argparse.Namespace, out: Console, err: Console) -> int:
    from regbot.bot.cli import explain as explain_command

    return explain_command.run(args, out, err)


def _command_feedback(args: argparse.Namespace, out: Console, err: Console) -> int:
    from regbot.bot.cli import feedback as feedback_command

    return feedback_command.run(args, out, err)


def _command_demo(args: argparse.Namespace, out: Console, err: Console) -> int:
    from regbot.bot.cli import demo as demo_command

    return demo_command.run(args, out, err)


COMMANDS: dict[str, Callable[[argparse.Namespace, Console, Console], int]] = {
    "ingest": _command_ingest,
    "gcpu": _command_gcpu,
    "scrape": _command_scrape,
    "detect": _command_detect,
    "run": _command_run,
    "explain": _command_explain,
    "feedback": _command_feedback,
    "demo": _command_demo,
}


def build_parser() -> argparse.ArgumentParser:
    parser = _ArgumentParser(prog="regbot", description=__doc__)
    parser.add_argument("--version", action="version", version=f"regbot {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_ArgumentParser)

    ingest = sub.add_parser("ingest", help="parse stack-trace profiles into the sample store")
    ingest.add_argument("profiles", nargs="+", type=Path, metavar="PROFILE")
    ingest.add_argument("--store", required=True, type=Path, metavar="DIR")
    ingest.add_argument(
        "--at", metavar="T", help="time of the profiles (epoch seconds or ISO 8601)"
    )
    ingest.add_argument("-c", "--config", type=Path, metavar="regbot.yml")
    ingest.add_argument(
        "--bucket", metavar="DURATION", help="bucket width of a new store (default 60s)"
    )
    ingest.add_argument("--sample-type", help="pprof sample type to read (default: the first)")

    gcpu = sub.add_parser("gcpu", help="build gCPU series from the sample store")
    gcpu.add_argument("--store", required=True, type=Path, metavar="DIR")
    gcpu.add_argument("-c", "--config", type=Path, metavar="regbot.yml")
    gcpu.add_argument(
        "--floor", metavar="SHARE", help="triviality floor (default 0.00001 = 0.001%%)"
    )
    gcpu.add_argument("--self", dest="self_share", action="store_true", help="leaf (self) share")
    gcpu.add_argument("--top", type=int, default=15, help="rows to print (default 15)")
    gcpu.add_argument(
        "-o", "--output", type=Path, metavar="OUT", help="write series (.jsonl, .csv or .parquet)"
    )
    _add_scrape_parser(sub)
    detect = sub.add_parser("detect", help="run the detection pipeline over series files")
    detect.add_argument("series", nargs="+", type=Path, metavar="SERIES")
    detect.add_argument("-c", "--config", type=Path, metavar="regbot.yml")
    detect.add_argument("--workload", metavar="NAME", help="workload from the config or a preset")
    detect.add_argument(
        "--now", metavar="T", help="end of the extended window (default: last point)"
    )
    detect.add_argument("-o", "--output", type=Path, metavar="OUT.json")
    detect.add_argument(
        "--no-state", action="store_true", help="do not read or write the state store"
    )
    detect.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    run = sub.add_parser(
        "run", help="post-deploy job: detect, deduplicate, attribute to the deploy's commits"
    )
    run.add_argument("-c", "--config", type=Path, metavar="regbot.yml")
    run.add_argument("--deploy", metavar="SHA", help="the deployed commit (default: HEAD)")
    run.add_argument("--previous", metavar="SHA", help="the commit deployed before it")
    run.add_argument("--deployed-at", metavar="T", help="when the deploy happened")
    run.add_argument("--now", metavar="T", help="ignore data after this time")
    run.add_argument("--workload", metavar="NAME", help="workload from the config or a preset")
    run.add_argument(
        "--dry-run", action="store_true", help="no PR comments and no gate status, only the report"
    )
    run.add_argument("-o", "--output", type=Path, metavar="OUT.json")
    run.add_argument(
        "--summary",
        type=Path,
        metavar="FILE",
        help="append the job summary (markdown) here (default: $GITHUB_STEP_SUMMARY when set)",
    )
    run.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")

    explain = sub.add_parser("explain", help="everything regbot knows about one regression")
    explain.add_argument("regression_id", metavar="REGRESSION_ID")
    explain.add_argument("--state", type=Path, metavar="PATH", help="state database")
    explain.add_argument("-c", "--config", type=Path, metavar="regbot.yml")
    explain.add_argument("--json", action="store_true", help="print JSON for scripts")

    feedback = sub.add_parser("feedback", help="false-positive feedback read from PR comments")
    feedback.add_argument("--state", type=Path, metavar="PATH", help="state database")
    feedback.add_argument("-c", "--config", type=Path, metavar="regbot.yml")
    feedback.add_argument("--json", action="store_true", help="print JSON for scripts")

    demo = sub.add_parser("demo", help="the whole post-deploy pipeline on a built-in scenario")
    demo.add_argument(
        "--dir", type=Path, metavar="DIR", help="build the scenario here (default: a temp dir)"
    )
    demo.add_argument("--seed", type=int, default=9, help="scenario seed (default 9)")
    return parser


def _add_scrape_parser(sub: argparse._SubParsersAction[_ArgumentParser]) -> None:
    scrape = sub.add_parser(
        "scrape", help="pull CPU profiles from pprof HTTP endpoints into the sample store"
    )
    scrape.add_argument("-c", "--config", type=Path, metavar="regbot.yml")
    scrape.add_argument(
        "--target",
        action="append",
        metavar="[NAME=]URL",
        help="a pprof endpoint (repeatable; replaces sources.scrape.targets)",
    )
    scrape.add_argument("--store", type=Path, metavar="DIR", help="the sample store to append to")
    scrape.add_argument("--seconds", metavar="N", help="length of each profile (default 10)")
    scrape.add_argument("--interval", metavar="DURATION", help="between rounds (default 60s)")
    scrape.add_argument("--timeout", metavar="DURATION", help="beyond --seconds (default 10s)")
    scrape.add_argument("--retries", metavar="K", help="more attempts per target (default 2)")
    rounds = scrape.add_mutually_exclusive_group()
    rounds.add_argument("--once", action="store_true", help="one round, then exit")
    rounds.add_argument("--count", metavar="K", help="K rounds, then exit (default: until ^C)")
    scrape.add_argument(
        "--bucket", metavar="DURATION", help="bucket width of a new store (default 60s)"
    )
    scrape.add_argument("--sample-type", help="pprof sample type to read (default: the first)")


def main(
    argv: Sequence[str] | None = None, *, out: Console | None = None, err: Console | None = None
) -> int:
    """Run one command; ``out``/``err`` may be injected (tests pass ``Console(file=StringIO())``)."""
    if out is None or err is None:
        default_out, default_err = consoles()
        out, err = out or default_out, err or default_err
    try:
        args = build_parser().parse_args(argv)
        return COMMANDS[args.command](args, out, err)
    except InputError as error:
        err.print(f"regbot: {error}", markup=False, highlight=False, soft_wrap=True)
        return EXIT_BAD_INPUT
    except RegbotError as error:
        err.print(f"regbot: {error}", markup=False, highlight=False, soft_wrap=True)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        err.print("regbot: interrupted", markup=False)
        return 130
    except SystemExit as exit_:  # --help and --version
        return int(exit_.code or 0)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
