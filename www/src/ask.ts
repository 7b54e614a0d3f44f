// The question form: an answer (streamed when an LLM writes it, remote or in the tab), its
// explained sources and the keyword graph around it.
import type { Edgerag } from "@edgerag/web";
import { AnswerView } from "./answer.js";
import type { SiteChatModel } from "./config.js";
import { byId, showError } from "./dom.js";
import { bytes } from "./format.js";
import { drawGraph } from "./graph.js";
import type { SettingsPanel } from "./settings.js";
import { describe, type Tasks } from "./tasks.js";

export class AskPanel {
  readonly #form = byId("ask-form", HTMLFormElement);
  readonly #question = byId("question", HTMLInputElement);
  readonly #button = byId("ask-button", HTMLButtonElement);
  readonly #local = byId("ask-local", HTMLButtonElement);
  readonly #error = byId("ask-error", HTMLParagraphElement);
  readonly #graphSection = byId("graph-section", HTMLElement);
  readonly #graph = byId("graph", HTMLDivElement);
  readonly #graphCaption = byId("graph-caption", HTMLElement);
  readonly #answer = new AnswerView();
  /** The latest question (or bundle): what an earlier, slower answer must not overwrite. */
  #generation = 0;
  /** The chat model loading or loaded in the worker, once "Answer locally" was first used. */
  #chatModel: Promise<boolean> | null = null;

  constructor(
    private readonly rag: Edgerag,
    private readonly settings: SettingsPanel,
    private readonly tasks: Tasks,
    private readonly chatModel: SiteChatModel | null,
  ) {
    this.#form.addEventListener("submit", (event) => {
      event.preventDefault();
      const question = this.#question.value.trim();
      if (question) void this.ask(question);
    });
    if (chatModel) {
      this.#local.hidden = false;
      byId("ask-local-note", HTMLParagraphElement).hidden = false;
      byId("ask-local-model", HTMLSpanElement).textContent = `${chatModel.name}, ${bytes(chatModel.bytes)}`;
      this.#local.addEventListener("click", () => {
        const question = this.#question.value.trim();
        if (!this.#form.reportValidity() || !question) return;
        void this.ask(question, true);
      });
    }
  }

  /** A bundle was loaded: questions can be asked, and answers from another bundle go. */
  onBundle(): void {
    this.#generation += 1;
    this.#question.disabled = false;
    this.#button.disabled = false;
    this.#local.disabled = false;
    this.#answer.clear();
    this.#graphSection.hidden = true;
    showError(this.#error, null);
  }

  /**
   * Asks `question`, answered by the site's chat model in the tab when `local`; a question
   * asked meanwhile takes over the view (this one's output is dropped).
   */
  async ask(question: string, local = false): Promise<void> {
    const generation = ++this.#generation;
    const current = () => generation === this.#generation;
    showError(this.#error, null);
    this.#graphSection.hidden = true;
    if (local && !(await this.#loadChatModel())) {
      if (!current()) return;
      this.#answer.clear();
      showError(this.#error, `Could not answer locally: ${this.chatModel?.name ?? "the model"} did not load.`);
      return;
    }
    if (!current()) return;
    this.#answer.start();
    try {
      const llm = local ? null : this.settings.llm();
      const writer = local ? `${this.chatModel?.name ?? "The model"}, in this tab,` : "The LLM";
      const answer = await this.rag.ask(question, {
        explain: true,
        ...(local ? { local } : llm ? { llm } : {}),
        onToken: (text) => {
          if (current()) this.#answer.append(text, writer);
        },
      });
      if (!current()) return;
      this.#answer.show(answer);
      const cited = [...new Set(answer.citations.map((citation) => citation.chunk_id))];
      if (cited.length > 0) {
        const markers = new Map(answer.sources.map((source) => [source.chunk_id, source.marker]));
        const view = await this.rag.graph(cited);
        if (!current()) return;
        this.#graphCaption.textContent = drawGraph(this.#graph, view, markers);
        this.#graphSection.hidden = false;
      }
    } catch (error) {
      if (!current()) return;
      this.#answer.clear();
      showError(this.#error, `Could not answer: ${describe(error)}`);
    }
  }

  /** Loads the site's chat model into the worker, once (again after a failure). */
  #loadChatModel(): Promise<boolean> {
    const model = this.chatModel;
    if (!model) return Promise.resolve(false);
    this.#chatModel ??= this.tasks
      .run(`Loading ${model.name}…`, `Could not load ${model.name}`, () =>
        this.rag.loadChatModel({
          url: model.url,
          sha256: model.sha256,
          bytes: model.bytes,
          name: model.name,
          onProgress: (progress) => this.tasks.progress.report(model.name, progress),
        }),
      )
      .then((info) => {
        if (!info) {
          this.#chatModel = null;
          return false;
        }
        this.tasks.progress.finish(`Loaded ${info.name}: it writes answers in this tab.`);
        return true;
      });
    return this.#chatModel;
  }
}
