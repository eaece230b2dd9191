#!/usr/bin/python3
"""Gathers the raw results of `scripts/dev bench` into one JSON file and prints the comparison table.

    /usr/bin/python3 bench/report.py --raw build/bench/raw --out build/bench/results.json [--markdown]

The raw folder holds one file per run, named by scripts/dev bench:
  ROW.IMPL.json          one JSON object with the keys of `redlock bench --json` (IMPL: ours, node-redlock,
                         ioredis, redis-py, redis-plus-plus)
  ROW.IMPL.server        the CPU seconds all the nodes used during that run (INFO cpu), summed
  ceiling.SHAPE.CMD.csv  `redis-benchmark --csv` of CMD (set: SET key token NX PX 10000; release: EVALSHA of the
                         compare-and-delete script) with the connections and pipeline depth of SHAPE
  meta.json              the run's settings (duration, node count, tools' versions)
  handoffN.IMPL.json     the handoff scenario on N nodes (IMPL: ours, ours-fair, node-redlock): a second table
  semaphoreN.ours.json   the semaphore scenario on N nodes (8 clients x 1 worker, 4 permits): a third table
  hold1.ours.json        the hold scenario on 1 node (100,000 leases with the watchdog): a fourth table
Standard library only: it runs on Debian's python3 as it comes.
"""

import argparse
import csv
import json
import os
import platform
import sys

# The table's rows: id (the ROW of the raw files), label, and the redis-benchmark shape that bounds it.
ROWS = [
    ("seq1", "1 node, 1 caller in sequence", "seq"),
    ("shared1", "1 node, 64 workers / 50 tasks on 1 client", "pipe"),
    ("sep1", "1 node, 64 clients x 1 worker", "conns"),
    ("seq5", "5 nodes, 1 caller in sequence", None),
    ("shared5", "5 nodes, 64 workers / 50 tasks on 1 client", None),
    ("cont5", "5 nodes, contended, 4 clients x 1", None),
]
PEERS = ["node-redlock", "ioredis", "redis-py"]
# Measured only when `scripts/dev bench --redis-plus-plus DIR` gives a checkout of it (not packaged for Debian 12).
REDISPP = "redis-plus-plus"
IMPLS = ["ours"] + PEERS + [REDISPP]  # every implementation a row may hold
# The handoff table: every grant passes to a worker of another client (`redlock bench --scenario handoff`).
HANDOFF_ROWS = [("handoff1", "1 node"), ("handoff5", "5 nodes")]
HANDOFF_IMPLS = [("ours", "plain"), ("ours-fair", "fair"), ("node-redlock", "node-redlock, defaults")]
# The semaphore table: workers contending for a semaphore's permits (`redlock bench --scenario semaphore`).
SEMAPHORE_ROWS = [("semaphore1", "1 node"), ("semaphore5", "5 nodes")]
# redis-benchmark shapes: (connections, pipeline depth, what it stands for).
SHAPES = {
    "seq": (1, 1, "1 connection, 1 request in flight: the round trip"),
    "pipe": (1, 64, "1 connection, pipeline of 64"),
    "conns": (64, 1, "64 connections, 1 request in flight each"),
    "pipe50": (50, 64, "50 connections, pipeline of 64 each"),
}


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def load_number(path):
    try:
        with open(path) as f:
            return float(f.read().strip())
    except (OSError, ValueError):
        return None


def load_csv(path):
    """The one data row of `redis-benchmark --csv`: rps and p50 (microseconds)."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError:
        return None
    if not rows:
        return None
    row = rows[-1]
    try:
        return {"test": row["test"], "rps": float(row["rps"]), "p50_us": float(row["p50_latency_ms"]) * 1000}
    except (KeyError, ValueError):
        return None


def ceiling(raw, shape):
    """Lock + release cycles/s of the server alone: 1 / (1/a + 1/b) of the two commands' rates."""
    a = load_csv(os.path.join(raw, f"ceiling.{shape}.set.csv"))
    b = load_csv(os.path.join(raw, f"ceiling.{shape}.release.csv"))
    if not a or not b or a["rps"] <= 0 or b["rps"] <= 0:
        return None
    connections, pipeline, meaning = SHAPES[shape]
    return {
        "shape": shape,
        "connections": connections,
        "pipeline": pipeline,
        "meaning": meaning,
        "set": a,
        "release": b,
        "cycles_per_sec": round(1 / (1 / a["rps"] + 1 / b["rps"]), 1),
        "set_p50_us": round(a["p50_us"]),
    }


def gather(raw):
    meta = load_json(os.path.join(raw, "meta.json")) or {}
    meta.setdefault("python", platform.python_version())
    meta.setdefault("machine", platform.machine())
    meta.setdefault("cores", os.cpu_count())
    rows = []
    for row_id, label, shape in ROWS:
        row = {"id": row_id, "label": label}
        for impl in IMPLS:
            result = load_json(os.path.join(raw, f"{row_id}.{impl}.json"))
            if result is not None:
                server = load_number(os.path.join(raw, f"{row_id}.{impl}.server"))
                if server is not None and result.get("ops"):
                    result["server_us_per_op"] = round(server * 1e6 / result["ops"], 2)
                row[impl] = result
        if shape:
            c = ceiling(raw, shape)
            if c:
                row["ceiling"] = c
        rows.append(row)
    extra = {s: ceiling(raw, s) for s in SHAPES}
    handoff = []
    for row_id, label in HANDOFF_ROWS:
        for impl, kind in HANDOFF_IMPLS:
            result = load_json(os.path.join(raw, f"{row_id}.{impl}.json"))
            if result is not None:
                handoff.append({"label": f"{kind}, {label}", "result": result})
    semaphore = []
    for row_id, label in SEMAPHORE_ROWS:
        result = load_json(os.path.join(raw, f"{row_id}.ours.json"))
        if result is not None:
            semaphore.append({"label": label, "result": result})
    hold = load_json(os.path.join(raw, "hold1.ours.json"))
    return {"meta": meta, "rows": rows, "ceilings": {s: c for s, c in extra.items() if c}, "handoff": handoff,
            "semaphore": semaphore, "hold": [hold] if hold else []}


def rate(result):
    return result.get("ops_per_sec") if result else None


def p50(result):
    return (result or {}).get("acquire_us", {}).get("p50")


def fmt_int(v):
    return "-" if v is None else f"{round(v):,}"


def fmt_float(v, digits=1):
    return "-" if v is None else f"{v:.{digits}f}"


def fmt_ratio(a, b):
    return "-" if not a or not b else f"{a / b:.2f}x"


def with_errors(text, result):
    """Marks a figure whose run had errors (failed attempts or releases)."""
    return text + ("!" if result and result.get("errors") else "")


def table(results):
    redispp = any(REDISPP in row for row in results["rows"])  # its columns only when it was measured
    head = ["scenario", "ours c/s", "p50", "cpu/op", "usr", "sys", "alloc/op", "srv/op",
            "node-redlock", "p50", "srv/op", "ioredis", "p50", "redis-py", "p50"]
    head += ["redis++", "p50", "srv/op"] if redispp else []
    head += ["ceiling", "p50", "ours/node"] + (["ours/redis++"] if redispp else []) + ["ours/ceil"]
    lines = [head]
    for row in results["rows"]:
        ours = row.get("ours")
        cells = [row["label"], with_errors(fmt_int(rate(ours)), ours), fmt_int(p50(ours)),
                 fmt_float((ours or {}).get("cpu_us_per_op")), fmt_float((ours or {}).get("user_us_per_op")),
                 fmt_float((ours or {}).get("sys_us_per_op")), fmt_float((ours or {}).get("allocs_per_op")),
                 fmt_float((ours or {}).get("server_us_per_op"))]
        for impl in PEERS:
            peer = row.get(impl)
            cells += [with_errors(fmt_int(rate(peer)), peer), fmt_int(p50(peer))]
            if impl == "node-redlock":
                cells.append(fmt_float((peer or {}).get("server_us_per_op")))
        if redispp:
            peer = row.get(REDISPP)
            cells += [with_errors(fmt_int(rate(peer)), peer), fmt_int(p50(peer)),
                      fmt_float((peer or {}).get("server_us_per_op"))]
        c = row.get("ceiling")
        cells += [fmt_int(c["cycles_per_sec"]) if c else "-",
                  fmt_int(c["set_p50_us"]) if c and c["shape"] == "seq" else "-"]
        cells.append(fmt_ratio(rate(ours), rate(row.get("node-redlock"))))
        if redispp:
            cells.append(fmt_ratio(rate(ours), rate(row.get(REDISPP))))
        cells.append(fmt_ratio(rate(ours), c["cycles_per_sec"] if c else None))
        lines.append(cells)
    return lines


def handoff_table(results):
    """Gap from a release's start to the next holder's grant; retries a timer started (polling); server calls."""
    lines = [["handoff", "handoffs/s", "gap p50", "p99", "attempts/grant", "timed retries", "cmds/grant"]]
    for entry in results.get("handoff", []):
        r = entry["result"]
        ops = r.get("ops") or 0
        calls = sum(r.get("server_calls", {}).values())
        attempts = r.get("attempts")
        timed = r.get("timed_retries")
        lines.append([entry["label"], with_errors(fmt_int(r.get("ops_per_sec")), r),
                      fmt_int(r.get("handoff_us", {}).get("p50")), fmt_int(r.get("handoff_us", {}).get("p99")),
                      fmt_float(attempts / ops, 2) if attempts is not None and ops else "-",
                      fmt_int(timed) if timed is not None else "polls",
                      fmt_float(calls / ops) if ops else "-"])
    return lines


def semaphore_table(results):
    """Permits/s and acquire latency of workers contending for a semaphore; how many acquires had to wait."""
    lines = [["semaphore", "workers", "limit", "permits/s", "acquire p50", "p99", "max", "at once", "p50", "p99",
              "waited", "p50", "p99", "attempts/permit", "max held"]]
    for entry in results.get("semaphore", []):
        r = entry["result"]
        acquire = r.get("acquire_us", {})
        granted = (r.get("first_try") or 0) + (r.get("waited") or 0)
        lines.append([entry["label"], f"{r.get('clients', 0)} x {r.get('workers', 0)}", str(r.get("limit", "-")),
                      with_errors(fmt_int(r.get("ops_per_sec")), r), fmt_int(acquire.get("p50")),
                      fmt_int(acquire.get("p99")), fmt_int(acquire.get("max")),
                      f"{100 * r['first_try'] / granted:.0f}%" if granted else "-",
                      fmt_int(r.get("first_try_us", {}).get("p50")), fmt_int(r.get("first_try_us", {}).get("p99")),
                      f"{100 * r['waited'] / granted:.0f}%" if granted else "-",
                      fmt_int(r.get("waited_us", {}).get("p50")), fmt_int(r.get("waited_us", {}).get("p99")),
                      fmt_float(r["attempts"] / granted, 2) if granted else "-", str(r.get("max_held", "-"))])
    return lines


def hold_table(results):
    """What held leases cost one client: memory, the watchdog's CPU, and how many were lost (none should be)."""
    lines = [["hold, 1 node", "leases", "held", "MB held", "peak", "bytes/lease", "watchdog %core", "extensions",
              "failed", "us/extension", "lost", "release s", "errors"]]
    for r in results.get("hold", []):
        lines.append(["ours", fmt_int(r.get("leases")), fmt_int(r.get("held")), fmt_float(r.get("rss_held_mb")),
                      fmt_float(r.get("rss_peak_mb")), fmt_int(r.get("bytes_per_lease")),
                      fmt_float(r.get("hold_cpu_percent")), fmt_int(r.get("extensions")),
                      fmt_int(r.get("extension_failures")), fmt_float(r.get("us_per_extension"), 2),
                      fmt_int(r.get("lost")), fmt_float(r.get("release_seconds"), 2), fmt_int(r.get("errors"))])
    return lines


def all_tables(results):
    return (table(results), handoff_table(results), semaphore_table(results), hold_table(results))


def print_text(results, out):
    for lines in all_tables(results):
        if len(lines) < 2:
            continue
        print_lines(lines, out)
        out.write("\n")


def print_lines(lines, out):
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    for n, line in enumerate(lines):
        text = "  ".join(cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(line))
        out.write(text.rstrip() + "\n")
        if n == 0:
            out.write("-" * len(text) + "\n")


def print_markdown(results, out):
    for lines in all_tables(results):
        if len(lines) < 2:
            continue
        out.write("| " + " | ".join(lines[0]) + " |\n")
        out.write("| " + " | ".join(["---"] + ["---:"] * (len(lines[0]) - 1)) + " |\n")
        for line in lines[1:]:
            out.write("| " + " | ".join(line) + " |\n")
        out.write("\n")


def print_notes(results, out, bullet=""):
    m = results["meta"]
    out.write(f"{bullet}cycles/s of lock + release over {m.get('duration_ms', '?')} ms per run; p50: acquire latency in us;"
              " cpu/op, usr, sys: client CPU us per cycle; alloc/op: operator new calls per cycle;"
              " srv/op: CPU us per cycle of all the nodes together; ! marks a run with errors\n")
    out.write(f"{bullet}ceiling: redis-benchmark, 1 / (1/SET + 1/EVALSHA release) for the row's shape;"
              " its p50 is a plain SET round trip\n")
    for s, c in sorted(results["ceilings"].items()):
        out.write(f"{bullet or '  '}{s:7s} {c['meaning']}: SET {fmt_int(c['set']['rps'])}/s,"
                  f" release {fmt_int(c['release']['rps'])}/s -> {fmt_int(c['cycles_per_sec'])} cycles/s\n")
    for row in results["rows"]:
        for impl in IMPLS:
            r = row.get(impl)
            if r and r.get("errors"):
                out.write(f"{bullet or '  '}errors: {row['label']}, {impl}: {r['errors']} of {r['ops'] + r['errors']}\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--raw", required=True, help="folder of the raw results")
    parser.add_argument("--out", help="write all results as one JSON file here")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    o = parser.parse_args()
    results = gather(o.raw)
    if o.out:
        with open(o.out, "w") as f:
            json.dump(results, f, indent=2)
            f.write("\n")
    if o.markdown:
        print_markdown(results, sys.stdout)
        sys.stdout.write("\n")
        print_notes(results, sys.stdout, bullet="- ")
    else:
        print_text(results, sys.stdout)
        print_notes(results, sys.stdout)


if __name__ == "__main__":
    main()
