// Local generation in the real wasm module: SmolLM2-135M-Instruct (Q4_1 GGUF) loaded from its
// bytes, deterministic and streamed generation, stop sequences, and a cited answer written by
// it over the demo bundle. Run by `make test-wasm`.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { demoBundlePath, loadModel, wasm } from "./support.mjs";

const path = process.env.EDGERAG_CHAT_MODEL;
assert.ok(path, "set EDGERAG_CHAT_MODEL to the chat model's file (make test-wasm does)");
const chat = new wasm.ChatModel(readFileSync(path), "SmolLM2-135M-Instruct.Q4_1");
const capital = { messages: [{ role: "user", content: "What is the capital of France?" }], max_tokens: 24 };

test("loads the GGUF file: its name and context", () => {
  assert.equal(chat.name, "SmolLM2-135M-Instruct.Q4_1");
  assert.equal(chat.contextTokens, 4096);
});

test("greedy generation is stable, streamed piece by piece, and stops where asked", () => {
  const pieces = [];
  const first = chat.generate(capital, (piece) => pieces.push(piece));
  assert.match(first.text, /Paris/);
  assert.ok(pieces.length > 3, `streamed in pieces: ${JSON.stringify(pieces)}`);
  assert.equal(pieces.join(""), first.text);
  assert.ok(first.prompt_tokens > 10 && first.completion_tokens <= 24, JSON.stringify(first));
  assert.ok(["stop", "length"].includes(first.finish));
  assert.deepEqual(chat.generate(capital), first);

  const cut = chat.generate({ ...capital, stop: ["Paris"] });
  assert.equal(cut.finish, "stop");
  assert.equal(cut.text, first.text.slice(0, first.text.indexOf("Paris")));
});

test("bad files and requests are errors with reasons", () => {
  assert.throws(() => new wasm.ChatModel(new Uint8Array([1, 2, 3])), /local model: not a GGUF file/);
  assert.throws(() => chat.generate({ messages: [] }), /the conversation is empty/);
  assert.throws(() => chat.generate({ ...capital, top_p: 2 }), /top_p must be in \(0, 1\]/);
});

test("answers from the demo bundle with the model in the module, streamed and cited", async () => {
  const rag = new wasm.Edgerag(readFileSync(demoBundlePath()));
  rag.useModel(loadModel());
  let streamed = "";
  const question = "Who was the leader of the Norse raiders who settled Normandy?";
  const answer = await rag.askWith(chat, question, { k: 3 }, (piece) => (streamed += piece));
  assert.equal(answer.mode, "llm");
  assert.equal(answer.model, "SmolLM2-135M-Instruct.Q4_1");
  assert.ok(streamed.length > 0);
  assert.ok(answer.citations.length > 0, JSON.stringify(answer, null, 1));
  for (const { marker } of answer.citations) assert.ok(answer.answer.includes(`[${marker}]`));
  assert.ok(answer.citations.some((c) => c.document.endsWith("normans.md")), JSON.stringify(answer.citations));
  await assert.rejects(rag.askWith(chat, question, { llm: { models: ["m"] } }), /cannot both write the answer/);
});
