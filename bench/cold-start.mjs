// Cold start of the demo site in headless Chromium: how long from page load until a question
// can be asked, and until its answer is shown, with nothing cached and with the bundle and the
// embedding model in Cache Storage.
//
// `edgerag-bench` runs it as a subprocess (playwright-core from the repository's node_modules,
// Debian's /usr/bin/chromium or $CHROMIUM):
//   node bench/cold-start.mjs INPUT.json
// INPUT = {"edgerag": "/abs/edgerag", "bundle": "/abs/demo.bundle", "site": "/abs/www/dist",
//          "question": "…", "runs": 3}
// It starts `edgerag serve BUNDLE --site SITE` (extractive answers), then for each run opens a
// fresh browser profile and loads the site twice: "uncached", then a reload ("cached"). In each
// load, a script injected before the site's own code watches the page: when the corpus status
// says "dense retrieval ready" with the question box enabled (the bundle and the model are
// loaded), it notes the time and asks the question through the ask form (no Playwright round
// trip in between); when the final answer (with a citation) is in the page, it notes the time
// again. Times are the page's performance.now(), i.e. milliseconds since the navigation
// started. network_bytes sums the response bodies of /bundles/ and /models/ requests (the
// worker's included) as received over the network: Cache Storage hits send no request, and an
// ETag revalidation (304) has no body.
// Prints one JSON object on stdout:
//   {"browser", "question", "bundle_bytes",
//    "runs": [{"cache": "uncached"|"cached", "ready_ms", "first_answer_ms", "network_bytes"}, …]}
// On an error: a message on stderr and exit status 1. The server and browser are always stopped.
import { readFileSync, statSync } from "node:fs";
import { browser, serve, watchConsole } from "../www/tests/helpers.mjs";

const LOAD_TIMEOUT = 10 * 60_000;

/** Runs in the page before its scripts: asks `question` once ready, notes both times. */
function watchLoad(question) {
  const marks = (window.coldStart = {});
  const byId = (id) => document.getElementById(id);
  const check = () => {
    if (marks.error || marks.answeredMs !== undefined) return;
    for (const id of ["corpus-error", "ask-error"]) {
      const alert = byId(id);
      if (alert && !alert.hidden && alert.textContent) marks.error = alert.textContent;
    }
    if (marks.error) return;
    if (marks.readyMs === undefined) {
      const input = byId("question");
      if (!byId("corpus-status")?.textContent.includes("dense retrieval ready") || !input || input.disabled) return;
      marks.readyMs = performance.now();
      input.value = question;
      byId("ask-form").requestSubmit();
      return;
    }
    const answer = byId("answer");
    const text = byId("answer-text");
    if (answer.getAttribute("aria-busy") !== "false" || !text.querySelector("p")) return;
    marks.answeredMs = performance.now();
    marks.meta = byId("answer-meta").textContent;
    marks.answer = text.textContent;
    marks.citations = text.querySelectorAll("a.citation").length;
  };
  new MutationObserver(check).observe(document, {
    subtree: true,
    childList: true,
    characterData: true,
    attributes: true,
    attributeFilter: ["disabled", "hidden", "aria-busy"],
  });
}

/** Loads the page with `navigate`, waits for the answer; the load's times and network bytes. */
async function measure(page, cache, navigate) {
  const sizes = [];
  const onFinished = (request) => {
    if (/^\/(bundles|models)\//.test(new URL(request.url()).pathname)) {
      sizes.push(request.sizes().then((size) => size.responseBodySize));
    }
  };
  page.context().on("requestfinished", onFinished);
  try {
    await navigate();
    const handle = await page.waitForFunction(
      () => window.coldStart && (window.coldStart.error || window.coldStart.answeredMs !== undefined) && window.coldStart,
      null,
      { timeout: LOAD_TIMEOUT, polling: 100 },
    );
    const marks = await handle.jsonValue();
    if (marks.error) throw new Error(`${cache} load: the site says: ${marks.error}`);
    if (!marks.meta.startsWith("Extractive") || marks.citations === 0) {
      throw new Error(`${cache} load: not an extractive answer with a citation: ${marks.meta}: ${marks.answer}`);
    }
    const bytes = (await Promise.all(sizes)).reduce((sum, size) => sum + size, 0);
    return { cache, ready_ms: round(marks.readyMs), first_answer_ms: round(marks.answeredMs), network_bytes: bytes };
  } finally {
    page.context().off("requestfinished", onFinished);
  }
}

function round(ms) {
  return Math.round(ms * 10) / 10;
}

async function main() {
  const path = process.argv[2];
  if (!path) throw new Error("usage: node bench/cold-start.mjs INPUT.json");
  const input = JSON.parse(readFileSync(path, "utf8"));
  for (const key of ["edgerag", "bundle", "site", "question"]) {
    if (typeof input[key] !== "string" || !input[key]) throw new Error(`${path}: "${key}" must be a non-empty string`);
  }
  if (!Number.isInteger(input.runs) || input.runs < 1) throw new Error(`${path}: "runs" must be a positive integer`);

  process.env.EDGERAG = input.edgerag; // the binary helpers' serve runs
  const server = await serve(input.bundle, input.site);
  const result = { browser: "", question: input.question, bundle_bytes: statSync(input.bundle).size, runs: [] };
  try {
    for (let run = 0; run < input.runs; run += 1) {
      const chromium = await browser(); // a fresh profile: nothing cached
      try {
        const page = chromium.context.pages()[0] ?? (await chromium.context.newPage());
        const errors = watchConsole(page);
        if (!result.browser) {
          const { product } = await (await chromium.context.newCDPSession(page)).send("Browser.getVersion");
          result.browser = `Chromium ${product.split("/").at(-1)}`;
        }
        await page.addInitScript(watchLoad, input.question);
        try {
          result.runs.push(await measure(page, "uncached", () => page.goto(server.url)));
          result.runs.push(await measure(page, "cached", () => page.reload()));
        } catch (error) {
          if (errors.length > 0) error.message += `\nconsole:\n${errors.join("\n")}`;
          throw error;
        }
      } finally {
        await chromium.close();
      }
    }
  } finally {
    server.stop();
  }
  console.log(JSON.stringify(result));
}

main().catch((error) => {
  console.error(`cold-start: ${error.message}`);
  process.exit(1);
});
