#!/usr/bin/python3
"""Peer benchmark: redis-py's Lock (Debian's python3-redis) doing what `redlock bench --scenario uncontended`
does on one node, printing one JSON object with the keys of `redlock bench --json`.

    /usr/bin/python3 bench.py --nodes redis://127.0.0.1:6379 --duration 5s --ttl 10000 [--threads K]

Each of K threads (default 1: one caller in sequence) loops: Lock(key, timeout).acquire(blocking=False) on its
own key bench:<runid>:<thread> (SET key token NX PX ttl), then release() (redis-py's Lua compare-and-delete,
sent as EVALSHA). The threads share one redis.Redis client (its connection pool gives each a connection).
"""

import argparse
import json
import math
import os
import re
import resource
import sys
import threading
import time

try:
    import redis
except ImportError:
    sys.stderr.write("bench.py: the redis module is missing (Debian: apt-get install python3-redis; "
                     "run with /usr/bin/python3)\n")
    sys.exit(69)


def parse_duration(text):
    """5s, 500ms, 2m, or plain seconds: seconds."""
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m)?", text)
    if not m:
        raise argparse.ArgumentTypeError(f"'{text}' is not a duration")
    n = float(m.group(1))
    return {"ms": n / 1000, "s": n, "m": n * 60, None: n}[m.group(2)]


def positive_int(text):
    if not re.fullmatch(r"[1-9][0-9]*", text):
        raise argparse.ArgumentTypeError(f"'{text}' is not a positive integer")
    return int(text)


def percentile(sorted_samples, p):
    """Nearest rank, as `redlock bench` computes it; None without samples."""
    if not sorted_samples:
        return None
    rank = min(max(math.ceil(p / 100 * len(sorted_samples)), 1), len(sorted_samples))
    return sorted_samples[rank - 1]


def per_op(total, ops):
    return round(total / ops, 2) if ops > 0 else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="redis://127.0.0.1:6379", help="one node URL")
    parser.add_argument("--duration", type=parse_duration, default=5.0, help="5s, 500ms, 2m, or seconds")
    parser.add_argument("--ttl", type=positive_int, default=10000, help="lock TTL in milliseconds")
    parser.add_argument("--threads", type=positive_int, default=1, help="threads sharing the client")
    o = parser.parse_args()
    urls = [u for u in re.split(r"[,\s]+", o.nodes) if u]
    if len(urls) != 1:
        parser.error("--nodes: redis-py's Lock works on one node")

    client = redis.Redis.from_url(urls[0])
    try:
        client.ping()
    except redis.RedisError as e:
        sys.stderr.write(f"bench.py: cannot connect: {e}\n")
        sys.exit(69)

    run_id = os.urandom(8).hex()
    stats = [{"ops": 0, "errors": 0, "first_error": None, "acquire_us": []} for _ in range(o.threads)]
    start = time.monotonic()
    end = start + o.duration

    def worker(index):
        s = stats[index]
        key = f"bench:{run_id}:{index}"
        while time.monotonic() < end:
            lock = client.lock(key, timeout=o.ttl / 1000)
            t0 = time.perf_counter_ns()
            try:
                acquired = lock.acquire(blocking=False)
            except redis.RedisError as e:
                acquired, why = False, e
            else:
                why = "not acquired"
            t1 = time.perf_counter_ns()
            if not acquired:
                s["errors"] += 1
                s["first_error"] = s["first_error"] or f"lock: {why}"
                time.sleep(0.01)
                continue
            s["acquire_us"].append((t1 - t0) // 1000)
            try:
                lock.release()
                s["ops"] += 1
            except (redis.RedisError, redis.exceptions.LockError) as e:
                s["errors"] += 1
                s["first_error"] = s["first_error"] or f"release: {e}"

    usage_start = resource.getrusage(resource.RUSAGE_SELF)
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(o.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.monotonic() - start
    usage_end = resource.getrusage(resource.RUSAGE_SELF)
    client.close()

    ops = sum(s["ops"] for s in stats)
    errors = sum(s["errors"] for s in stats)
    acquire = sorted(v for s in stats for v in s["acquire_us"])
    user_us = (usage_end.ru_utime - usage_start.ru_utime) * 1e6
    sys_us = (usage_end.ru_stime - usage_start.ru_stime) * 1e6
    result = {
        "scenario": "uncontended",
        "fencing": False,
        "nodes": 1,
        "clients": 1,
        "workers": o.threads,
        "ops": ops,
        "ops_per_sec": round(ops / seconds, 1) if seconds > 0 else 0,
        "cpu_us_per_op": per_op(user_us + sys_us, ops),
        "user_us_per_op": per_op(user_us, ops),
        "sys_us_per_op": per_op(sys_us, ops),
        "allocs_per_op": None,
        "acquire_us": {p: percentile(acquire, q) for p, q in (("p50", 50), ("p90", 90), ("p99", 99), ("max", 100))},
        "handoff_us": {"p50": None, "p99": None},
        "errors": errors,
    }
    print(json.dumps(result, separators=(",", ":")))
    if errors:
        first = next(s["first_error"] for s in stats if s["first_error"])
        sys.stderr.write(f"bench.py: {errors} errors; first: {first}\n")


if __name__ == "__main__":
    main()
