"""What bench/endpoints.py prints: each configuration's figures as it finishes, and with
`--markdown` one table of the floors (docs/performance.md) beside what the run measured."""

import subprocess
import sys
from pathlib import Path


def _endpoint(label: str, figure: str):
    return lambda result: (result["endpoints"].get(label) or {}).get(figure)


def _grown(label: str):
    """The ratio of the last growth round, the space at its largest."""
    return lambda result: result["growth"][-1]["endpoints"][label]["ratio_to_bare_view"] if result.get("growth") else None


def _big(result):
    return result["big"]["worker_peak_rss_mb"] if result.get("big") else None


def _tail(result):
    return result["tail"]["worst_p99_over_p50"] if result.get("tail") else None


# The floors of docs/performance.md: (row, the run's figure, kind, floor, unit),
# kind: "min" (at least the floor), "max" (below it) or "within" (at most it)..
FLOORS = [
    ("`GET /v1/polls/{id}` ÷ bare view", _endpoint("GET poll", "ratio_to_bare_view"), "min", 0.25, ""),
    ("`GET /v1/polls?limit=50` ÷ bare view", _endpoint("GET list limit=50", "ratio_to_bare_view"), "min", 0.1, ""),
    ("`POST /v1/polls` (10 options) ÷ bare view", _endpoint("POST poll (10 options)", "ratio_to_bare_view"), "min", 0.08, ""),
    ("results, 100 options × 2,000 participants, p50", _endpoint("results 100x2,000", "p50_ms"), "max", 10, " ms"),
    ("participants, 2,000 × 100, p50", _endpoint("participants 2,000x100", "p50_ms"), "max", 100, " ms"),
    ("20,000 participants streamed: the worker's peak", _big, "max", 200, " MB"),
    ("the list ÷ bare view, after thousands of creates in its space", _grown("GET list limit=50"), "min", 0.1, ""),
    ("`POST` ÷ bare view, after thousands of creates in the space", _grown("POST poll (10 options)"), "min", 0.08, ""),
    ("one worker, 32 connections: the largest p99 ÷ p50 of an endpoint", _tail, "within", 20, ""),
]
NAMES = {"sqlite": "SQLite", "postgres": "PostgreSQL + Redis"}


def print_config(result: dict, args) -> None:
    print(f"\n== {result['config']}: load average {result['load_start']:.2f} at the start, "
          f"{result['load_end']:.2f} at the end; {args.rounds} rounds of {args.seconds:g} s; "
          f"fixtures built in {result['setup_s']} s")
    print(f"{'endpoint':<26}{'conns':>6}{'rps':>9}{'÷ bare view':>13}{'p50 ms':>9}{'p95 ms':>9}")
    for label, stats in result["endpoints"].items():
        ratio = stats["ratio_to_bare_view"]
        print(f"{label:<26}{stats['connections']:>6}{stats['rps']:>9}{'-' if ratio is None else ratio:>13}"
              f"{stats['p50_ms']:>9}{stats['p95_ms']:>9}")
    if result["cpu_ms_per_request"]:
        groups = list(next(iter(result["cpu_ms_per_request"].values())))
        print(f"CPU ms per request{'':<8}" + "".join(f"{group:>10}" for group in groups))
        for label, spent in result["cpu_ms_per_request"].items():
            print(f"{label:<26}" + "".join(f"{spent[group]:>10}" for group in groups))
    if result["big"]:
        big = result["big"]
        print(f"participants {args.big:,}x100: {big['bytes']:,} B in {big['median_s']} s (median of 3), "
              f"worker peak RSS {big['worker_peak_rss_mb']} MB")
    for growth in result.get("growth") or []:
        print(f"after growth, {growth['polls']:,} polls in the space: " + "; ".join(
            f"{label} {stats['rps']} rps, {stats['ratio_to_bare_view']} of the bare view, p50 {stats['p50_ms']} ms"
            for label, stats in growth["endpoints"].items()))
    if result.get("tail"):
        tail = result["tail"]
        print(f"one worker, {tail['connections']} connections on one key:")
        print(f"{'endpoint':<26}{'rps':>9}{'p50 ms':>9}{'p99 ms':>9}{'p99÷p50':>9}")
        for label, stats in tail["endpoints"].items():
            print(f"{label:<26}{stats['rps']:>9}{stats['p50_ms']:>9}{stats['p99_ms']:>9}{stats['p99_over_p50']:>9}")
    sys.stdout.flush()


def markdown(results: list[dict]) -> str:
    """The floors beside each configuration's figures, as a Markdown table; a figure past its
    floor is marked **below the floor**, one the run left out is `-`."""
    names = [NAMES.get(result["config"], result["config"]) for result in results]
    lines = ["| | " + " | ".join(names) + " | floor |", "| --- |" + " --- |" * (len(results) + 1)]
    bare = [result["endpoints"].get("bare Django view", {}).get("rps") for result in results]
    lines.append("| bare Django view, requests/s | " + " | ".join(f"{rps:,.0f}" if rps else "-" for rps in bare) + " | |")
    for row, figure, kind, floor, unit in FLOORS:
        cells = []
        for result in results:
            value = figure(result)
            if value is None:
                cells.append("-")
                continue
            held = {"min": value >= floor, "max": value < floor, "within": value <= floor}[kind]
            cells.append(f"{value:g}{unit}" + ("" if held else " **below the floor**"))
        bound = {"min": "≥ ", "max": "< ", "within": "≤ "}[kind] + f"{floor:g}{unit}"
        lines.append(f"| {row} | " + " | ".join(cells) + f" | {bound} |")
    return "\n".join(lines)


def print_markdown(results: list[dict]) -> None:
    """The table, and under it what it was measured on: the commit and the processor."""
    root = Path(__file__).resolve().parent.parent
    commit = subprocess.run(["git", "-C", str(root), "describe", "--always", "--dirty"], capture_output=True,
                            text=True).stdout.strip() or "unknown"
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "unknown processor")
    print("\n" + markdown(results))
    print(f"\nbench/endpoints.py at {commit}, {cpu}.")
