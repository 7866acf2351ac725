"""What bench/endpoints.py prints: each configuration's figures as it finishes, and with
`--markdown` one table of the floors (docs/performance.md) beside what the run measured."""

import subprocess
import sys
from pathlib import Path

# The floors of docs/performance.md: (row, endpoint label or "big", figure, "min" or "max", floor, unit).
FLOORS = [
    ("`GET /v1/polls/{id}` ÷ bare view", "GET poll", "ratio_to_bare_view", "min", 0.25, ""),
    ("`GET /v1/polls?limit=50` ÷ bare view", "GET list limit=50", "ratio_to_bare_view", "min", 0.1, ""),
    ("`POST /v1/polls` (10 options) ÷ bare view", "POST poll (10 options)", "ratio_to_bare_view", "min", 0.08, ""),
    ("results, 100 options × 2,000 participants, p50", "results 100x2,000", "p50_ms", "max", 10, " ms"),
    ("participants, 2,000 × 100, p50", "participants 2,000x100", "p50_ms", "max", 100, " ms"),
    ("20,000 participants streamed: the worker's peak", "big", "worker_peak_rss_mb", "max", 200, " MB"),
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
    sys.stdout.flush()


def measured(result: dict, source: str, figure: str):
    """The run's figure for one row of FLOORS, or None when the run left it out."""
    stats = result["big"] if source == "big" else result["endpoints"].get(source)
    return stats.get(figure) if stats else None


def markdown(results: list[dict]) -> str:
    """The floors beside each configuration's figures, as a Markdown table; a figure past its
    floor is marked **below the floor**, one the run left out is `-`."""
    names = [NAMES.get(result["config"], result["config"]) for result in results]
    lines = ["| | " + " | ".join(names) + " | floor |", "| --- |" + " --- |" * (len(results) + 1)]
    bare = [result["endpoints"].get("bare Django view", {}).get("rps") for result in results]
    lines.append("| bare Django view, requests/s | " + " | ".join(f"{rps:,.0f}" if rps else "-" for rps in bare) + " | |")
    for row, source, figure, kind, floor, unit in FLOORS:
        cells = []
        for result in results:
            value = measured(result, source, figure)
            if value is None:
                cells.append("-")
                continue
            held = value >= floor if kind == "min" else value < floor
            cells.append(f"{value:g}{unit}" + ("" if held else " **below the floor**"))
        bound = f"≥ {floor:g}" if kind == "min" else f"< {floor:g}{unit}"
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
