"""``python -m tests.replay [--update] [KERNEL ...]``: compare the generated source of the
bundled kernels with the committed snapshot (exit status 1 on a difference), or rewrite it."""

from __future__ import annotations

import argparse
import sys

from . import cases, compare, update


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.replay")
    parser.add_argument("--update", action="store_true", help="rewrite the snapshot")
    parser.add_argument("kernels", nargs="*", help="only these kernels (default: all)")
    args = parser.parse_args(argv)
    chosen = [c for c in cases() if not args.kernels or c[0] in args.kernels]
    differing = 0
    for case in chosen:
        label = "/".join(x for x in case if x)
        if args.update:
            print(f"{label}: {'updated' if update(*case) else 'unchanged'}")
            continue
        diffs = compare(*case)
        differing += bool(diffs)
        print(f"{label}: {'differs' if diffs else 'same'}")
        for diff in diffs:
            sys.stdout.write(diff)
    if not args.update:
        print(f"{len(chosen) - differing} same, {differing} differing")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
