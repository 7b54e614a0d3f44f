// Load test of the Worker on workerd (wrangler dev on 127.0.0.1): a fixed number of
// connections send requests back to back for a fixed time. Reports requests/s, latency
// percentiles, errors, the module's wasm memory and workerd's resident memory (current and
// peak), and the isolate's JavaScript heap. Run with Node 22 (make bench-worker):
//   node worker/bench/load.mjs [--seconds 30] [--concurrency 8] [--endpoint search|ask] [--json FILE]
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { freePort, get, isolateHeap, memory, post, root, startWorker, workerdPids } from "../tests/support.mjs";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "30" },
    concurrency: { type: "string", default: "8" },
    endpoint: { type: "string", default: "search" },
    json: { type: "string" },
  },
});
const seconds = Number(values.seconds);
const concurrency = Number(values.concurrency);
const queries = readFileSync(join(root, "demo/queries.txt"), "utf8").split("\n").filter(Boolean);
const request = (i) =>
  values.endpoint === "ask"
    ? ["/v1/ask", { question: queries[i % queries.length], extractive: true }]
    : ["/v1/search", { query: queries[i % queries.length], k: 10, mode: "hybrid" }];

const inspectorPort = await freePort();
const worker = await startWorker({ inspectorPort });
try {
  const [workerd] = workerdPids(worker.pid);
  // Warm up: load the bundle and the model, and let V8 tier up.
  for (let i = 0; i < 20; i++) await post(`${worker.url}${request(i)[0]}`, request(i)[1]);
  const before = memory(workerd);

  const latencies = [];
  let errors = 0;
  let sent = 0;
  const end = performance.now() + seconds * 1000;
  const connection = async () => {
    while (performance.now() < end) {
      const [path, body] = request(sent++);
      const started = performance.now();
      try {
        const reply = await post(`${worker.url}${path}`, body);
        if (reply.status !== 200) errors++;
      } catch {
        errors++;
      }
      latencies.push(performance.now() - started);
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, connection));
  const elapsed = (performance.now() - started) / 1000;

  latencies.sort((a, b) => a - b);
  const percentile = (p) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))];
  const health = (await get(`${worker.url}/v1/health`)).body;
  const heap = await isolateHeap(inspectorPort);
  const after = memory(workerd);
  const report = {
    endpoint: values.endpoint,
    seconds: Number(elapsed.toFixed(1)),
    concurrency,
    requests: latencies.length,
    requests_per_second: Number((latencies.length / elapsed).toFixed(1)),
    latency_ms: { p50: Number(percentile(50).toFixed(1)), p99: Number(percentile(99).toFixed(1)), max: Number(latencies.at(-1).toFixed(1)) },
    errors,
    memory: {
      wasm_bytes: health.memory.wasm_bytes,
      js_heap_used_bytes: heap.used,
      js_heap_total_bytes: heap.total,
      workerd_rss_bytes: after.rss,
      workerd_peak_rss_bytes: after.peak,
      workerd_rss_before_bytes: before.rss,
    },
  };
  const mb = (bytes) => (bytes / 2 ** 20).toFixed(1);
  console.log(JSON.stringify(report, null, 2));
  console.log(
    `\n| ${report.endpoint} | ${concurrency} | ${report.requests_per_second} | ${report.latency_ms.p50} | ` +
      `${report.latency_ms.p99} | ${errors} | ${mb(report.memory.wasm_bytes)} + ${mb(heap.used)} | ${mb(after.peak)} |`,
  );
  if (values.json) writeFileSync(values.json, JSON.stringify(report, null, 2));
  if (errors > 0) process.exitCode = 1;
} finally {
  worker.stop();
}
