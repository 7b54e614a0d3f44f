// The wasm module's LLM path for real: `fetch` (with a streamed body), `setTimeout` and
// `AbortController` against a scripted OpenAI-compatible server on 127.0.0.1.
// Run by `make test-wasm`.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFileSync } from "node:fs";
import { demoBundlePath, loadModel, wasm } from "./support.mjs";

const QUESTION = "Who was the leader of the Norse raiders who settled Normandy?";
const KEY = "sk-test-0123456789";
const rag = new wasm.Edgerag(readFileSync(demoBundlePath()));
rag.useModel(loadModel());

/** A server answering each request with the next scripted reply; records what it received. */
async function serve(replies) {
  const received = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      received.push({ path: req.url, authorization: req.headers.authorization, body: JSON.parse(body) });
      const reply = replies.shift() ?? { status: 500 };
      reply.send ? reply.send(res) : res.writeHead(reply.status, reply.headers ?? {}).end(reply.body ?? "");
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  after(() => server.closeAllConnections() || server.close());
  return { url: `http://127.0.0.1:${server.address().port}/v1`, received };
}

const json = (content) => ({
  status: 200,
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ choices: [{ index: 0, message: { role: "assistant", content } }] }),
});

const stream = (pieces) => ({
  send(res) {
    res.writeHead(200, { "content-type": "text/event-stream" });
    const events = pieces.map((p) => `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: p } }] })}\n\n`);
    // Sent in separate writes, a little apart, so the body really arrives in pieces.
    let i = 0;
    const next = () => (i < events.length ? (res.write(events[i++]), setTimeout(next, 20)) : res.end("data: [DONE]\n\n"));
    next();
  },
});

// A reply that restates the source holding the answer, so its support is high and no
// stricter second request follows.
const { sources } = await rag.ask(QUESTION, { extractive: true });
const marker = sources.find((s) => s.text.includes("under their leader Rollo")).marker;
const REPLY = `They were Norse raiders who, under their leader Rollo, swore fealty to King Charles III of West Francia [${marker}].`;
const PIECES = [REPLY.slice(0, 30), REPLY.slice(30, 70), REPLY.slice(70)];

const llm = (url, extra = {}) => ({ llm: { baseUrl: url, apiKey: KEY, models: ["m1", "m2"], ...extra } });

test("a streamed LLM answer arrives token by token and is cited", async () => {
  const server = await serve([stream(PIECES)]);
  const tokens = [];
  const answer = await rag.ask(QUESTION, llm(server.url), (t) => tokens.push(t));
  assert.deepEqual(tokens, PIECES);
  assert.equal(answer.mode, "llm");
  assert.equal(answer.model, "m1");
  assert.equal(answer.answer, REPLY);
  assert.equal(answer.citations[0].marker, marker);
  assert.ok(answer.citations[0].document.endsWith("normans.md"));
  assert.ok(answer.sentences[0].support >= 0.5, `support ${answer.sentences[0].support}`);
  assert.equal(server.received.length, 1);
  assert.equal(server.received[0].path, "/v1/chat/completions");
  assert.equal(server.received[0].authorization, `Bearer ${KEY}`);
  assert.equal(server.received[0].body.stream, true);
  assert.match(server.received[0].body.messages.at(-1).content, /<source id="S1"/);
});

test("a rate limit is waited out as Retry-After asks, then answered", async () => {
  const server = await serve([{ status: 429, headers: { "retry-after": "1" }, body: "slow down" }, json(REPLY)]);
  const started = Date.now();
  const answer = await rag.ask(QUESTION, llm(server.url));
  assert.ok(Date.now() - started >= 1000, "Retry-After not honoured");
  assert.deepEqual(server.received.map((r) => r.body.model), ["m1", "m1"]);
  assert.equal(answer.answer, REPLY);
  assert.equal(server.received[0].body.stream, false);
});

test("a server error falls back to the next model", async () => {
  const server = await serve([{ status: 500, body: "boom" }, json(REPLY)]);
  const answer = await rag.ask(QUESTION, llm(server.url, { retries: 0 }));
  assert.deepEqual(server.received.map((r) => r.body.model), ["m1", "m2"]);
  assert.equal(answer.model, "m2");
  assert.equal(answer.mode, "llm");
});

test("a timeout aborts the request; with every model timed out the answer is extractive", async () => {
  const hang = { send() {} };
  const server = await serve([hang, hang]);
  const answer = await rag.ask(QUESTION, llm(server.url, { retries: 0, timeoutMs: 300 }));
  assert.equal(answer.mode, "extractive");
  const failed = answer.warnings.find((w) => w.kind === "llm_failed");
  assert.match(failed.message, /m1: timed out after 0\.3 s; m2: timed out after 0\.3 s/);
  assert.match(answer.answer, /Rollo/);
});

test("a rejected key fails with the provider's message and never shows the key", async () => {
  const server = await serve([{ status: 401, body: JSON.stringify({ error: { message: `invalid key ${KEY}` } }) }]);
  await assert.rejects(rag.ask(QUESTION, llm(server.url)), (error) => {
    assert.match(error.message, /rejected the request to m1 \(HTTP 401\): invalid key \[redacted\]/);
    assert.ok(!error.message.includes(KEY));
    return true;
  });
});

test("an unreachable endpoint is reported, and bad LLM options are refused", async () => {
  const answer = await rag.ask(QUESTION, llm("http://127.0.0.1:9/v1", { retries: 0 }));
  assert.equal(answer.mode, "extractive");
  assert.ok(answer.warnings.some((w) => w.kind === "llm_failed"));
  await assert.rejects(rag.ask(QUESTION, llm("ftp://example.com")), /http:\/\/ or https:\/\//);
  await assert.rejects(rag.ask(QUESTION, { llm: { model: "x" } }), /unknown field `model`/);
});
