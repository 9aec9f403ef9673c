"""Parse + validate throughput: a generated file of mixed reservations, timed on one core.

    python benchmarks/parse.py [--count 10000] [--seed 1]

Prints the file size, the parse and validate times and reservations per second.
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from rdl import load_cluster, parse_text, validate

CLUSTER = Path(__file__).resolve().parent.parent / "examples" / "cluster.yaml"


def atom(rng: random.Random, name: str) -> str:
    memory = rng.choice(["1GiB", "2GiB", "4GiB", "8GiB", "1536MiB"])
    vcores = rng.choice([1, 2, 4])
    shape = rng.random()
    if shape < 0.4:  # malleable
        return f"{name}: atom(b={{memory: {memory}, vcores: {vcores}}}, h={rng.randint(10, 200)}, " \
               f"w={rng.randint(1, 40)}h)"
    if shape < 0.7:  # gang
        g = rng.choice([4, 8, 16, 32])
        return f"{name}: atom(b={{memory: {memory}, vcores: {vcores}}}, g={g}, h={g}, l={rng.choice([30, 60, 90])}m, " \
               f"w={g * rng.choice([1, 2])}h)"
    return f"{name}: atom(b={{memory: {memory}, vcores: {vcores}}}, h={rng.randint(5, 50)}, " \
           f"l={rng.choice([5, 10, 15])}m, w={rng.randint(1, 20)}h)"


def body(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.35:
        return atom(rng, "main")
    if kind < 0.7:
        stages = ",\n    ".join(atom(rng, f"s{i}") for i in range(rng.randint(2, 4)))
        gap = f",\n    gap={rng.choice(['0s', '30m'])}" if rng.random() < 0.3 else ""
        return f"order(\n    {stages}{gap}\n  )"
    if kind < 0.85:
        options = ",\n    ".join(atom(rng, f"a{i}") for i in range(rng.randint(2, 3)))
        return f"any(\n    {options}\n  )"
    return f"all(\n    {atom(rng, 'left')},\n    {atom(rng, 'right')}\n  )"


def generate(count: int, seed: int) -> str:
    """`count` reservations of mixed shapes as one RDL file."""
    rng = random.Random(seed)
    chunks = []
    for index in range(count):
        hours = rng.randint(24, 72)
        chunks.append(f"# reservation {index}\nreservation r{index} user=u{rng.randint(1, 50)} queue=prod "
                      f"deadline=+{hours}h value={rng.randint(1, 10)} {{\n  {body(rng)}\n}}\n")
    return "\n".join(chunks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    cluster = load_cluster(CLUSTER)
    text = generate(args.count, args.seed)
    started = time.perf_counter()
    reservations = parse_text(text, "generated.rdl")
    parsed = time.perf_counter()
    validate(reservations, cluster)
    validated = time.perf_counter()
    total = validated - started
    print(f"reservations:       {len(reservations)}")
    print(f"file size:          {len(text) / 1e6:.2f} MB, {text.count(chr(10))} lines")
    print(f"parse:              {parsed - started:.3f} s")
    print(f"validate:           {validated - parsed:.3f} s")
    print(f"parse + validate:   {total:.3f} s ({len(reservations) / total:,.0f} reservations/s, target: < 2 s)")


if __name__ == "__main__":
    main()
