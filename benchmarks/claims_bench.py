"""Claims per second: `claimers` threads claim the branches of one parallel loop until
none is free, on SQLite (one store) and on PostgreSQL with one store and with two on
one database (two replicas' worth of connections), the claimers spread evenly. Each
claim is the store's whole claim: the pick, the lock, the `claimed` event chained on.
The figure is branches claimed per second, the median of interleaved rounds.

PostgreSQL runs with fsync on, like SQLite's synchronous=FULL. The server is a
throwaway cluster the benchmark starts itself (tests/postgres.py).

    python -m benchmarks.claims_bench [--quick] [--branches 1000] [--claimers 8] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from benchmarks.saving import save
from handrail.model.runs import EventType, NewEvent, RunRecord, RunStatus
from handrail.store import RunStore, open_store
from handrail.store.base import ClaimFilter
from handrail.store.rows import later, now
from tests.postgres import Cluster, unavailable

RESULTS = Path(__file__).resolve().parent / "results"
CONFIGS = ("sqlite, 1 store", "postgresql, 1 store", "postgresql, 2 stores")


def fan_out(store: RunStore, parent_id: str, branches: int) -> None:
    """A parent run and `branches` open branches of it, nobody holding them."""
    store.put_source("h", "bench", b'{"id": "bench"}')
    at = now()
    parent = RunRecord(parent_id, "local", "/w", "bench", "1.0.0", "h", "Bench claims", RunStatus.ACTIVE,
                       {}, {"step": {"id": "each", "title": "Each"}}, 0, at, at, 1)  # fmt: skip
    store.create(parent, [NewEvent(EventType.STARTED)])
    for index in range(branches):
        branch = parent._replace(
            id=f"{parent_id}_b{index}", parent_id=parent_id, parent_step="each", branch=index
        )
        store.create(branch, [NewEvent(EventType.STARTED)])


def claims_per_second(stores: list[RunStore], parent_id: str, branches: int, claimers: int) -> float:
    """Every branch of `parent_id` claimed by `claimers` threads, claimer i on stores[i % n]."""
    where = ClaimFilter(owner="local", parent_id=parent_id)
    counts = [0] * claimers

    def claim(i: int) -> None:
        store = stores[i % len(stores)]
        while store.claim(where, f"bench-{i}", later(600)) is not None:
            counts[i] += 1

    began = time.perf_counter()
    with ThreadPoolExecutor(claimers) as pool:
        list(pool.map(claim, range(claimers)))
    elapsed = time.perf_counter() - began
    if sum(counts) != branches:
        raise RuntimeError(
            f"{sum(counts)} claims for {branches} branches: a branch was claimed twice or never"
        )
    return branches / elapsed


def measure(branches: int, claimers: int, rounds: int) -> dict[str, Any]:
    reason = unavailable()
    if reason is not None:
        raise RuntimeError(f"cannot start PostgreSQL: {reason}")
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="handrail-claims-bench-") as tmp:
        cluster = Cluster(fsync=True)
        stack.callback(cluster.stop)
        sqlite = open_store(f"sqlite:///{Path(tmp) / 'runs.db'}")
        stack.callback(sqlite.close)
        url = cluster.database("bench")
        first, second = open_store(url), open_store(url)
        stack.callback(first.close)
        stack.callback(second.close)
        stores = {CONFIGS[0]: [sqlite], CONFIGS[1]: [first], CONFIGS[2]: [first, second]}
        per_round: dict[str, list[float]] = {config: [] for config in CONFIGS}
        for n in range(rounds):
            for config in CONFIGS:
                parent_id = f"run_bench_{n}_{CONFIGS.index(config)}"
                fan_out(stores[config][0], parent_id, branches)
                per_round[config].append(claims_per_second(stores[config], parent_id, branches, claimers))
    return {
        "branches": branches,
        "claimers": claimers,
        "rounds": rounds,
        "per_second": {config: statistics.median(values) for config, values in per_round.items()},
        "per_round": per_round,
    }


def report(results: dict[str, Any]) -> str:
    lines = [
        f"Claims of {results['branches']} branches by {results['claimers']} threads, median of "
        f"{results['rounds']} interleaved rounds:",
        "",
        "| store | claims / s |",
        "|---|---|",
        *(f"| {config} | {results['per_second'][config]:.0f} |" for config in CONFIGS),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a smoke run: few branches, one round")
    parser.add_argument("--branches", type=int, default=1000)
    parser.add_argument("--claimers", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    branches, rounds = (100, 1) if args.quick else (args.branches, args.rounds)
    results = measure(branches, args.claimers, rounds)
    save(args.out, "claims-quick" if args.quick else "claims", results, report(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
