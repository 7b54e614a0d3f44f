// The demo site in real Chromium against `edgerag serve`: the demo bundle and the model load
// (and come from the cache after a reload), a question gets a cited, explained answer, the
// page is keyboard and screen-reader usable, a bundle is built in the tab from a PDF and a
// Markdown file, the layout fits a phone, an LLM's reply streams in, a newer question's answer
// is never overwritten by an older one's, a small chat model writes a cited answer in the tab
// ("Answer locally"), and the LLM settings keep no idle key and warn of plain http. Run by
// `make test-browser`:
//   EDGERAG=… EDGERAG_DEMO_BUNDLE=… node --test www/tests/
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { browser, llmServer, screenshot, serve, until, watchConsole } from "./helpers.mjs";

const repo = (path) => fileURLToPath(new URL(`../../${path}`, import.meta.url));
const demoBundle = process.env.EDGERAG_DEMO_BUNDLE;
assert.ok(demoBundle, "set EDGERAG_DEMO_BUNDLE to the demo bundle (make test-browser does)");

const QUESTION = "Who was the leader of the Norse raiders who settled Normandy?";
const MINUTE = 60_000;

let server;
let chromium;
/** The one tab of the run (reloaded, resized): its console errors are checked at the end. */
let page;
let errors;

before(async () => {
  // The site also serves the chat model (SmolLM2-135M-Instruct, from the cache `make models`
  // fills) for "Answer locally".
  server = await serve(demoBundle, repo("www/dist"), ["--local-model", "local"]);
  chromium = await browser();
  page = chromium.context.pages()[0] ?? (await chromium.context.newPage());
  page.setDefaultTimeout(2 * MINUTE);
  errors = watchConsole(page);
});

after(async () => {
  await chromium?.close();
  server?.stop();
});

/** Responses for bundle and model files (the worker's included) until `stop()`. */
function watchTransfers() {
  const list = [];
  const watch = (response) => {
    const { pathname } = new URL(response.url());
    if (/^\/(bundles|models|chat-models)\//.test(pathname)) list.push({ pathname, status: response.status() });
  };
  page.context().on("response", watch);
  return { list, stop: () => page.context().off("response", watch) };
}

async function waitLoaded(target) {
  await target.getByText("dense retrieval ready").waitFor({ timeout: 5 * MINUTE });
  await target.locator("#question:enabled").waitFor();
}

/** Records every text the answer shows, from now on, in `window.answerStates`. */
async function recordAnswerStates(target) {
  await target.evaluate(() => {
    window.answerStates = [];
    const text = document.getElementById("answer-text");
    new MutationObserver(() => window.answerStates.push(text.textContent)).observe(text, { childList: true, characterData: true, subtree: true });
  });
}

async function ask(target, question) {
  await target.locator("#question").fill(question);
  await target.locator("#ask-button").click();
  await target.locator('#answer[aria-busy="false"] #answer-text p').waitFor({ timeout: 2 * MINUTE });
}

test("loads the site's demo bundle and model, with byte progress", { timeout: 10 * MINUTE }, async () => {
  const config = await (await fetch(new URL("edgerag.json", server.url))).json();
  assert.equal(config.bundles[0].name, "demo");
  const progress = [];
  const announced = [];
  await page.exposeFunction("recordProgress", (label, phase) => {
    progress.push(label);
    if (phase && phase !== announced.at(-1)) announced.push(phase);
  });
  await page.addInitScript(() => {
    new MutationObserver(() => {
      const label = document.getElementById("progress-label")?.textContent;
      const phase = document.getElementById("progress-phase")?.textContent;
      if (label) window.recordProgress(label, phase);
    }).observe(document, { subtree: true, childList: true, characterData: true });
  });
  const transfers = watchTransfers();
  await page.goto(server.url);
  await waitLoaded(page);
  transfers.stop();
  // The worker's downloads are seen (so the reload test below can see that there are none).
  const downloaded = transfers.list.filter((transfer) => transfer.status === 200).map((transfer) => transfer.pathname);
  assert.deepEqual(downloaded.sort(), [
    "/bundles/demo.bundle",
    "/models/all-MiniLM-L6-v2/config.json",
    "/models/all-MiniLM-L6-v2/model.safetensors",
    "/models/all-MiniLM-L6-v2/tokenizer.json",
  ]);
  assert.match(await page.locator("#corpus-status").innerText(), /^demo: 6 documents, \d+ chunks · dense retrieval ready$/);
  const percents = new Set(progress.flatMap((label) => /^Downloading the embedding model: (\d+)% of [\d.]+ MB$/.exec(label)?.slice(1) ?? []));
  assert.ok(percents.has("0") && percents.size >= 4, `the model's download is shown as it goes:\n${progress.join("\n")}`);
  // The live region speaks phases, not every percent.
  assert.ok(announced.includes("Downloading the embedding model"), announced.join("\n"));
  assert.ok(announced.includes("Opening the embedding model…"), announced.join("\n"));
  assert.ok(announced.every((phase) => !/\d+%/.test(phase)), `percents were announced:\n${announced.join("\n")}`);
  await screenshot(page, "loaded");
});

test("answers with a citation of normans.md, explained, with the keyword graph", { timeout: 5 * MINUTE }, async () => {
  // Counts the page's searches: the sources' explanations come with the answer.
  await page.evaluate(async () => {
    const { Edgerag } = await import("@edgerag/web");
    const search = Edgerag.prototype.search;
    window.searches = 0;
    Edgerag.prototype.search = function (...args) {
      window.searches += 1;
      return search.apply(this, args);
    };
  });
  await ask(page, QUESTION);
  assert.equal(await page.evaluate(() => window.searches), 0, "no search beside the answer");
  const answer = await page.locator("#answer-text").innerText();
  assert.match(answer, /Rollo/);
  const citation = page.locator('#answer-text a.citation[data-document$="normans.md"]').first();
  const target = await citation.getAttribute("href");
  assert.match(target, /^#source-S\d+$/);
  const source = page.locator(target);
  assert.match(await source.locator(".document").innerText(), /(^|\/)normans\.md$/);
  assert.match(await source.locator(".scores").innerText(), /bm25 \d+\.\d{3} \(#\d+\)/);
  assert.ok((await source.locator("mark").count()) > 0, "the cited sentence is highlighted in its chunk");
  await citation.click();
  assert.equal(await page.evaluate(() => location.hash), target);
  assert.ok((await page.locator("#graph svg .node.keyword").count()) > 0, "keywords are drawn");
  assert.ok((await page.locator("#graph svg a .node.chunk.source").count()) > 0, "cited chunks link to their sources");
  await screenshot(page, "answer");
});

test("is keyboard and screen-reader usable: skip link, headings, the graph as a group, edge contrast", async () => {
  const first = await page.evaluate(() => document.querySelector("a[href], button, input, select, textarea, summary, [tabindex]")?.className);
  assert.equal(first, "skip", "the skip link comes first");
  await page.locator("a.skip").focus();
  await page.keyboard.press("Enter");
  assert.equal(await page.evaluate(() => document.activeElement?.id), "ask-heading", "the skip link moves focus to the Ask heading");
  assert.equal(await page.locator("summary :is(h1, h2, h3, h4, h5, h6)").count(), 0, "no heading inside a summary");
  const graph = page.getByRole("group", { name: "Keyword graph around the answer" });
  assert.equal(await graph.count(), 1);
  assert.ok((await graph.getByRole("link").count()) > 0, "the source links inside the graph are exposed");
  const contrast = await page.evaluate(() => {
    const rgb = (color) => color.match(/[\d.]+/g).slice(0, 3).map(Number);
    const luminance = (color) => {
      const [r, g, b] = rgb(color).map((c) => (c / 255 <= 0.03928 ? c / 255 / 12.92 : ((c / 255 + 0.055) / 1.055) ** 2.4));
      return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const edge = luminance(getComputedStyle(document.querySelector("#graph .edge")).stroke);
    const panel = luminance(getComputedStyle(document.getElementById("graph-section")).backgroundColor);
    return (Math.max(edge, panel) + 0.05) / (Math.min(edge, panel) + 0.05);
  });
  assert.ok(contrast >= 3, `graph edges have ${contrast.toFixed(2)}:1 against the panel`);
});

test("after a reload, no bundle or model bytes are fetched again", { timeout: 5 * MINUTE }, async () => {
  const transfers = watchTransfers();
  await page.reload();
  await waitLoaded(page);
  await ask(page, QUESTION);
  transfers.stop();
  assert.match(await page.locator("#answer-text").innerText(), /Rollo/);
  const moved = transfers.list.filter((transfer) => transfer.status !== 304);
  assert.deepEqual(moved, [], `fetched again: ${JSON.stringify(transfers.list)}`);
});

test("builds a bundle in the tab from a PDF and a Markdown file, then searches it", { timeout: 20 * MINUTE }, async (t) => {
  await page.locator("#build-section summary").click();
  const started = Date.now();
  await page.locator("#build-files").setInputFiles([repo("demo/corpus/shared-mime-info-spec.pdf"), repo("demo/corpus/steam-engine.md")]);
  await page.locator("#progress-label", { hasText: "Loaded my-documents.bundle" }).waitFor({ timeout: 15 * MINUTE });
  const seconds = (Date.now() - started) / 1000;
  const summary = await page.locator("#build-summary").innerText();
  t.diagnostic(`in-tab build: ${seconds.toFixed(1)} s — ${summary}`);
  const chunks = Number(/(\d+) chunks/.exec(summary)?.[1]);
  assert.match(summary, /^Built my-documents\.bundle from 2 documents: \d+ chunks, \d+ vectors/);
  assert.match(summary, new RegExp(`${chunks} vectors`), "every chunk is embedded");
  t.diagnostic(`embedding speed: ${(chunks / seconds).toFixed(1)} chunks/s`);
  assert.match(await page.locator("#corpus-status").innerText(), /^my-documents\.bundle: 2 documents, \d+ chunks · dense retrieval ready$/);
  const href = await page.locator("#build-download").getAttribute("href");
  const size = await page.evaluate(async (url) => (await (await fetch(url)).arrayBuffer()).byteLength, href);
  assert.match(summary, new RegExp(`${(size / 1024).toFixed(1)} KB`), `the download holds the ${size} bytes built`);
  await screenshot(page, "built");

  await ask(page, "glob patterns for MIME type detection");
  assert.equal(await page.locator("#sources li:first-child .document").innerText(), "shared-mime-info-spec.pdf");
  assert.match(await page.locator("#sources li:first-child h3").innerText(), /\(p\. \d+\)$/);
});

test("fits a phone-sized viewport (375 px) with no horizontal scroll", { timeout: 5 * MINUTE }, async () => {
  await page.setViewportSize({ width: 375, height: 812 });
  await page.goto(server.url);
  await waitLoaded(page);
  await ask(page, QUESTION);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  assert.equal(overflow, 0, "no horizontal scroll");
  await page.locator("#graph svg .node.keyword text").first().waitFor();
  const labelPx = await page.evaluate(() => {
    const text = document.querySelector("#graph svg .node.keyword text");
    return text.getScreenCTM().a * parseFloat(getComputedStyle(text).fontSize);
  });
  assert.ok(labelPx >= 11, `the graph's labels are drawn at ${labelPx.toFixed(1)} px on a phone`);
  await screenshot(page, "phone");
  await page.setViewportSize({ width: 1280, height: 900 });
});

test("streams an LLM's answer configured in the settings panel, with the key sent", { timeout: 5 * MINUTE }, async () => {
  const llm = await llmServer();
  try {
    await page.locator("#llm-settings summary").click();
    await page.locator("#llm-base-url").fill(llm.baseUrl);
    await page.locator("#llm-model").fill("tiny-test-llm");
    await page.locator("#llm-key").fill("sk-test-key-123");
    await page.locator("#llm-enabled").check();
    await page.locator("#llm-form button[type=submit]").click();
    await page.getByText("Saved: answers come from tiny-test-llm.").waitFor();

    await recordAnswerStates(page);
    await ask(page, QUESTION);
    const states = await page.evaluate(() => window.answerStates);
    const final = await page.locator("#answer-text").textContent();
    const partial = new Set(states.filter((state) => state && state.length < final.length && final.startsWith(state)));
    assert.ok(partial.size >= 2, `at least two intermediate states: ${JSON.stringify(states)}`);
    assert.match(final, /Rollo/);
    assert.ok((await page.locator("#answer-text a.citation").count()) > 0, "the LLM's answer shows a citation");
    assert.match(await page.locator("#answer-meta").innerText(), /^Written by the LLM from the sources \(tiny-test-llm\)/);
    assert.ok(llm.requests.length > 0);
    for (const request of llm.requests) assert.equal(request.headers.authorization, "Bearer sk-test-key-123");

    await page.locator("#llm-forget").click();
    const stored = await page.evaluate(() => JSON.parse(localStorage.getItem("edgerag.llm")));
    assert.equal(stored.apiKey, "");
  } finally {
    await llm.close();
  }
});

test("answers locally: the site's chat model, in the tab, streams an answer with a citation", { timeout: 15 * MINUTE }, async () => {
  await waitLoaded(page);
  const note = await page.locator("#ask-local-note").innerText();
  assert.match(note, /SmolLM2-135M-Instruct\.Q4_1, 9\d\.\d MB/);
  const transfers = watchTransfers();
  await recordAnswerStates(page);
  await page.locator("#question").fill(QUESTION);
  await page.locator("#ask-local").click();
  await page.locator("#progress-label", { hasText: "Loaded SmolLM2-135M-Instruct.Q4_1: it writes answers in this tab." }).waitFor({ timeout: 5 * MINUTE });
  await page.locator("#answer-meta", { hasText: "in this tab, is writing" }).waitFor({ timeout: 5 * MINUTE });
  await page.locator('#answer[aria-busy="false"] #answer-text p').waitFor({ timeout: 10 * MINUTE });
  transfers.stop();

  const states = await page.evaluate(() => window.answerStates);
  const streamed = states.filter((state) => state && !state.includes("[S"));
  assert.ok(new Set(streamed).size >= 2, `the reply streamed in pieces: ${JSON.stringify(states.slice(0, 10))}`);
  assert.match(await page.locator("#answer-meta").innerText(), /^Written by the LLM from the sources \(SmolLM2-135M-Instruct\.Q4_1\)/);
  const citations = page.locator("#answer-text a.citation");
  assert.ok((await citations.count()) > 0, `the answer cites a source: ${await page.locator("#answer-text").innerText()}`);
  const target = await citations.first().getAttribute("href");
  assert.equal(await page.locator(target).count(), 1, "the citation links to its source");
  const models = transfers.list.filter((t) => t.pathname.startsWith("/chat-models/"));
  assert.deepEqual(models, [{ pathname: "/chat-models/SmolLM2-135M-Instruct.Q4_1.gguf", status: 200 }]);
  await screenshot(page, "answer-locally");
});

test("a newer question's answer is never overwritten by a slower earlier one", { timeout: 5 * MINUTE }, async () => {
  // The LLM thinks 3 s about the Normandy question, and answers the second one at once.
  const llm = await llmServer({ pause: (question) => (/Normandy/.test(question) ? 3000 : 0) });
  try {
    await page.locator("#llm-base-url").fill(llm.baseUrl);
    await page.locator("#llm-enabled").check();
    await page.locator("#llm-form button[type=submit]").click();
    await recordAnswerStates(page);
    await page.locator("#question").fill(QUESTION);
    await page.locator("#ask-button").click();
    await until(() => llm.requests.length > 0, MINUTE);
    await page.evaluate(() => (window.answerStates = []));
    await ask(page, "Who won Super Bowl 50?");
    const second = await page.locator("#answer-text").innerText();
    assert.doesNotMatch(second, /Rollo/);
    assert.match(await page.locator("#answer-text a.citation").first().getAttribute("data-document"), /(^|\/)super-bowl-50\.md$/);
    await until(() => llm.finished >= 2, MINUTE);
    assert.ok(llm.finished >= 2, "the first answer was written too");
    await page.waitForTimeout(1500); // its reply reaches the page, which must ignore it
    assert.equal(await page.locator("#answer-text").innerText(), second, "the second answer stays");
    const states = await page.evaluate(() => window.answerStates);
    assert.ok(states.every((state) => !/Rollo/.test(state)), `the first answer showed after the second was asked: ${JSON.stringify(states)}`);
    assert.match(await page.locator("#sources li:first-child .document").innerText(), /(^|\/)super-bowl-50\.md$/);
  } finally {
    await llm.close();
  }
});

test("the LLM settings keep no API key while the LLM is off, and warn of plain http to another host", async () => {
  await page.locator("#llm-key").fill("sk-idle-key");
  await page.locator("#llm-enabled").uncheck();
  await page.locator("#llm-form button[type=submit]").click();
  await page.getByText("Saved: answers are extractive; no API key is stored.").waitFor();
  const stored = await page.evaluate(() => JSON.parse(localStorage.getItem("edgerag.llm")));
  assert.equal(stored.apiKey, "");
  assert.equal(stored.enabled, false);
  assert.equal(await page.locator("#llm-key").inputValue(), "");

  const warning = page.locator("#llm-insecure");
  for (const [url, warned] of [
    ["http://llm.example.org/v1", true],
    ["http://192.168.1.20:8000/v1", true],
    ["http://127.0.0.1:8000/v1", false],
    ["http://localhost:11434/v1", false],
    ["http://[::1]:8000/v1", false],
    ["https://api.groq.com/openai/v1", false],
  ]) {
    await page.locator("#llm-base-url").fill(url);
    assert.equal(await warning.isVisible(), warned, url);
  }
  await page.locator("#llm-base-url").fill("http://llm.example.org/v1");
  await page.locator("#llm-form button[type=submit]").click();
  await page.reload();
  await waitLoaded(page);
  await page.locator("#llm-settings summary").click();
  assert.equal(await warning.isVisible(), true, "the saved URL is warned of when the page opens");
});

test("the console shows no errors", () => {
  assert.deepEqual(errors, []);
});
