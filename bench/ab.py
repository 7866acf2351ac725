"""Two versions of the service side by side, for telling whether a change is faster when
the change is smaller than the machine's noise: both are served at once, each from its own
tree, database and Redis database, and loaded in turn, round after round (the order flips
every round), so that whatever else the machine does falls on both alike.

    .venv/bin/python bench/ab.py BEFORE AFTER [--config postgres] [--only "GET poll"]
        [--rounds 10] [--seconds 3] [--env-a NAME=VALUE ...] [--env-b NAME=VALUE ...]

BEFORE and AFTER: git revisions (each checked out in a temporary worktree, removed at the
end) or `.` for the working tree as it is; `--env-a`/`--env-b` add environment variables to
one version's processes (a switch of an experiment, `WEB_CONCURRENCY`, ...). The targets are
bench/endpoints.py's throughput targets (`--only` as there; the bare baselines always run),
each version's fixtures made by its own code. For each target and version it prints the
median over the rounds of rps ÷ that version's bare view in the same round, and of the CPU
per request of its web workers and of the whole machine (bench/endpoints.py `--cpu`); the
last column, AFTER's median ratio ÷ BEFORE's. PostgreSQL: `--postgres-url` names the
database of BEFORE, AFTER's gets `_b` appended (both dropped and made again); Redis:
`--redis-url`'s database for BEFORE, the next one for AFTER (both flushed).

How fine it is: the same tree on both sides comes out up to about a tenth apart, so a
smaller difference is noise. On a busy machine even a target that a switch does not touch
(the bare view with its round trips) can come out ahead on one side: there, only a
difference that also holds with the sides swapped (`--env-a` for `--env-b`) counts.
"""

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the project's packages, before bench.endpoints

from bench.endpoints import selected
from bench.served import BASE_DIR, DEFAULT_PG, DEFAULT_REDIS, CpuProbe, prepare, start, wrk


def tree(revision: str, into: Path) -> Path:
    """The directory of a version: the working tree for `.`, else a worktree of the revision."""
    if revision == ".":
        return BASE_DIR
    subprocess.run(["git", "-C", str(BASE_DIR), "worktree", "add", "--detach", "--quiet", str(into), revision], check=True)
    return into


def other_database(url: str, suffix: str) -> str:
    parts = urlsplit(url)
    return parts._replace(path=parts.path + suffix).geturl()


def next_redis_database(url: str) -> str:
    parts = urlsplit(url)
    return parts._replace(path=f"/{int(parts.path.strip('/') or 0) + 1}").geturl()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--config", default="postgres", choices=["sqlite", "postgres"])
    parser.add_argument("--only", help="as bench/endpoints.py's, e.g. 'GET poll' or POST")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=3)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--env-a", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--env-b", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--postgres-url", default=DEFAULT_PG)
    parser.add_argument("--redis-url", default=DEFAULT_REDIS)
    args = parser.parse_args()

    targets = [target for target in selected(args.only) if target[3] == "c"]
    scratch = Path(tempfile.mkdtemp(prefix="bench-ab-"))
    versions = {"A": (args.before, args.env_a, args.postgres_url, args.redis_url),
                "B": (args.after, args.env_b, other_database(args.postgres_url, "_b"), next_redis_database(args.redis_url))}
    services, worktrees = {}, []
    samples = {(name, target[0]): [] for name in versions for target in targets}
    try:
        for name, (revision, extra, postgres_url, redis_url) in versions.items():
            base_dir = tree(revision, scratch / f"tree-{name}")
            if base_dir != BASE_DIR:
                worktrees.append(base_dir)
            workdir = scratch / name
            workdir.mkdir()
            env, ids, scripts = prepare(args.config, workdir, postgres_url=postgres_url, redis_url=redis_url,
                                        base_dir=base_dir)
            env.update(item.split("=", 1) for item in extra)
            services[name] = (start(args.config, env, workdir, base_dir), ids, scripts)
        for service, ids, scripts in services.values():  # warm-up: every worker imports and connects
            for _label, method, path, _connections, _body in targets:
                wrk(service.port, scripts[method], path.format(**ids), 2, 1)
        for round_number in range(args.rounds):
            for name in sorted(versions, reverse=round_number % 2 == 1):
                service, ids, scripts = services[name]
                for label, method, path, _connections, _body in targets:
                    result, spent = CpuProbe(service, None, None).measure(
                        lambda: wrk(service.port, scripts[method], path.format(**ids), args.connections, args.seconds))
                    per_request = 1000 / result["requests"]
                    samples[name, label].append((result["rps"], spent["web"] * per_request, spent["machine"] * per_request))
    finally:
        for service, _ids, _scripts in services.values():
            service.stop()
        for worktree in worktrees:
            subprocess.run(["git", "-C", str(BASE_DIR), "worktree", "remove", "--force", str(worktree)], check=False)
        shutil.rmtree(scratch, ignore_errors=True)

    print(f"\n== {args.config}: A = {args.before} {' '.join(args.env_a)}, B = {args.after} {' '.join(args.env_b)}; "
          f"{args.rounds} rounds of {args.seconds:g} s, wrk -c{args.connections}")
    print(f"{'target':<26}{'÷ bare A':>10}{'÷ bare B':>10}{'web ms A':>10}{'web ms B':>10}"
          f"{'mach ms A':>11}{'mach ms B':>11}{'B ÷ A':>8}")
    bare = "bare Django view"
    for label, *_ in targets:
        ratios, web, machine = {}, {}, {}
        for name in versions:
            rows = samples[name, label]
            ratios[name] = statistics.median(row[0] / base[0] for row, base in zip(rows, samples[name, bare], strict=True))
            web[name] = statistics.median(row[1] for row in rows)
            machine[name] = statistics.median(row[2] for row in rows)
        print(f"{label:<26}{ratios['A']:>10.3f}{ratios['B']:>10.3f}{web['A']:>10.3f}{web['B']:>10.3f}"
              f"{machine['A']:>11.3f}{machine['B']:>11.3f}{ratios['B'] / ratios['A']:>8.3f}")


if __name__ == "__main__":
    main()
