// The progress bar and its label, fed by the web package's progress events. The label shows
// every step (bytes, percents, items); a separate live region announces phases only.
import type { Progress } from "@edgerag/web";
import { byId } from "./dom.js";
import { bytes } from "./format.js";

const BUILD_STAGES: Record<string, string> = {
  load: "Reading",
  embed: "Embedding chunks",
  dense: "Indexing vectors",
  keywords: "Finding keywords",
  graph: "Linking the keyword graph",
  keyword_vectors: "Embedding keywords",
  bm25: "Indexing terms",
};

export class ProgressView {
  readonly #root = byId("progress", HTMLDivElement);
  readonly #label = byId("progress-label", HTMLParagraphElement);
  readonly #bar = byId("progress-bar", HTMLProgressElement);
  /** The live region: written when the phase changes (a download, opening, a build stage). */
  readonly #phase = byId("progress-phase", HTMLParagraphElement);

  /** Shows a task starting, with no measure yet. */
  start(label: string): void {
    this.#root.hidden = false;
    this.#label.textContent = label;
    this.#bar.removeAttribute("value");
    this.#announce(label);
  }

  /** Shows an event of the task `what` (e.g. "the demo bundle"). */
  report(what: string, progress: Progress): void {
    switch (progress.phase) {
      case "download": {
        const { loaded, total, cached } = progress;
        const amount = total === null ? bytes(loaded) : `${Math.floor((100 * loaded) / total)}% of ${bytes(total)}`;
        const phase = cached ? `Loading ${what} from this browser's cache` : `Downloading ${what}`;
        this.#show(cached ? phase : `${phase}: ${amount}`, loaded, total);
        this.#announce(phase);
        break;
      }
      case "open":
        this.start(`Opening ${what}…`);
        break;
      case "build": {
        const stage = BUILD_STAGES[progress.stage] ?? progress.stage;
        const file = progress.file ? ` ${progress.file}` : "";
        this.#show(`${stage}${file}: ${progress.done} of ${progress.total}`, progress.done, progress.total);
        this.#announce(`${stage}…`);
        break;
      }
    }
  }

  /** Ends the task with a closing message (kept for screen readers), or hides the bar. */
  finish(message: string | null = null): void {
    if (message === null) {
      this.#root.hidden = true;
      this.#phase.textContent = "";
      return;
    }
    this.#label.textContent = message;
    this.#bar.value = 1;
    this.#bar.max = 1;
    this.#announce(message);
  }

  #show(label: string, done: number, total: number | null): void {
    this.#root.hidden = false;
    if (this.#label.textContent !== label) this.#label.textContent = label;
    if (total === null || total === 0) {
      this.#bar.removeAttribute("value");
    } else {
      this.#bar.max = total;
      this.#bar.value = Math.min(done, total);
    }
  }

  /** Announces a phase, once: repeats (the same phase's next percent) are not written. */
  #announce(phase: string): void {
    if (this.#phase.textContent !== phase) this.#phase.textContent = phase;
  }
}
