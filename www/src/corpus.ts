// The corpus panel: load the site's bundles, a bundle by URL or from disk, the model, or build
// a bundle from documents in the tab.
import type { BundleInfo, Edgerag, ModelInfo } from "@edgerag/web";
import type { SiteConfig } from "./config.js";
import { byId } from "./dom.js";
import { bytes, plural } from "./format.js";
import type { Tasks } from "./tasks.js";

const BUILT_NAME = "my-documents";

export class CorpusPanel {
  readonly #status = byId("corpus-status", HTMLParagraphElement);
  readonly #buildResult = byId("build-result", HTMLDivElement);
  readonly #buildSummary = byId("build-summary", HTMLParagraphElement);
  readonly #download = byId("build-download", HTMLAnchorElement);
  #bundle: BundleInfo | null = null;
  #model: ModelInfo | null = null;
  #bundleName = "";

  constructor(
    private readonly rag: Edgerag,
    private readonly tasks: Tasks,
    private readonly config: SiteConfig,
    /** Called whenever a bundle has been loaded. */
    private readonly onBundle: () => void,
  ) {
    this.#wireSiteBundles();
    byId("bundle-url", HTMLFormElement).addEventListener("submit", (event) => {
      event.preventDefault();
      const url = byId("bundle-url-input", HTMLInputElement).value.trim();
      void this.loadBundle(url, url);
    });
    const bundleFile = byId("bundle-file", HTMLInputElement);
    bundleFile.addEventListener("change", () => {
      const file = bundleFile.files?.[0];
      if (file) void this.loadBundle(file.name, file);
    });
    this.#wireBuild();
  }

  /** Loads the site's first bundle, if it offers any. */
  async loadFirstBundle(): Promise<void> {
    const first = this.config.bundles[0];
    if (first) await this.loadBundle(first.name, first.url, first.sha256);
    else this.#showStatus();
  }

  async loadBundle(name: string, input: string | Blob, sha256?: string): Promise<void> {
    const info = await this.tasks.run(`Loading ${name}…`, `Could not load ${name}`, () =>
      this.rag.loadBundle(input, {
        ...(sha256 === undefined ? {} : { sha256 }),
        onProgress: (progress) => this.tasks.progress.report(name, progress),
      }),
    );
    if (!info) return;
    this.#bundle = info;
    this.#bundleName = name;
    this.tasks.progress.finish(`Loaded ${name}: ${plural(info.manifest.counts.chunks, "chunk")}.`);
    this.#showStatus();
    this.onBundle();
  }

  /** Loads the site's model, else the default one from the Hugging Face Hub. */
  async loadModel(): Promise<void> {
    const site = this.config.model;
    const what = "the embedding model";
    const info = await this.tasks.run(`Loading ${what}…`, `Could not load ${what}`, () =>
      this.rag.loadModel({
        ...(site ? { baseUrl: site.url, files: site.files, id: site.id } : {}),
        onProgress: (progress) => this.tasks.progress.report(what, progress),
      }),
    );
    if (!info) return;
    this.#model = info;
    if (this.#bundle) this.#bundle = { ...this.#bundle, denseReady: info.denseReady };
    this.tasks.progress.finish(`Loaded the embedding model ${info.id}.`);
    this.#showStatus();
  }

  async build(files: readonly File[]): Promise<void> {
    if (files.length === 0) return;
    const started = performance.now();
    const built = await this.tasks.run(`Reading ${plural(files.length, "file")}…`, "Could not build a bundle", () =>
      this.rag.build([...files], {
        name: BUILT_NAME,
        onProgress: (progress) => this.tasks.progress.report(BUILT_NAME, progress),
      }),
    );
    if (!built) return;
    const seconds = (performance.now() - started) / 1000;
    const { summary } = built;
    const failed = summary.failed.map((failure) => ` ${failure.source} was skipped: ${failure.error}.`).join("");
    this.#buildSummary.textContent =
      `Built ${BUILT_NAME}.bundle from ${plural(summary.documents, "document")}: ${plural(summary.chunks, "chunk")}, ` +
      `${plural(summary.vectors, "vector")}, ${plural(summary.keywords, "keyword")}, ${bytes(summary.bytes)} in ${seconds.toFixed(1)} s.${failed}`;
    if (this.#download.href) URL.revokeObjectURL(this.#download.href);
    const bundle = new Blob([built.bytes], { type: "application/octet-stream" });
    this.#download.href = URL.createObjectURL(bundle);
    this.#download.download = `${BUILT_NAME}.bundle`;
    this.#buildResult.hidden = false;
    await this.loadBundle(`${BUILT_NAME}.bundle`, bundle);
  }

  #wireSiteBundles(): void {
    const { bundles } = this.config;
    if (bundles.length === 0) return;
    const form = byId("bundle-pick", HTMLFormElement);
    const select = byId("bundle-select", HTMLSelectElement);
    select.replaceChildren(
      ...bundles.map((bundle, i) => new Option(`${bundle.name} — ${plural(bundle.chunks, "chunk")}, ${bytes(bundle.bytes)}`, String(i))),
    );
    form.hidden = false;
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const bundle = bundles[Number(select.value)];
      if (bundle) void this.loadBundle(bundle.name, bundle.url, bundle.sha256);
    });
  }

  #wireBuild(): void {
    const input = byId("build-files", HTMLInputElement);
    const zone = byId("drop-zone", HTMLLabelElement);
    input.addEventListener("change", () => void this.build(Array.from(input.files ?? [])));
    zone.addEventListener("dragover", (event) => {
      event.preventDefault();
      zone.classList.add("dragging");
    });
    zone.addEventListener("dragleave", () => zone.classList.remove("dragging"));
    zone.addEventListener("drop", (event) => {
      event.preventDefault();
      zone.classList.remove("dragging");
      void this.build(Array.from(event.dataTransfer?.files ?? []));
    });
  }

  #showStatus(): void {
    if (!this.#bundle) {
      this.#status.textContent = "No bundle loaded: load one or build one from your documents.";
      return;
    }
    const { counts, embedding } = this.#bundle.manifest;
    const dense = this.#bundle.denseReady
      ? "dense retrieval ready"
      : embedding === null
        ? "no vectors (BM25 and graph retrieval)"
        : this.#model
          ? `vectors of another model (${embedding.model})`
          : "dense retrieval once the model is loaded";
    this.#status.textContent = `${this.#bundleName}: ${plural(counts.documents, "document")}, ${plural(counts.chunks, "chunk")} · ${dense}`;
  }
}
