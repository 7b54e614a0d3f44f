// The @edgerag/web API itself, in Chromium against `edgerag serve`: cache keys and
// revalidation, typed errors, bundles from bytes and in-tab builds, explained answers, answers
// beside other calls, the model's id, crash recovery and close(). The page is a file of the
// site (not the demo app), so only these calls run. Run by `make test-browser`.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { browser, llmServer, serve, until, watchConsole } from "./helpers.mjs";

const repo = (path) => fileURLToPath(new URL(`../../${path}`, import.meta.url));
const demoBundle = process.env.EDGERAG_DEMO_BUNDLE;
assert.ok(demoBundle, "set EDGERAG_DEMO_BUNDLE to the demo bundle (make test-browser does)");

let server;
let chromium;
let page;
let errors;
let demo; // the demo bundle's entry in edgerag.json
let model; // the model's entry in edgerag.json

before(async () => {
  server = await serve(demoBundle, repo("www/dist"));
  const config = await (await fetch(new URL("edgerag.json", server.url))).json();
  const [entry] = config.bundles;
  demo = { ...entry, url: new URL(entry.url, server.url).href };
  model = { ...config.model, url: new URL(config.model.url, server.url).href };
  chromium = await browser();
  page = chromium.context.pages()[0] ?? (await chromium.context.newPage());
  page.setDefaultTimeout(60_000);
  errors = watchConsole(page);
  await page.goto(new URL("edgerag/index.js", server.url).href);
  await page.evaluate(async () => {
    window.web = await import("/edgerag/index.js");
    window.rag = await window.web.Edgerag.create();
    // The outcome of a call: its value, or what the error carries.
    window.outcome = async (call) => {
      try {
        return { value: await call() };
      } catch (error) {
        return { code: error.code, message: error.message, isEdgeragError: error instanceof window.web.EdgeragError };
      }
    };
  });
});

after(async () => {
  await chromium?.close();
  server?.stop();
});

/** Statuses of the bundle downloads while `work` runs. */
async function bundleResponses(work) {
  const statuses = [];
  const watch = (response) => {
    if (new URL(response.url()).pathname.startsWith("/bundles/")) statuses.push(response.status());
  };
  page.context().on("response", watch);
  try {
    await work();
  } finally {
    page.context().off("response", watch);
  }
  return statuses;
}

test("a wrong SHA-256 is an integrity error, and nothing is cached", async () => {
  const statuses = await bundleResponses(async () => {
    const wrong = await page.evaluate(({ url }) => outcome(() => rag.loadBundle(url, { sha256: "0".repeat(64) })), demo);
    assert.equal(wrong.code, "integrity", JSON.stringify(wrong));
    assert.ok(wrong.isEdgeragError);
    assert.match(wrong.message, new RegExp(`SHA-256 is ${demo.sha256}, expected 0{64}`));
    const right = await page.evaluate(async ({ url, sha256 }) => (await rag.loadBundle(url, { sha256 })).manifest.corpus, demo);
    assert.equal(right, demo.corpus);
  });
  assert.deepEqual(statuses, [200, 200], "the second load downloads again: the bad bytes were not cached");
});

test("a known SHA-256 (in either case) loads from the cache with no request; without one, a 304 revalidates", async () => {
  const withHash = await bundleResponses(() => page.evaluate(({ url, sha256 }) => rag.loadBundle(url, { sha256 }), demo));
  assert.deepEqual(withHash, []);
  const upperCase = await bundleResponses(() => page.evaluate(({ url, sha256 }) => rag.loadBundle(url, { sha256: sha256.toUpperCase() }), demo));
  assert.deepEqual(upperCase, [], "an upper-case SHA-256 is the same hash");
  const withoutHash = await bundleResponses(() => page.evaluate(({ url }) => rag.loadBundle(url), demo));
  assert.deepEqual(withoutHash, [304]);
  const hits = await page.evaluate(async () => (await rag.search("Who won Super Bowl 50?", { k: 3, mode: "bm25" })).results.map((hit) => hit.document));
  assert.match(hits[0], /(^|\/)super-bowl-50\.md$/);
});

test("errors carry a code and the core's message", async () => {
  const missing = await page.evaluate(() => outcome(() => rag.loadBundle("/bundles/missing.bundle")));
  assert.equal(missing.code, "network");
  assert.match(missing.message, /missing\.bundle: HTTP 404/);
  const garbage = await page.evaluate(() => outcome(() => rag.loadBundle(new Uint8Array([1, 2, 3]))));
  assert.equal(garbage.code, "bundle");
  assert.ok(garbage.message.length > 0);
  const dense = await page.evaluate(() => outcome(() => rag.search("steam", { mode: "dense" })));
  assert.equal(dense.code, "search", "dense search without the model fails clearly");
  assert.ok(dense.message.length > 0);
});

test("builds a bundle without a model from named bytes, and loads it from bytes", async () => {
  const markdown = `# Tides\n\nThe tides of the Bay of Fundy are the highest in the world, rising up to sixteen metres.\n\n## Cause\n\nThe bay's length resonates with the Atlantic tide.\n`;
  const result = await page.evaluate(async (text) => {
    const progress = [];
    const built = await rag.build([{ name: "tides.md", bytes: new TextEncoder().encode(text) }], {
      name: "tides",
      onProgress: (event) => progress.push(`${event.phase}:${event.stage}`),
    });
    const info = await rag.loadBundle(built.bytes);
    const hits = await rag.search("highest tides", { k: 1 });
    return { summary: built.summary, size: built.bytes.byteLength, corpus: info.manifest.corpus, progress, hit: hits.results[0] };
  }, markdown);
  assert.equal(result.summary.documents, 1);
  assert.equal(result.summary.vectors, 0);
  assert.equal(result.size, result.summary.bytes);
  assert.equal(result.corpus, "tides");
  assert.ok(result.progress.includes("build:load") && result.progress.includes("build:bm25"), result.progress.join());
  assert.equal(result.hit.document, "tides.md");
  assert.match(result.hit.text, /Bay of Fundy/);
});

test("ask with explain: true explains each source, with no search of its own", async () => {
  await page.evaluate(({ url, sha256 }) => rag.loadBundle(url, { sha256 }), demo);
  const [explained, plain] = await page.evaluate(async () => {
    const question = "Who won Super Bowl 50?";
    const options = { k: 3, mode: "bm25" };
    return [await rag.ask(question, { ...options, explain: true }), await rag.ask(question, options)];
  });
  assert.ok(explained.sources.length > 0);
  for (const source of explained.sources) {
    assert.equal(typeof source.explain?.bm25?.rank, "number", JSON.stringify(source));
    assert.ok(source.explain.terms.length > 0, "the BM25 terms matched");
  }
  assert.ok(plain.sources.every((source) => source.explain === undefined), "explanations only when asked");
});

test("an answer the LLM is writing does not hold up searches and inspections", async () => {
  const llm = await llmServer({ pause: () => 3000 });
  try {
    const result = await page.evaluate(async (baseUrl) => {
      const order = [];
      const asked = rag.ask("Who won Super Bowl 50?", { k: 3, mode: "bm25", llm: { baseUrl, models: ["tiny-test-llm"] } });
      asked.then(() => order.push("ask"));
      await rag.search("steam engine", { k: 1, mode: "bm25" });
      order.push("search");
      await rag.inspect();
      order.push("inspect");
      const answer = await asked;
      return { order, mode: answer.mode };
    }, llm.baseUrl);
    assert.deepEqual(result, { order: ["search", "inspect", "ask"], mode: "llm" });
  } finally {
    await llm.close();
  }
});

test("the model loads under the id given; it waits for an answer in progress to attach", { timeout: 5 * 60_000 }, async () => {
  const renamed = await page.evaluate(({ url, files }) => rag.loadModel({ baseUrl: url, files, id: "test/renamed-minilm" }), model);
  assert.equal(renamed.id, "test/renamed-minilm");
  assert.equal(renamed.denseReady, false, "the demo bundle's vectors are of another model id");
  const llm = await llmServer({ pause: () => 4000 });
  try {
    const result = await page.evaluate(
      async ({ model: { url, files, id }, baseUrl }) => {
        const order = [];
        const asked = rag.ask("Who won Super Bowl 50?", { k: 3, mode: "bm25", llm: { baseUrl, models: ["tiny-test-llm"] } });
        asked.then(() => order.push("ask"));
        // Loaded while the answer is written: the bundle's model can change only after it.
        const info = await rag.loadModel({ baseUrl: url, files, id });
        order.push("loadModel");
        await asked;
        return { order, info };
      },
      { model, baseUrl: llm.baseUrl },
    );
    assert.deepEqual(result.order, ["ask", "loadModel"]);
    assert.equal(result.info.id, model.id);
    assert.equal(result.info.denseReady, true, "the site's model id matches the bundle's vectors");
  } finally {
    await llm.close();
  }
});

test("after a panic in the core a call fails as crashed; the next runs in a fresh worker with the bundle restored", async () => {
  await page.evaluate(({ url, sha256 }) => rag.loadBundle(url, { sha256 }), demo);
  await crashWorker();
  const crashed = await page.evaluate(() => outcome(() => rag.search("steam", { k: 1, mode: "bm25" })));
  assert.equal(crashed.code, "crashed", JSON.stringify(crashed));
  const statuses = await bundleResponses(async () => {
    const hits = await page.evaluate(async () => (await rag.search("Who won Super Bowl 50?", { k: 1, mode: "bm25" })).results);
    assert.match(hits[0].document, /(^|\/)super-bowl-50\.md$/);
  });
  assert.deepEqual(statuses, [], "the bundle was restored from the cache");
  const dense = await page.evaluate(async () => (await rag.search("Who won Super Bowl 50?", { k: 1, mode: "dense" })).results);
  assert.match(dense[0].document, /(^|\/)super-bowl-50\.md$/, "the model was restored too, under its id");
});

test("close() while a crashed worker is replaced ends the new worker; later calls reject with closed", async () => {
  await crashWorker();
  const crashed = await page.evaluate(() => outcome(() => rag.inspect()));
  assert.equal(crashed.code, "crashed", JSON.stringify(crashed));
  const during = await page.evaluate(() => {
    const pending = outcome(() => rag.search("steam", { k: 1, mode: "bm25" })); // starts a new worker
    rag.close();
    return pending;
  });
  assert.equal(during.code, "closed", JSON.stringify(during));
  await until(() => page.workers().length === 0, 10_000, 100);
  assert.equal(page.workers().length, 0, "no worker is left running");
  const after = await page.evaluate(() => outcome(() => rag.inspect()));
  assert.equal(after.code, "closed");
});

test("the console shows no errors but the 404 and the panic asked for", () => {
  const notFound = "console: Failed to load resource: the server responded with a status of 404 (Not Found)";
  const unexpected = errors.filter((error) => error !== notFound && !/panicked at/.test(error));
  assert.deepEqual(unexpected, []);
  assert.equal(errors.filter((error) => error === notFound).length, 1, "one 404: /bundles/missing.bundle");
});

/**
 * Aborts the wasm instance of the live Web Worker with a real Rust panic: posts the worker its
 * `crashForTests` operation from inside the worker (no input reaches a panic any more, and the
 * client never sends it). Its reply carries an id no call has, so the page's next call is the
 * first to learn of the crash.
 */
async function crashWorker() {
  const workers = page.workers().filter((worker) => new URL(worker.url()).pathname.endsWith("/worker.js"));
  assert.equal(workers.length, 1, "one Web Worker runs the core");
  const crashes = () => errors.filter((error) => /crashForTests/.test(error)).length;
  const before = crashes();
  await workers[0].evaluate(() => self.dispatchEvent(new MessageEvent("message", { data: { id: -1, op: "crashForTests", args: {} } })));
  await until(() => crashes() > before, 10_000);
}
