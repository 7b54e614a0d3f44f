// The demo site: starts edgerag in a Web Worker, loads the site's first bundle and the model,
// and wires the panels.
import { Edgerag } from "@edgerag/web";
import { AskPanel } from "./ask.js";
import { loadConfig } from "./config.js";
import { CorpusPanel } from "./corpus.js";
import { byId, showError } from "./dom.js";
import { ProgressView } from "./progress.js";
import { SettingsPanel } from "./settings.js";
import { describe, Tasks } from "./tasks.js";

async function main(): Promise<void> {
  const tasks = new Tasks(new ProgressView(), byId("corpus-error", HTMLParagraphElement));
  const status = byId("corpus-status", HTMLParagraphElement);
  let rag: Edgerag;
  try {
    rag = await Edgerag.create({ onProgress: (progress) => tasks.progress.report("the corpus again", progress) });
  } catch (error) {
    status.textContent = "edgerag could not start in this browser.";
    showError(tasks.errors, describe(error));
    return;
  }
  byId("version", HTMLSpanElement).textContent = rag.version;
  const config = await loadConfig().catch((error: unknown) => {
    showError(tasks.errors, `Could not read the site's edgerag.json: ${describe(error)}`);
    return { bundles: [], model: null, chat_model: null };
  });
  const ask = new AskPanel(rag, new SettingsPanel(), tasks, config.chat_model ?? null);
  const corpus = new CorpusPanel(rag, tasks, config, () => ask.onBundle());
  await corpus.loadFirstBundle();
  await corpus.loadModel();
}

void main();
