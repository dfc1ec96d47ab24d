"""Same as ``oscsim bench integrator``: python benchmarks/integrator.py [--json] [--quick]."""

import argparse
import sys

from oscsim.bench.integrator import register

if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="integrator")
    sub = parser.add_subparsers(dest="cmd")
    register(sub)
    args = parser.parse_args(["integrator", *sys.argv[1:]])
    sys.exit(args.func(args))
