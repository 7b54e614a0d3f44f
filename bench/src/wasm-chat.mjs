// Times the wasm chat model under Node for `edgerag-bench --chat-model` (which writes this file
// to a temporary directory and runs it): `node wasm-chat.mjs INPUT.json`, INPUT = {pkg, model,
// content, generate} with pkg the wasm-bindgen output for Node. Prints {load_seconds, prompt,
// full, memory_bytes} as JSON: the prompt alone (one token generated), then the prompt and up
// to `generate` tokens, each as {prompt_tokens, completion_tokens, seconds}; memory is the
// process's resident set at the end (wasm memory never shrinks, so it holds the peak).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";

const input = JSON.parse(readFileSync(process.argv[2], "utf8"));
const { ChatModel } = createRequire(import.meta.url)(join(input.pkg, "edgerag_wasm.js"));
let start = process.hrtime.bigint();
const seconds = () => Number(process.hrtime.bigint() - start) / 1e9;
const model = new ChatModel(readFileSync(input.model));
const load_seconds = seconds();
const messages = [{ role: "user", content: input.content }];
const run = (max_tokens) => {
  start = process.hrtime.bigint();
  const reply = model.generate({ messages, max_tokens });
  return { prompt_tokens: reply.prompt_tokens, completion_tokens: reply.completion_tokens, seconds: seconds() };
};
const prompt = run(1);
const full = run(input.generate);
process.stdout.write(JSON.stringify({ load_seconds, prompt, full, memory_bytes: process.memoryUsage().rss }));
