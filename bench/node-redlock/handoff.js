#!/usr/bin/env node
// Peer benchmark: node-redlock v5 with its DEFAULT settings (retryCount 10, retryDelay 200 ms, retryJitter
// 200 ms) in the scenario of `redlock bench --scenario handoff`, printing the same JSON keys.
//
//   node handoff.js --nodes redis://127.0.0.1:6379[,URL...] --clients 10 --duration 5s
//
// C workers, each with its own Redlock over its own ioredis clients (separate connections, as separate
// processes would have), on one key. A worker locks, holds 1 ms, releases, and asks again only once another
// worker took the lock, so every grant is a handoff. node-redlock has no release notification: a waiter
// learns of a release at its next retry. An acquire that exhausts its retries (about 2 s) counts as a failed
// wait and the worker asks again; it is not an error.
"use strict";

const Redis = require("ioredis");
const Redlock = require("redlock").default;
const crypto = require("crypto");

function usage(message) {
  process.stderr.write(
    `handoff.js: ${message}\n` + "usage: node handoff.js [--nodes URL[,URL...]] [--clients C] [--duration D]\n",
  );
  process.exit(64);
}

function parseArgs(argv) {
  const o = { nodes: ["redis://127.0.0.1:6379"], clients: 10, durationMs: 5000, ttl: 10000 };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) usage(`${flag} needs a value`);
      return argv[++i];
    };
    if (flag === "--nodes") o.nodes = value().split(/[,\s]+/).filter((u) => u.length > 0);
    else if (flag === "--clients") o.clients = Number(value());
    else if (flag === "--duration") {
      const m = /^([0-9]+)(ms|s)?$/.exec(value());
      if (!m) usage("--duration: 5s or 500ms");
      o.durationMs = Number(m[1]) * (m[2] === "ms" ? 1 : 1000);
    } else usage(`unknown argument '${flag}'`);
  }
  if (!(o.clients >= 2)) usage("--clients: at least 2");
  return o;
}

function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  const rank = Math.min(Math.max(Math.ceil((p / 100) * sorted.length), 1), sorted.length);
  return sorted[rank - 1];
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Calls per command over every node (INFO commandstats), without this script's own bookkeeping.
async function serverCalls(admins) {
  const calls = {};
  for (const admin of admins) {
    const info = await admin.info("commandstats");
    for (const line of info.split(/\r?\n/)) {
      const m = /^cmdstat_([^:]+):calls=([0-9]+)/.exec(line);
      if (!m || ["config", "info", "hello", "client", "ping"].includes(m[1].split("|")[0])) continue;
      calls[m[1]] = (calls[m[1]] || 0) + Number(m[2]);
    }
  }
  return Object.fromEntries(Object.entries(calls).sort());
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const admins = o.nodes.map((url) => new Redis(url));
  const workers = Array.from({ length: o.clients }, () => {
    const clients = o.nodes.map((url) => new Redis(url, { maxRetriesPerRequest: 1 }));
    return { clients, redlock: new Redlock(clients) }; // the defaults
  });
  await Promise.all(admins.map((a) => a.config("RESETSTAT")));

  const key = `redlock-bench-handoff:${crypto.randomBytes(8).toString("hex")}`;
  const grants = []; // { holder, acquired, releaseStarted }
  let waiters = []; // resolvers of workers waiting for the next grant
  let failedWaits = 0;
  let errors = 0;
  const start = process.hrtime.bigint();
  const end = start + BigInt(o.durationMs) * 1000000n;
  const now = () => process.hrtime.bigint();
  const cpuStart = process.cpuUsage();

  async function worker(index) {
    const { redlock } = workers[index];
    while (now() < end) {
      let lock;
      try {
        lock = await redlock.acquire([key], o.ttl);
      } catch (e) {
        failedWaits++; // its retries ran out while others held the lock
        continue;
      }
      if (now() >= end) {
        await lock.release().catch(() => {});
        break;
      }
      const slot = grants.length;
      grants.push({ holder: index, acquired: now(), releaseStarted: null });
      const woken = waiters;
      waiters = [];
      woken.forEach((resolve) => resolve());
      await sleep(1); // the holder's work
      grants[slot].releaseStarted = now();
      try {
        await lock.release();
      } catch (e) {
        errors++;
      }
      while (grants.length <= slot + 1 && now() < end)
        await Promise.race([new Promise((resolve) => waiters.push(resolve)), sleep(100)]);
    }
  }

  await Promise.all(workers.map((_, i) => worker(i)));
  const seconds = Number(now() - start) / 1e9;
  const cpu = process.cpuUsage(cpuStart);
  const calls = await serverCalls(admins);
  for (const w of workers) w.clients.forEach((c) => c.disconnect());
  admins.forEach((a) => a.disconnect());

  const gaps = [];
  for (let k = 1; k < grants.length; k++) {
    if (grants[k - 1].releaseStarted === null || grants[k - 1].holder === grants[k].holder) continue;
    gaps.push(Number((grants[k].acquired - grants[k - 1].releaseStarted) / 1000n));
  }
  gaps.sort((a, b) => a - b);
  const ops = grants.length;
  process.stdout.write(
    JSON.stringify({
      scenario: "handoff",
      nodes: o.nodes.length,
      clients: o.clients,
      workers: 1,
      ops,
      ops_per_sec: seconds > 0 ? Number((ops / seconds).toFixed(1)) : 0,
      cpu_us_per_op: ops > 0 ? Number(((cpu.user + cpu.system) / ops).toFixed(2)) : null,
      handoff_us: { p50: percentile(gaps, 50), p99: percentile(gaps, 99) },
      lock: "node-redlock",
      handoffs: gaps.length,
      handoff_max_us: percentile(gaps, 100),
      failed_waits: failedWaits,
      server_calls: calls,
      errors,
    }) + "\n",
  );
}

main().catch((e) => {
  process.stderr.write(`handoff.js: ${e && e.stack ? e.stack : e}\n`);
  process.exit(70);
});
