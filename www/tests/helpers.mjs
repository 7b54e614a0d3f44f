// What the browser tests need: `edgerag serve`, Debian's Chromium driven by playwright-core,
// a console watcher, and a tiny OpenAI-compatible LLM server on 127.0.0.1.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { chromium } from "playwright-core";

const targetDir = process.env.CARGO_TARGET_DIR ?? join(homedir(), ".cache/edgerag/target");

/** Where screenshots go: $EDGERAG_ARTIFACTS, else $CARGO_TARGET_DIR/artifacts/browser. */
const artifacts = process.env.EDGERAG_ARTIFACTS ?? join(targetDir, "artifacts/browser");

/** Saves a full-page screenshot of `page` as artifacts/NAME.png. */
export async function screenshot(page, name) {
  mkdirSync(artifacts, { recursive: true });
  await page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true });
}

/** Rejects after `ms` with `what` in the message, so a stuck step fails instead of hanging. */
function within(ms, what, promise) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no result after ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Starts `edgerag serve BUNDLE --site SITE --port 0 --json [ARGS…]`; resolves once it listens. */
export async function serve(bundle, site, args = []) {
  const edgerag = process.env.EDGERAG ?? join(targetDir, "release/edgerag");
  const child = spawn(edgerag, ["serve", bundle, "--site", site, "--port", "0", "--json", ...args], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (data) => (stderr += data));
  const exited = new Promise((_, reject) => {
    child.once("error", (error) => reject(new Error(`could not run ${edgerag}: ${error.message}`)));
    child.once("exit", (code) => reject(new Error(`edgerag serve exited (${code}): ${stderr.trim()}`)));
  });
  const firstLine = new Promise((resolve) => createInterface({ input: child.stdout }).once("line", resolve));
  const line = await within(60_000, "edgerag serve to start", Promise.race([firstLine, exited]));
  exited.catch(() => {}); // killed at the end on purpose
  const info = JSON.parse(line);
  return { url: info.url, info, stop: () => child.kill() };
}

/** Debian's Chromium with a fresh profile, kept across reloads (persistent context). */
export async function browser() {
  const profile = mkdtempSync(join(tmpdir(), "edgerag-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Collects console errors and uncaught exceptions of a page (and its workers). */
export function watchConsole(page) {
  const errors = [];
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(`console: ${message.text()}`);
  });
  page.on("pageerror", (error) => errors.push(`pageerror: ${error.message}`));
  page.on("worker", (worker) => worker.on("console", (message) => {
    if (message.type() === "error") errors.push(`worker console: ${message.text()}`);
  }));
  return errors;
}

/**
 * An OpenAI-compatible chat-completions server that streams (SSE) the source sentence sharing
 * the most words with the question, cited with that source's marker: a tiny, honest "LLM"
 * over the sources the core sends. Records every request's headers; `finished` counts the
 * replies ended. `pause(question)` gives the milliseconds to think before replying (none by
 * default), to make one answer slower than another.
 */
export async function llmServer({ pause = () => 0 } = {}) {
  const requests = [];
  let finished = 0;
  const cors = {
    "access-control-allow-origin": "*",
    "access-control-allow-methods": "POST, OPTIONS",
    "access-control-allow-headers": "authorization, content-type",
    "access-control-max-age": "600",
  };
  const server = createServer(async (req, res) => {
    if (req.method === "OPTIONS") {
      res.writeHead(204, cors).end();
      return;
    }
    if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
      res.writeHead(404, cors).end();
      return;
    }
    let body = "";
    for await (const chunk of req) body += chunk;
    const request = JSON.parse(body);
    requests.push({ headers: req.headers, body: request });
    const prompt = request.messages.at(-1).content;
    const reply = answer(prompt);
    await new Promise((resolve) => setTimeout(resolve, pause(prompt.slice(prompt.lastIndexOf("Question:")))));
    if (!request.stream) {
      res.writeHead(200, { ...cors, "content-type": "application/json" });
      res.end(JSON.stringify({ choices: [{ index: 0, message: { role: "assistant", content: reply }, finish_reason: "stop" }] }));
      finished += 1;
      return;
    }
    res.writeHead(200, { ...cors, "content-type": "text/event-stream", "cache-control": "no-cache" });
    for (const piece of reply.match(/\S+\s*/g) ?? []) {
      res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: piece } }] })}\n\n`);
      await new Promise((resolve) => setTimeout(resolve, 40));
    }
    res.end("data: [DONE]\n\n");
    finished += 1;
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    get finished() {
      return finished;
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

function answer(prompt) {
  const question = words(prompt.slice(prompt.lastIndexOf("Question:")));
  let best = { overlap: 0, text: "The sources do not contain the answer to this question." };
  for (const [, marker, text] of prompt.matchAll(/<source id="(S\d+)"[^>]*>\n([\s\S]*?)\n<\/source>/g)) {
    for (const sentence of text.split(/(?<=[.!?])\s+/)) {
      const overlap = words(sentence).filter((word) => question.includes(word)).length;
      if (overlap > best.overlap) best = { overlap, text: `${sentence.replace(/[.!?]$/, "")} [${marker}].` };
    }
  }
  return best.text;
}

function words(text) {
  return text.toLowerCase().match(/[a-z]{4,}/g) ?? [];
}

/** Waits until `condition()` holds or `timeout` ms have passed, checking every `step` ms. */
export async function until(condition, timeout, step = 50) {
  for (let waited = 0; !condition() && waited < timeout; waited += step) {
    await new Promise((resolve) => setTimeout(resolve, step));
  }
}
