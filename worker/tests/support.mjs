// Runs the Worker on workerd (wrangler dev, local mode, Node 22 from worker/node_modules) on
// 127.0.0.1 and talks to it over HTTP. Used by the tests and the load benchmark.
//
// Environment: EDGERAG (the CLI), EDGERAG_DEMO_BUNDLE and EDGERAG_QUANTIZED_MODEL (the files
// `make worker-assets` copies into worker/assets/).
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const root = new URL("../../", import.meta.url).pathname;
const tools = join(root, "worker/node_modules");
const node22 = join(tools, ".bin/node");
const wranglerJs = join(tools, "wrangler/bin/wrangler.js");
const quiet = { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_SEND_METRICS: "false", CI: "1" };

export function env(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the worker tests with make test-worker`);
  return value;
}

/** Runs the edgerag CLI and returns its parsed --json output. */
export function cli(...args) {
  return JSON.parse(execFileSync(env("EDGERAG"), [...args, "--json"], { encoding: "utf8", maxBuffer: 1 << 26 }));
}

export async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function wrangler(args, options = {}) {
  return execFileSync(node22, [wranglerJs, ...args], { cwd: root, env: quiet, encoding: "utf8", ...options });
}

/**
 * Starts the Worker with `vars` (strings; they override wrangler.toml's, secrets included) and
 * the R2 objects `r2` ({ key: file }) in a fresh local bucket. Resolves to
 * { url, pid, log(), stop() } once /v1/health answers.
 */
export async function startWorker({ vars = {}, r2 = {}, inspectorPort } = {}) {
  const persist = mkdtempSync(join(tmpdir(), "edgerag-worker-"));
  for (const [key, file] of Object.entries(r2)) {
    wrangler(["r2", "object", "put", `edgerag-bundles/${key}`, "--file", file, "--local", "--persist-to", persist]);
  }
  const port = await freePort();
  const args = [wranglerJs, "dev", "--ip", "127.0.0.1", "--port", String(port), "--persist-to", persist,
    "--show-interactive-dev-session=false", "--log-level", "info",
    "--inspector-port", String(inspectorPort ?? (await freePort()))];
  for (const [name, value] of Object.entries(vars)) args.push("--var", `${name}:${value}`);
  const child = spawn(node22, args, { cwd: root, env: quiet, stdio: ["ignore", "pipe", "pipe"], detached: true });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  const url = `http://127.0.0.1:${port}`;
  const stop = () => {
    try { process.kill(-child.pid, "SIGTERM"); } catch {}
    rmSync(persist, { recursive: true, force: true });
  };
  const started = Date.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`wrangler dev exited (${child.exitCode}):\n${output}`);
    try {
      const response = await fetch(`${url}/v1/health`);
      if (response.ok) break;
    } catch {}
    if (Date.now() - started > 120_000) {
      stop();
      throw new Error(`the Worker did not start in 120 s:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return { url, pid: child.pid, log: () => output, stop };
}

/** The PIDs of the workerd processes under `pid` (the wrangler process group). */
export function workerdPids(pid) {
  const out = execFileSync("ps", ["-o", "pid=,comm=", "-g", String(pid)], { encoding: "utf8" });
  return out.split("\n").map((l) => l.trim().split(/\s+/)).filter(([, c]) => c === "workerd").map(([p]) => Number(p));
}

/** Resident and peak resident memory (VmRSS, VmHWM) of a process, in bytes. */
export function memory(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (name) => Number(status.match(new RegExp(`^${name}:\\s+(\\d+) kB`, "m"))[1]) * 1024;
  return { rss: kb("VmRSS"), peak: kb("VmHWM") };
}

/** POSTs `body` as JSON; resolves to { status, headers, body } (body parsed when JSON). */
export async function post(url, body, headers = {}) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return reply(response);
}

export async function get(url, headers = {}) {
  return reply(await fetch(url, { headers }));
}

async function reply(response) {
  const text = await response.text();
  let body = text;
  if ((response.headers.get("content-type") ?? "").includes("json")) body = JSON.parse(text);
  return { status: response.status, headers: response.headers, body };
}

/** Server-sent events of a response, parsed: [{ event, data }]. */
export async function events(response) {
  const text = await response.text();
  return text
    .split("\n\n")
    .filter((block) => block.trim())
    .map((block) => {
      const lines = block.split("\n");
      const event = lines.find((l) => l.startsWith("event: "))?.slice(7) ?? "message";
      const data = lines.filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
      return { event, data };
    });
}

/**
 * The V8 heap of the Worker's isolate through the DevTools
 * inspector wrangler dev opens on `port` (needs a global WebSocket: Node 22). Resolves to
 * { used, total } in bytes: `used` is what the isolate holds in JavaScript (the wasm memory is
 * counted apart, by /v1/health).
 */
export async function isolateHeap(port) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`, { headers: { Origin: "http://localhost" } });
  let id = 0;
  const pending = new Map();
  const call = (method) =>
    new Promise((resolve, reject) => {
      pending.set(++id, { resolve, reject });
      setTimeout(() => reject(new Error(`inspector: no reply to ${method} in 10 s`)), 10_000);
      ws.send(JSON.stringify({ id, method }));
    });
  ws.onmessage = (event) => {
    const message = JSON.parse(event.data);
    const waiting = pending.get(message.id);
    if (!waiting) return;
    pending.delete(message.id);
    message.error ? waiting.reject(new Error(JSON.stringify(message.error))) : waiting.resolve(message.result);
  };
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = () => reject(new Error(`inspector: cannot connect to port ${port}`));
    setTimeout(() => reject(new Error(`inspector: no connection in 10 s`)), 10_000);
  });
  try {
    const { usedSize, totalSize } = await call("Runtime.getHeapUsage");
    return { used: usedSize, total: totalSize };
  } finally {
    ws.close();
  }
}
