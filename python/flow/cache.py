"""The compile cache: executables Flow compiled, kept between processes.

flow.compile, flow.compile_mlir and flow-compile look a program up here
before compiling it and store what they compiled. An entry is keyed by the
program's text (its parameter archive's path aside: weights are read when
an executable loads, not compiled into it), every compile option, the
compiler and the host CPU. The directory is $FLOW_CACHE_DIR, else
$XDG_CACHE_HOME/flow/compiled, else ~/.cache/flow/compiled; the size
limit $FLOW_CACHE_SIZE (default 2GiB), past which the least recently used
entries go.

    python -m flow.cache info     # where, how many entries, how many bytes
    python -m flow.cache clear    # removes every entry
"""

import argparse
import sys

from ._flow import cache_clear as _clear
from ._flow import cache_info as _info

__all__ = ["info", "clear", "directory"]


def info() -> dict:
    """The cache: `directory`, `entries`, `bytes` and `limit` (bytes); and
    this process' `hits` (compiles it answered), `misses` (lookups that
    found nothing, or a damaged entry) and `stores` (executables it
    kept)."""
    return dict(_info())


def directory() -> str:
    """The directory entries live in."""
    return _info()["directory"]


def clear() -> int:
    """Removes every entry; returns how many there were."""
    return int(_clear())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m flow.cache",
        description="Shows or clears Flow's compile cache.")
    parser.add_argument("command", choices=["info", "clear"])
    args = parser.parse_args(argv)
    if args.command == "clear":
        print(f"removed {clear()} entries from {directory()}")
        return 0
    d = info()
    print(f"directory: {d['directory']}\nentries:   {d['entries']}\n"
          f"bytes:     {d['bytes']} ({d['bytes'] / 2**20:.1f} MiB of "
          f"{d['limit'] / 2**20:.0f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
