// The Worker on workerd, end to end over HTTP: every endpoint, parity with the native CLI on
// the same bundle and model, Server-Sent Events, the OpenAI-compatible endpoint, R2 and
// static-asset bundles, auth, CORS and 4xx errors. Run by `make test-worker`.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { cli, env, events, get, post, root, startWorker } from "./support.mjs";

const BUNDLE = env("EDGERAG_DEMO_BUNDLE");
const MODEL = env("EDGERAG_QUANTIZED_MODEL");
const TOKEN = "test-token-5f1c";
const ORIGIN = "http://allowed.example";
const AUTH = { authorization: `Bearer ${TOKEN}` };
const QUERIES = readFileSync(join(root, "demo/queries.txt"), "utf8").split("\n").filter(Boolean);
const QUESTION = "Who was the leader of the Norse raiders who settled Normandy?";

/** A scripted OpenAI-compatible LLM: cites the source that names Rollo, streamed or not. */
async function fakeLlm() {
  const received = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      const request = JSON.parse(body);
      received.push({ authorization: req.headers.authorization, request });
      const prompt = request.messages.at(-1).content;
      const marker = [...prompt.matchAll(/<source id="(S\d+)"[^>]*>([\s\S]*?)<\/source>/g)]
        .find(([, , text]) => text.includes("Rollo"))?.[1] ?? "S1";
      const reply = `The Normans' Norse ancestors settled Normandy under their leader Rollo [${marker}].`;
      if (!request.stream) {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ model: request.model, choices: [{ index: 0, message: { role: "assistant", content: reply } }] }));
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream" });
      const pieces = [reply.slice(0, 25), reply.slice(25, 60), reply.slice(60)];
      for (const piece of pieces) res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: piece } }] })}\n\n`);
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${server.address().port}/v1`, received, close: () => server.close() };
}

let worker;
let llm;
before(async () => {
  llm = await fakeLlm();
  worker = await startWorker({
    vars: {
      EDGERAG_BUNDLES: "demo=assets:/bundles/demo.bundle,demo-r2=r2:corpora/demo.bundle",
      EDGERAG_CORS_ORIGINS: ORIGIN,
      EDGERAG_MAX_BODY_BYTES: "4096",
      EDGERAG_AUTH_TOKEN: TOKEN,
      EDGERAG_LLM_BASE_URL: llm.url,
      EDGERAG_LLM_API_KEY: "sk-worker-secret",
      EDGERAG_LLM_MODELS: "fake-model",
    },
    r2: { "corpora/demo.bundle": BUNDLE },
  });
});
after(() => {
  worker?.stop();
  llm?.close();
});

const api = (path, body) => post(`${worker.url}${path}`, body, AUTH);

test("health reports the bundles, the model and the module's memory, without a token", async () => {
  const { status, body } = await get(`${worker.url}/v1/health`);
  assert.equal(status, 200);
  assert.equal(body.status, "ok");
  assert.deepEqual(body.bundles.map((b) => b.name), ["demo", "demo-r2"]);
  assert.equal(body.model.configured, true);
  assert.equal(body.llm, true);
  assert.ok(body.memory.wasm_bytes > 0);
});

// bm25 and graph search compute identically everywhere. Dense and hybrid scores rest on the
// query vector, whose f32 matrix products sum in another order in wasm (simd128) than natively
// (AVX), so they may differ in the last digits: the same results in the same order, scores
// within 1e-4, as in the wasm parity tests.
const TOLERANCE = 1e-4;

test("search equals native search on the same bundle and model, in every mode", async () => {
  const largest = {};
  for (const mode of ["bm25", "graph", "dense", "hybrid"]) {
    largest[mode] = 0;
    for (const query of QUERIES) {
      const { status, body } = await api("/v1/search", { query, mode, k: 10 });
      assert.equal(status, 200, JSON.stringify(body));
      const native = cli("search", BUNDLE, query, "-k", "10", "--mode", mode, "--model", MODEL);
      assert.equal(body.mode, mode);
      assert.equal(body.bundle, "demo");
      assert.equal(body.warnings, undefined);
      if (mode === "bm25" || mode === "graph") {
        assert.deepEqual(body.results, native.results, `${mode}: ${query}`);
        continue;
      }
      assert.deepEqual(
        body.results.map(({ score, ...rest }) => rest),
        native.results.map(({ score, ...rest }) => rest),
        `${mode}: ${query}`,
      );
      body.results.forEach((r, i) => {
        const difference = Math.abs(r.score - native.results[i].score);
        largest[mode] = Math.max(largest[mode], difference);
        assert.ok(difference <= TOLERANCE, `${mode}: ${query}: #${i + 1}: ${r.score} against ${native.results[i].score}`);
      });
    }
  }
  console.log("largest score difference from native, by mode:", JSON.stringify(largest));
});

test("a bundle from R2 answers like the same bundle from the static assets", async () => {
  const query = QUERIES[1];
  const assets = await api("/v1/search", { query, k: 5 });
  const r2 = await api("/v1/search", { query, k: 5, bundle: "demo-r2", filters: {} });
  assert.equal(r2.status, 200, JSON.stringify(r2.body));
  assert.equal(r2.body.bundle, "demo-r2");
  assert.deepEqual(r2.body.results, assets.body.results);
});

test("bundles lists every manifest, with dense retrieval on", async () => {
  const { status, body } = await get(`${worker.url}/v1/bundles`, AUTH);
  assert.equal(status, 200);
  const native = cli("inspect", BUNDLE);
  assert.equal(body.bundles.length, 2);
  for (const bundle of body.bundles) {
    assert.deepEqual(bundle.manifest, native.manifest);
    assert.deepEqual(bundle.dense, { on: true });
  }
  assert.equal(body.bundles[0].default, true);
  const models = await get(`${worker.url}/v1/models`, AUTH);
  assert.deepEqual(models.body.data.map((m) => m.id), ["demo", "demo-r2"]);
});

test("an extractive answer cites the document that holds it, as the native CLI does", async () => {
  const { status, body } = await api("/v1/ask", { question: QUESTION, extractive: true });
  assert.equal(status, 200, JSON.stringify(body));
  assert.equal(body.mode, "extractive");
  assert.ok(body.citations.some((c) => c.document.endsWith("normans.md")));
  assert.match(body.answer, /Rollo/);
  const native = cli("ask", BUNDLE, QUESTION, "--extractive", "--model", MODEL);
  assert.equal(body.answer, native.answer);
  assert.deepEqual(body.citations, native.citations);
  assert.equal(llm.received.length, 0, "an extractive answer called the LLM");
});

test("a streamed answer sends the LLM's tokens, then the cited answer, as Server-Sent Events", async () => {
  const response = await fetch(`${worker.url}/v1/ask`, {
    method: "POST",
    headers: { "content-type": "application/json", ...AUTH },
    body: JSON.stringify({ question: QUESTION, stream: true, k: 5 }),
  });
  assert.equal(response.status, 200);
  assert.match(response.headers.get("content-type"), /^text\/event-stream/);
  const received = await events(response);
  const tokens = received.filter((e) => e.event === "token").map((e) => JSON.parse(e.data).text);
  assert.equal(tokens.length, 3);
  const answer = JSON.parse(received.at(-1).data);
  assert.equal(received.at(-1).event, "answer");
  assert.equal(answer.mode, "llm");
  assert.equal(answer.model, "fake-model");
  assert.equal(answer.answer, tokens.join(""));
  assert.ok(answer.citations[0].document.endsWith("normans.md"));
  const call = llm.received.at(-1);
  assert.equal(call.authorization, "Bearer sk-worker-secret");
  assert.equal(call.request.stream, true);
});

test("the OpenAI-compatible endpoint answers a plain chat request, streamed or not", async () => {
  const request = { model: "demo", messages: [{ role: "system", content: "Be brief." }, { role: "user", content: QUESTION }] };
  const { status, body } = await api("/v1/chat/completions", request);
  assert.equal(status, 200, JSON.stringify(body));
  assert.equal(body.object, "chat.completion");
  assert.equal(body.model, "demo");
  const content = body.choices[0].message.content;
  assert.equal(body.choices[0].message.role, "assistant");
  assert.match(content, /Rollo \[S\d+\]\.\n\nSources:\n\[S\d+\] Normans/);
  assert.equal(body.edgerag.mode, "llm");

  const response = await fetch(`${worker.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...AUTH },
    body: JSON.stringify({ ...request, model: "edgerag/demo-r2", stream: true }),
  });
  const chunks = await events(response);
  assert.equal(chunks.at(-1).data, "[DONE]");
  const parsed = chunks.slice(0, -1).map((c) => JSON.parse(c.data));
  assert.ok(parsed.every((c) => c.object === "chat.completion.chunk" && c.model === "demo-r2"));
  assert.equal(parsed[0].choices[0].delta.role, "assistant");
  assert.equal(parsed.at(-1).choices[0].finish_reason, "stop");
  assert.equal(parsed.map((c) => c.choices[0].delta.content ?? "").join(""), content);
});

test("mistakes are 4xx JSON errors that name the problem and nothing internal", async () => {
  const cases = [
    [await post(`${worker.url}/v1/search`, "{not json", AUTH), 400, "bad_request", /not JSON/],
    [await post(`${worker.url}/v1/search`, "", AUTH), 400, "bad_request", /not JSON/],
    [await api("/v1/search", [1, 2]), 400, "bad_request", /JSON object/],
    [await api("/v1/search", { k: 3 }), 400, "bad_request", /query is required/],
    [await api("/v1/search", { query: "x", topK: 3 }), 400, "bad_request", /unknown field `topK`/],
    [await api("/v1/search", { query: "x", k: 0 }), 400, "bad_request", /k must be between/],
    [await api("/v1/search", { query: "x", bundle: "nope" }), 404, "unknown_bundle", /bundles: demo, demo-r2/],
    [await api("/v1/search", { query: "x".repeat(5000) }), 413, "too_large", /larger than 4096 bytes/],
    [await api("/v1/ask", { question: "x", llm: { baseUrl: "http://evil.example" } }), 400, "bad_request", /configured/],
    [await api("/v1/chat/completions", { model: "gpt-4o", messages: [{ role: "user", content: "hi" }] }), 404, "model_not_found", /demo, demo-r2/],
    [await api("/v1/chat/completions", { messages: [] }), 400, "bad_request", /user/],
    [await get(`${worker.url}/v1/search`, AUTH), 405, "method_not_allowed", /POST/],
    [await get(`${worker.url}/v1/nothing`, AUTH), 404, "not_found", /no endpoint/],
    [await post(`${worker.url}/v1/search`, { query: "x" }), 401, "unauthorized", /Bearer/],
    [await post(`${worker.url}/v1/search`, { query: "x" }, { authorization: "Bearer wrong" }), 401, "unauthorized", /Bearer/],
  ];
  for (const [reply, status, code, message] of cases) {
    assert.equal(reply.status, status, JSON.stringify(reply.body));
    assert.match(reply.headers.get("content-type"), /application\/json/);
    assert.deepEqual(Object.keys(reply.body), ["error"]);
    assert.equal(reply.body.error.code, code);
    assert.match(reply.body.error.message, message);
    assert.doesNotMatch(reply.body.error.message, /panicked|\.rs|wasm|sk-worker-secret|RuntimeError/);
  }
  // The worker still serves after every one of them.
  assert.equal((await api("/v1/search", { query: QUERIES[0], k: 1 })).status, 200);
});

test("CORS admits the configured origin only", async () => {
  const preflight = (origin) =>
    fetch(`${worker.url}/v1/search`, {
      method: "OPTIONS",
      headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "content-type" },
    });
  const allowed = await preflight(ORIGIN);
  assert.equal(allowed.status, 204);
  assert.equal(allowed.headers.get("access-control-allow-origin"), ORIGIN);
  assert.match(allowed.headers.get("access-control-allow-headers"), /Authorization/);
  assert.equal((await preflight("http://other.example")).status, 403);
  const reply = await post(`${worker.url}/v1/search`, { query: QUERIES[0], k: 1 }, { ...AUTH, origin: ORIGIN });
  assert.equal(reply.headers.get("access-control-allow-origin"), ORIGIN);
  const other = await post(`${worker.url}/v1/search`, { query: QUERIES[0], k: 1 }, { ...AUTH, origin: "http://other.example" });
  assert.equal(other.headers.get("access-control-allow-origin"), null);
});

test("with the bundles and the model loaded, the module stays well under the isolate's 128 MB", async () => {
  const { body } = await get(`${worker.url}/v1/health`);
  assert.ok(body.bundles.every((b) => b.loaded && b.dense), JSON.stringify(body.bundles));
  assert.equal(body.model.loaded, true);
  assert.ok(body.memory.wasm_bytes < 96 * 2 ** 20, `${body.memory.wasm_bytes} bytes of wasm memory`);
});

test("without a model the worker serves bm25 and graph search and says why dense is off", async () => {
  const bare = await startWorker({ vars: { EDGERAG_MODEL: "", EDGERAG_BUNDLES: "demo=assets:/bundles/demo.bundle" } });
  try {
    const search = (body) => post(`${bare.url}/v1/search`, body);
    const bm25 = await search({ query: QUERIES[1], mode: "bm25", k: 3 });
    assert.equal(bm25.status, 200);
    assert.deepEqual(bm25.body.results.map((r) => r.chunk_id), cli("search", BUNDLE, QUERIES[1], "-k", "3", "--mode", "bm25").results.map((r) => r.chunk_id));
    const hybrid = await search({ query: QUERIES[1], k: 3 });
    assert.equal(hybrid.status, 200);
    assert.match(hybrid.body.warnings[0], /dense retrieval off: no embedding model configured/);
    const dense = await search({ query: QUERIES[1], mode: "dense" });
    assert.equal(dense.status, 409);
    assert.equal(dense.body.error.code, "dense_unavailable");
    const { body } = await get(`${bare.url}/v1/bundles`);
    assert.equal(body.bundles[0].dense.on, false);
    assert.match(body.bundles[0].dense.reason, /EDGERAG_MODEL/);
  } finally {
    bare.stop();
  }
});
