"""``polydyn compile | explain | bench | cache``: one clear message and exit status 2 on errors."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

from .errors import PolydynError, UsageError
from .operator_files import pick_operator, with_assume
from .options import Options


class _Parser(argparse.ArgumentParser):
    """argparse with polydyn's error contract: one line on stderr, exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        command = self.prog.partition(" ")[2]  # "polydyn compile" -> "compile"
        where = f"{command}: " if command else ""
        print(f"polydyn: error: {where}{message} (see `{self.prog} --help`)", file=sys.stderr)
        sys.exit(2)


def cmd_compile(args: argparse.Namespace) -> int:
    from .codegen_c.toolchain import build_shared
    from .pipeline import compile as pd_compile
    from .progress import reporting, stage
    from .runtime import bundle

    op = pick_operator(args.file, args.op)
    scop = with_assume(op, args.assume)
    kernel = pd_compile(scop, target=args.target)
    out = Path(args.output or ".")
    name = scop.name
    # a ragged operator's artifact is its per-sequence kernel's, with the batch described
    inner = getattr(kernel, "inner", kernel)
    extra = {"ragged": kernel.manifest()} if inner is not kernel else {}
    if args.target == "c":
        # the plain C library (no CPython shim), usable from C with the header
        with reporting(f"compiling {name}"):
            stage("C compiler (the plain library)")
            plain = build_shared(inner.source, name, Options())
        written = bundle.write(inner, out, plain, Options().all_cflags, inner.module, extra)
    else:
        from .runtime.bundle_ocl import write_opencl

        written = write_opencl(inner, out, extra)
    print(f"{name}: {len(kernel.variants)} variant(s), wrote {', '.join(written)} to {out}")
    for k, v in enumerate(kernel.variants):
        print(f"  [{k}] {v.name:12} {v.region}  |  {v.summary}")
    return 0


def parse_sizes(items: list[str]) -> dict[str, int]:
    sizes = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.isidentifier():
            raise UsageError(f"size {item!r}: write NAME=INTEGER, e.g. N=1000")
        try:
            sizes[key] = int(value)
        except ValueError:
            raise UsageError(f"size {item!r}: {value!r} is not an integer") from None
    return sizes


def cmd_explain(args: argparse.Namespace) -> int:
    from .pipeline import compile as pd_compile

    op = pick_operator(args.file, args.op)
    scop = with_assume(op, args.assume)
    kernel = pd_compile(scop, target=args.target)
    sizes = parse_sizes(args.sizes)
    scop = getattr(scop, "scop", scop)  # a ragged operator's: its length is a size here
    user_syms = [scop.user_name(s) for s in scop.syms]
    unknown = sorted(set(sizes) - set(user_syms))
    if unknown:
        raise UsageError(f"{', '.join(unknown)}: not a size of {scop.name} (its syms: "
                         f"{', '.join(user_syms)})")
    print(kernel.explain(**sizes))
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from .bench_cli import run_bench_command

    return run_bench_command(args)


def cmd_cache(args: argparse.Namespace) -> int:
    import time

    from .runtime import cache

    root = Options().cache_dir
    if args.action == "clear":
        print(f"removed {cache.clear(root)} cache entries from {root}")
    elif args.action == "prune":
        limit = cache.max_bytes() if args.max_bytes is None else args.max_bytes
        removed, freed = cache.prune(root, limit)
        print(f"removed {removed} least recently used cache entries ({freed} bytes) from "
              f"{root}; {cache.total_bytes(root)} bytes remain (limit {limit})")
    else:
        stats = cache.info(root)
        print(f"cache: {stats['path']}\n  entries: {stats['entries']}\n  bytes: "
              f"{stats['bytes']}\n  limit: {stats['max_bytes']} (POLYDYN_CACHE_MAX_BYTES)")
        shown = stats["list"] if args.all else stats["list"][:SHOWN_ENTRIES]
        for used, size, key, what in shown:
            stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(used))
            print(f"  {key[:16]}  {size:>10}  last used {stamp}  {what}")
        if len(shown) < len(stats["list"]):
            print(f"  ... {len(stats['list']) - len(shown)} older entries (`polydyn cache "
                  "info --all` lists them)")
    return 0


SHOWN_ENTRIES = 40  # `cache info` lists the most recently used ones


def _size(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of bytes") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a size is >= 0")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="polydyn", description="Polyhedral compiler for tensor "
                                "operators with run-time sizes.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    c = sub.add_parser("compile", help="compile an operator file (op.py or kernel.c)")
    c.add_argument("file")
    c.add_argument("--op", help="operator (or C function) name when the file has several")
    c.add_argument("--target", choices=["c", "opencl"], default="c")
    c.add_argument("-o", "--output", help="output directory (default: .)")
    c.add_argument("--assume", help="extra isl constraints over the syms")
    c.set_defaults(fn=cmd_compile)
    e = sub.add_parser("explain", help="which variant runs for given sizes, and why")
    e.add_argument("file")
    e.add_argument("sizes", nargs="*", help="NAME=VALUE for every sym")
    e.add_argument("--op")
    e.add_argument("--target", choices=["c", "opencl"], default="c")
    e.add_argument("--assume")
    e.set_defaults(fn=cmd_explain)
    b = sub.add_parser("bench", help="time an operator over a sweep of sizes")
    from .bench_cli import add_bench_arguments

    add_bench_arguments(b)
    b.set_defaults(fn=cmd_bench)
    k = sub.add_parser("cache", help="inspect, prune or clear the on-disk artifact cache")
    k.add_argument("action", choices=["info", "prune", "clear"])
    k.add_argument("--all", action="store_true", help="info: list every entry")
    k.add_argument("--max-bytes", type=_size, help="prune: the size to prune down to "
                   "(default: POLYDYN_CACHE_MAX_BYTES, else 2 GiB)")
    k.set_defaults(fn=cmd_cache)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # sizes written after options: `explain op.py --op NAME N=1000 M=3`
        if args.command != "explain" or any(x.startswith("-") for x in extra):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        args.sizes = [*args.sizes, *extra]
    try:
        status = args.fn(args)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return status
    except PolydynError as exc:
        print(f"polydyn: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `polydyn compile ... | head`: the reader left; stop quietly
        # what is still buffered would fail again when Python flushes stdout at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
