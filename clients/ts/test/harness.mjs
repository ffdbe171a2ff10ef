// Test support: a real pathd (PATHD_BIN, else the workspace's debug build) on a free port,
// and a TCP proxy in front of it whose connections the test can cut.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
export const repo = path.resolve(here, "../../..");
export const ADMIN_TOKEN = "scenario-admin-token";

/** Starts pathd; resolves once it is ready. `stop()` ends it (SIGTERM, by pid). */
export async function startPathd(extraArgs = []) {
  const bin = process.env.PATHD_BIN || path.join(repo, "target/debug/pathd");
  const data = mkdtempSync(path.join(os.tmpdir(), "pathd-ts-"));
  const child = spawn(
    bin,
    [
      "serve",
      "--addr", "127.0.0.1:0",
      "--maps-dir", path.join(repo, "maps"),
      "--data-dir", path.join(data, "data"),
      "--admin-token", ADMIN_TOKEN,
      "--pool-threads", "2",
      // One event kept per subscription: a reconnect after two events gets a resync.
      "--subscription-event-buffer", "1",
      ...extraArgs,
    ],
    { env: { ...process.env, PATHD_LOG_FORMAT: "json", RUST_LOG: "warn,pathd=info" }, stdio: ["ignore", "pipe", "inherit"] },
  );
  const addr = await new Promise((resolve, reject) => {
    let buf = "";
    child.on("exit", (code) => reject(new Error(`pathd exited (${code}) before listening`)));
    child.stdout.on("data", (chunk) => {
      buf += chunk;
      for (const line of buf.split("\n")) {
        try {
          const rec = JSON.parse(line);
          if (rec.message === "pathd listening") resolve(rec.addr);
        } catch {}
      }
    });
  });
  child.stdout.resume();
  const url = `http://${addr}`;
  for (let i = 0; ; i++) {
    const r = await fetch(`${url}/readyz`).catch(() => null);
    if (r?.ok) break;
    if (i > 600) throw new Error("pathd not ready");
    await new Promise((res) => setTimeout(res, 100));
  }
  return {
    url,
    port: Number(addr.split(":").pop()),
    async stop() {
      if (child.exitCode === null) {
        const done = new Promise((res) => child.once("exit", res));
        child.kill("SIGTERM");
        await done;
      }
      rmSync(data, { recursive: true, force: true });
    },
  };
}

/** A TCP proxy to 127.0.0.1:port; `cut()` drops every open connection. */
export async function startProxy(port) {
  const sockets = new Set();
  const server = net.createServer((client) => {
    const upstream = net.connect(port, "127.0.0.1");
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => {});
    }
    client.pipe(upstream);
    upstream.pipe(client);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise((res) => server.listen(0, "127.0.0.1", res));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    cut() {
      const n = sockets.size;
      for (const s of sockets) s.destroy();
      return n;
    },
    async stop() {
      for (const s of sockets) s.destroy();
      await new Promise((res) => server.close(res));
    },
  };
}

/** Polls `cond` every 20 ms until it holds (at most 30 s): waits for a state, never times one. */
export async function until(what, cond) {
  for (let i = 0; i < 1500; i++) {
    if (await cond()) return;
    await new Promise((res) => setTimeout(res, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}
