#!/usr/bin/env node
// Peer benchmark: node-redlock v5 (or ioredis by hand with --raw) doing what `redlock bench --scenario
// uncontended` does, printing one JSON object with the keys of `redlock bench --json`.
//
//   node bench.js --nodes redis://127.0.0.1:6379[,URL...] --concurrency K --duration 5s --ttl 10000 [--raw]
//
// K async tasks share ONE ioredis client per node (node-redlock takes the array of clients); each task loops:
// acquire its own key bench:<runid>:<task> with one attempt (retryCount 0), release it. --raw does the cycle by
// hand on one node: SET key token NX PX ttl, then the compare-and-delete release script (ioredis sends a
// defined command as EVALSHA, EVAL when the server does not know the script yet).
"use strict";

const crypto = require("crypto");
const Redis = require("ioredis");
const Redlock = require("redlock").default;

const RELEASE_SCRIPT =
  "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

function usage(message) {
  process.stderr.write(
    `bench.js: ${message}\n` +
      "usage: node bench.js [--nodes URL[,URL...]] [--concurrency K] [--duration D] [--ttl MS] [--raw]\n" +
      "  D: 5s, 500ms, 2m, or plain seconds\n",
  );
  process.exit(64);
}

// "5s", "500ms", "2m", or a plain number of seconds: milliseconds.
function parseDuration(text) {
  const m = /^([0-9]+(?:\.[0-9]+)?)(ms|s|m)?$/.exec(text);
  if (!m) usage(`--duration: '${text}' is not a duration`);
  const n = Number(m[1]);
  const unit = m[2] || "s";
  return unit === "ms" ? n : unit === "s" ? n * 1000 : n * 60000;
}

function positiveInt(name, text) {
  if (!/^[1-9][0-9]*$/.test(text)) usage(`${name}: '${text}' is not a positive integer`);
  return Number(text);
}

function parseArgs(argv) {
  const o = { nodes: ["redis://127.0.0.1:6379"], concurrency: 1, durationMs: 5000, ttl: 10000, raw: false };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) usage(`${flag} needs a value`);
      return argv[++i];
    };
    switch (flag) {
      case "--nodes":
        o.nodes = value()
          .split(/[,\s]+/)
          .filter((u) => u.length > 0);
        if (o.nodes.length === 0) usage("--nodes is empty");
        break;
      case "--concurrency":
        o.concurrency = positiveInt(flag, value());
        break;
      case "--duration":
        o.durationMs = parseDuration(value());
        break;
      case "--ttl":
        o.ttl = positiveInt(flag, value());
        break;
      case "--raw":
        o.raw = true;
        break;
      case "-h":
      case "--help":
        process.stdout.write(
          "usage: node bench.js [--nodes URL[,URL...]] [--concurrency K] [--duration D] [--ttl MS] [--raw]\n",
        );
        process.exit(0);
        break;
      default:
        usage(`unknown argument '${flag}'`);
    }
  }
  if (o.raw && o.nodes.length !== 1) usage("--raw takes exactly one node");
  return o;
}

// Nearest-rank percentile of sorted samples, as `redlock bench` computes it; null without samples.
function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  const rank = Math.min(Math.max(Math.ceil((p / 100) * sorted.length), 1), sorted.length);
  return sorted[rank - 1];
}

function perOp(total, ops) {
  return ops > 0 ? Number((total / ops).toFixed(2)) : null;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const clients = o.nodes.map((url) => new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 }));
  try {
    await Promise.all(clients.map((c) => c.connect()));
  } catch (e) {
    process.stderr.write(`bench.js: cannot connect: ${e.message}\n`);
    clients.forEach((c) => c.disconnect());
    process.exit(69);
  }
  // node-redlock: one attempt per acquire, as `redlock bench` uncontended does.
  const redlock = new Redlock(clients, { retryCount: 0 });
  const raw = clients[0];
  raw.defineCommand("releaseLock", { numberOfKeys: 1, lua: RELEASE_SCRIPT });

  const runId = crypto.randomBytes(8).toString("hex");
  const acquireUs = [];
  let ops = 0;
  let errors = 0;
  let firstError = null;
  const fail = (what, e) => {
    errors++;
    if (firstError === null) firstError = `${what}: ${e && e.message ? e.message : e}`;
  };

  const start = process.hrtime.bigint();
  const end = start + BigInt(Math.round(o.durationMs * 1e6));
  const cpuStart = process.cpuUsage();

  async function task(index) {
    const key = `bench:${runId}:${index}`;
    while (process.hrtime.bigint() < end) {
      const t0 = process.hrtime.bigint();
      if (o.raw) {
        const token = crypto.randomBytes(16).toString("hex");
        let reply;
        try {
          reply = await raw.set(key, token, "PX", o.ttl, "NX");
        } catch (e) {
          fail("lock", e);
          await sleep(10);
          continue;
        }
        const t1 = process.hrtime.bigint();
        if (reply !== "OK") {
          fail("lock", "not acquired");
          await sleep(10);
          continue;
        }
        acquireUs.push(Number((t1 - t0) / 1000n));
        try {
          const released = await raw.releaseLock(key, token);
          if (released !== 1) throw new Error("the key was not ours any more");
          ops++;
        } catch (e) {
          fail("release", e);
        }
      } else {
        let lock;
        try {
          lock = await redlock.acquire([key], o.ttl);
        } catch (e) {
          fail("lock", e);
          await sleep(10);
          continue;
        }
        const t1 = process.hrtime.bigint();
        acquireUs.push(Number((t1 - t0) / 1000n));
        try {
          await lock.release();
          ops++;
        } catch (e) {
          fail("release", e);
        }
      }
    }
  }

  await Promise.all(Array.from({ length: o.concurrency }, (_, i) => task(i)));
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const cpu = process.cpuUsage(cpuStart);
  await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));

  acquireUs.sort((a, b) => a - b);
  const result = {
    scenario: "uncontended",
    fencing: false,
    nodes: o.nodes.length,
    clients: 1,
    workers: o.concurrency,
    ops,
    ops_per_sec: seconds > 0 ? Number((ops / seconds).toFixed(1)) : 0,
    cpu_us_per_op: perOp(cpu.user + cpu.system, ops),
    user_us_per_op: perOp(cpu.user, ops),
    sys_us_per_op: perOp(cpu.system, ops),
    allocs_per_op: null,
    acquire_us: {
      p50: percentile(acquireUs, 50),
      p90: percentile(acquireUs, 90),
      p99: percentile(acquireUs, 99),
      max: percentile(acquireUs, 100),
    },
    handoff_us: { p50: null, p99: null },
    errors,
  };
  process.stdout.write(JSON.stringify(result) + "\n");
  if (errors > 0) process.stderr.write(`bench.js: ${errors} errors; first: ${firstError}\n`);
}

main().catch((e) => {
  process.stderr.write(`bench.js: ${e && e.stack ? e.stack : e}\n`);
  process.exit(70);
});
