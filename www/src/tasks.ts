// Long corpus tasks (downloads, builds) run one at a time, sharing the progress bar.
import { EdgeragError } from "@edgerag/web";
import { showError } from "./dom.js";
import type { ProgressView } from "./progress.js";

export class Tasks {
  #tail: Promise<unknown> = Promise.resolve();

  constructor(
    readonly progress: ProgressView,
    readonly errors: HTMLElement,
  ) {}

  /** Runs `work` after the tasks before it; a failure is shown (prefixed by `failure`), not thrown. */
  run<T>(label: string, failure: string, work: () => Promise<T>): Promise<T | undefined> {
    const run = this.#tail.then(async () => {
      showError(this.errors, null);
      this.progress.start(label);
      try {
        return await work();
      } catch (error) {
        this.progress.finish();
        showError(this.errors, `${failure}: ${describe(error)}`);
        return undefined;
      }
    });
    this.#tail = run;
    return run;
  }
}

/** A readable message for an error of the web package (or anything else). */
export function describe(error: unknown): string {
  if (error instanceof EdgeragError && error.code === "crashed") {
    return `${error.message}. It restarts by itself; if the same input crashes it again, that input (often a damaged PDF) cannot be read.`;
  }
  return error instanceof Error ? error.message : String(error);
}
