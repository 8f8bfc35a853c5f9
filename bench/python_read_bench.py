"""Reading training logs into a pandas DataFrame from Python, against the command line's
whole-run load of the same logs in the same run (`mosaic runs LOGDIR --export csv`).

    PYTHONPATH=build/python /usr/bin/python3 bench/python_read_bench.py [LOGDIR] [--repeat N]

LOGDIR defaults to tests/fixtures (every event file, CSV and JSONL log of the repository). Prints
the best of N wall times of each and their ratio (Python / CLI); the goal is within 1.5×.
"""

import argparse
import os
import subprocess
import time

import mosaic

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)


def best_of(repeat, work):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("logdir", nargs="?", default=os.path.join(SOURCE, "tests", "fixtures"))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--binary", default=os.path.join(SOURCE, "build", "mosaic"))
    args = parser.parse_args()
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(args.logdir)
               for f in files)
    points = len(mosaic.read_runs(args.logdir).scalars)
    python = best_of(args.repeat, lambda: mosaic.read_runs(args.logdir).scalars)
    cli = best_of(args.repeat, lambda: subprocess.run(
        [args.binary, "runs", args.logdir, "--export", "csv"], check=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    print(f"{args.logdir}: {size / 1e6:.1f} MB of files, {points} scalar points")
    print(f"python read_runs -> DataFrame  {python * 1e3:9.1f} ms")
    print(f"mosaic runs --export csv       {cli * 1e3:9.1f} ms")
    print(f"ratio python / cli             {python / cli:9.2f}")


if __name__ == "__main__":
    main()
