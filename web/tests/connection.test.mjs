// connection.ts under Node: calls and their replies over a MessageChannel (the worker's side
// played by the test), and over a real worker_threads thread for a worker that dies.
import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Worker as Thread } from "node:worker_threads";
import { Connection } from "./build/connection.js";
import { EdgeragError } from "./build/errors.js";

/**
 * A Web Worker as Connection uses it (postMessage, terminate, onmessage, onerror,
 * onmessageerror) over a MessageChannel; the test is the worker at the other end: `next()`
 * is its next request, `reply()` answers.
 */
class ChannelWorker {
  onmessage = null;
  onerror = null;
  onmessageerror = null;
  terminated = 0;
  #requests = [];
  #waiting = [];

  constructor(t) {
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    this.remote = port2;
    port1.onmessage = (event) => this.onmessage?.(event);
    port2.onmessage = (event) => {
      const waiter = this.#waiting.shift();
      if (waiter) waiter(event.data);
      else this.#requests.push(event.data);
    };
    t.after(() => {
      port1.close();
      port2.close();
    });
  }

  postMessage(message) {
    this.port.postMessage(message);
  }

  terminate() {
    this.terminated++;
    this.port.close();
  }

  /** The next request the page posted. */
  next() {
    const request = this.#requests.shift();
    return request ? Promise.resolve(request) : new Promise((resolve) => this.#waiting.push(resolve));
  }

  /** Requests posted and not yet taken by next(), after the messages in flight arrive. */
  async pending() {
    await sleep(10);
    return this.#requests.length;
  }

  reply(message) {
    this.remote.postMessage(message);
  }

  /** An error escaping the worker, as the browser reports it; returns the event. */
  fail(message) {
    const event = { message, defaultPrevented: false, preventDefault() { this.defaultPrevented = true; } };
    this.onerror(event);
    return event;
  }
}

async function rejectsWith(promise, code, message) {
  await assert.rejects(promise, (error) => {
    assert.ok(error instanceof EdgeragError, `an EdgeragError, not ${error}`);
    assert.deepEqual({ code: error.code, message: error.message }, { code, message });
    return true;
  });
}

/** Whether a promise is still pending after the messages in flight arrive. */
async function settled(promise) {
  let done = false;
  promise.then(
    () => (done = true),
    () => (done = true),
  );
  await sleep(10);
  return done;
}

test("each reply settles its own call, whatever the order the worker answers in", async (t) => {
  const worker = new ChannelWorker(t);
  const connection = new Connection(worker);
  const search = connection.call("search", { query: "rollo", options: { k: 3 } });
  const inspect = connection.call("inspect", {});
  const graph = connection.call("graph", { chunkIds: ["a#0", "b#1"], limit: 5 });

  const requests = [await worker.next(), await worker.next(), await worker.next()];
  assert.deepEqual(
    requests.map(({ op, args }) => ({ op, args })),
    [
      { op: "search", args: { query: "rollo", options: { k: 3 } } },
      { op: "inspect", args: {} },
      { op: "graph", args: { chunkIds: ["a#0", "b#1"], limit: 5 } },
    ],
  );
  const ids = requests.map(({ id }) => id);
  assert.equal(new Set(ids).size, 3, `distinct ids: ${ids}`);

  worker.reply({ id: ids[2], type: "done", value: { nodes: ["graph"] } });
  worker.reply({ id: ids[0], type: "done", value: { hits: ["search"] } });
  worker.reply({ id: ids[1], type: "done", value: { documents: ["inspect"] } });
  assert.deepEqual(await search, { hits: ["search"] });
  assert.deepEqual(await inspect, { documents: ["inspect"] });
  assert.deepEqual(await graph, { nodes: ["graph"] });

  // A later call gets an id of its own.
  const later = connection.call("inspect", {});
  const request = await worker.next();
  assert.ok(!ids.includes(request.id));
  worker.reply({ id: request.id, type: "done", value: 4 });
  assert.equal(await later, 4);
  assert.equal(connection.dead, false);
});

test("progress and tokens reach the hooks of their call only, and none after its end", async (t) => {
  const worker = new ChannelWorker(t);
  const connection = new Connection(worker);
  const seen = { a: [], b: [] };
  const hooks = (name) => ({
    onProgress: (progress) => seen[name].push(["progress", progress]),
    onToken: (text) => seen[name].push(["token", text]),
  });
  const a = connection.call("ask", { question: "q", options: {}, local: false }, hooks("a"));
  const b = connection.call("loadBundle", { source: { url: "http://x/b.bundle" } }, hooks("b"));
  const [ra, rb] = [await worker.next(), await worker.next()];

  const download = { phase: "download", file: "http://x/b.bundle", loaded: 10, total: 20, cached: false };
  worker.reply({ id: rb.id, type: "progress", progress: download });
  worker.reply({ id: ra.id, type: "token", text: "Rol" });
  worker.reply({ id: ra.id, type: "token", text: "lo" });
  worker.reply({ id: rb.id, type: "progress", progress: { phase: "open", what: "bundle" } });
  worker.reply({ id: 9999, type: "token", text: "nobody's" }); // no such call: ignored
  worker.reply({ id: ra.id, type: "done", value: "answer" });
  worker.reply({ id: ra.id, type: "token", text: "late" }); // after its end: ignored
  worker.reply({ id: ra.id, type: "done", value: "again" }); // ignored
  worker.reply({ id: rb.id, type: "done", value: "bundle" });

  assert.equal(await a, "answer");
  assert.equal(await b, "bundle");
  await sleep(10);
  assert.deepEqual(seen.a, [
    ["token", "Rol"],
    ["token", "lo"],
  ]);
  assert.deepEqual(seen.b, [
    ["progress", download],
    ["progress", { phase: "open", what: "bundle" }],
  ]);

  // A call without hooks takes events without failing.
  const c = connection.call("generate", { request: { messages: [] } });
  const rc = await worker.next();
  worker.reply({ id: rc.id, type: "token", text: "x" });
  worker.reply({ id: rc.id, type: "progress", progress: { phase: "open", what: "model" } });
  worker.reply({ id: rc.id, type: "done", value: "generated" });
  assert.equal(await c, "generated");
});

test("an error reply rejects its call with the worker's code and message; the others go on", async (t) => {
  const worker = new ChannelWorker(t);
  const connection = new Connection(worker);
  const search = connection.call("search", { query: "q", options: {} });
  const inspect = connection.call("inspect", {});
  const [rs, ri] = [await worker.next(), await worker.next()];

  worker.reply({ id: rs.id, type: "error", code: "bundle", message: "no bundle is loaded: call loadBundle first" });
  await rejectsWith(search, "bundle", "no bundle is loaded: call loadBundle first");
  assert.equal(await settled(inspect), false, "the other call still waits");
  assert.equal(connection.dead, false);
  assert.equal(worker.terminated, 0);

  worker.reply({ id: ri.id, type: "done", value: "inspection" });
  assert.equal(await inspect, "inspection");
  const next = connection.call("inspect", {});
  const request = await worker.next();
  worker.reply({ id: request.id, type: "done", value: "next" });
  assert.equal(await next, "next");
});

test("a crashed reply ends the worker: every call in flight and every later call rejects with crashed", async (t) => {
  const worker = new ChannelWorker(t);
  const connection = new Connection(worker);
  const build = connection.call("build", { files: [], options: {} });
  const search = connection.call("search", { query: "q", options: {} });
  const ask = connection.call("ask", { question: "q", options: {}, local: false });
  const [rb] = [await worker.next(), await worker.next(), await worker.next()];

  const message = "the WebAssembly instance crashed: unreachable";
  worker.reply({ id: rb.id, type: "error", code: "crashed", message });
  await rejectsWith(build, "crashed", message);
  await rejectsWith(search, "crashed", message);
  await rejectsWith(ask, "crashed", message);
  assert.equal(worker.terminated, 1, "the worker is terminated, not left running");
  assert.equal(connection.dead, true);

  await rejectsWith(connection.call("inspect", {}), "crashed", message);
  assert.equal(await worker.pending(), 0, "a dead connection posts nothing");
});

test("an error escaping the worker ends it, with its message or a default one", async (t) => {
  for (const [escaped, message] of [
    ["Uncaught RuntimeError: unreachable", "the Web Worker failed: Uncaught RuntimeError: unreachable"],
    ["", "the Web Worker failed: it could not start or it died"],
  ]) {
    const worker = new ChannelWorker(t);
    const connection = new Connection(worker);
    const init = connection.call("init", {});
    const load = connection.call("loadModel", { source: { baseUrl: "http://x/", files: {} } });
    await worker.next();

    const event = worker.fail(escaped);
    assert.equal(event.defaultPrevented, true, "the page's console is spared the report");
    assert.equal(worker.terminated, 1);
    assert.equal(connection.dead, true);
    await rejectsWith(init, "crashed", message);
    await rejectsWith(load, "crashed", message);
    await rejectsWith(connection.call("search", { query: "q", options: {} }), "crashed", message);
  }
});

test("a message from the worker that cannot be read ends it", async (t) => {
  const worker = new ChannelWorker(t);
  const connection = new Connection(worker);
  const call = connection.call("inspect", {});
  await worker.next();
  worker.onmessageerror({ data: null });
  const message = "a message from the Web Worker could not be read";
  await rejectsWith(call, "crashed", message);
  assert.equal(worker.terminated, 1);
  await rejectsWith(connection.call("inspect", {}), "crashed", message);
});

test("terminate rejects the calls in flight with its code; the first failure is what later calls get", async (t) => {
  const worker = new ChannelWorker(t);
  const connection = new Connection(worker);
  const first = connection.call("search", { query: "q", options: {} });
  const request = await worker.next();
  assert.equal(connection.dead, false);

  connection.terminate("closed", "the Edgerag was closed");
  assert.equal(worker.terminated, 1);
  assert.equal(connection.dead, true);
  await rejectsWith(first, "closed", "the Edgerag was closed");

  // What the worker sends after is not read, and a later crash does not change why it ended.
  worker.reply({ id: request.id, type: "done", value: "too late" });
  worker.fail("died after close");
  await rejectsWith(connection.call("inspect", {}), "closed", "the Edgerag was closed");
  assert.equal(await worker.pending(), 0);
});

// A worker thread speaking protocol.ts: `search` reports progress then answers with its query,
// `inspect` is never answered, `crashForTests` throws out of the thread (an uncaught error
// ends it).
const THREAD = `
const { parentPort } = require("node:worker_threads");
parentPort.on("message", ({ id, op, args }) => {
  if (op === "crashForTests") setTimeout(() => { throw new Error("the instance aborted"); }, 20);
  else if (op === "search") {
    parentPort.postMessage({ id, type: "progress", progress: { phase: "open", what: "bundle" } });
    parentPort.postMessage({ id, type: "done", value: { query: args.query } });
  }
});
`;

/** A worker_threads Worker seen as a Web Worker. */
class ThreadWorker {
  onmessage = null;
  onerror = null;
  onmessageerror = null;
  exited;

  constructor() {
    this.thread = new Thread(THREAD, { eval: true });
    this.thread.on("message", (data) => this.onmessage?.({ data }));
    this.thread.on("messageerror", () => this.onmessageerror?.({}));
    this.thread.on("error", (error) => this.onerror?.({ message: error.message, preventDefault() {} }));
    this.exited = new Promise((resolve) => this.thread.once("exit", resolve));
  }

  postMessage(message) {
    this.thread.postMessage(message);
  }

  terminate() {
    void this.thread.terminate();
  }
}

test("over a real thread: calls are answered, and a thread that dies fails the calls in flight", async (t) => {
  const worker = new ThreadWorker();
  t.after(() => worker.terminate());
  const connection = new Connection(worker);
  const progress = [];
  const results = await Promise.all(
    ["one", "two", "three"].map((query) =>
      connection.call("search", { query, options: {} }, { onProgress: (p) => progress.push([query, p.phase]) }),
    ),
  );
  assert.deepEqual(results, [{ query: "one" }, { query: "two" }, { query: "three" }]);
  assert.deepEqual(progress, [
    ["one", "open"],
    ["two", "open"],
    ["three", "open"],
  ]);

  const hanging = connection.call("inspect", {});
  const crash = connection.call("crashForTests", {});
  const message = "the Web Worker failed: the instance aborted";
  await rejectsWith(crash, "crashed", message);
  await rejectsWith(hanging, "crashed", message);
  assert.equal(connection.dead, true);
  await worker.exited;
  await rejectsWith(connection.call("search", { query: "after", options: {} }), "crashed", message);
});
