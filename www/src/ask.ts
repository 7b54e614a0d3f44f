// The question form: an answer (streamed when an LLM writes it), its explained sources and
// the keyword graph around it.
import type { Edgerag } from "@edgerag/web";
import { AnswerView } from "./answer.js";
import { byId, showError } from "./dom.js";
import { drawGraph } from "./graph.js";
import type { SettingsPanel } from "./settings.js";
import { describe } from "./tasks.js";

export class AskPanel {
  readonly #form = byId("ask-form", HTMLFormElement);
  readonly #question = byId("question", HTMLInputElement);
  readonly #button = byId("ask-button", HTMLButtonElement);
  readonly #error = byId("ask-error", HTMLParagraphElement);
  readonly #graphSection = byId("graph-section", HTMLElement);
  readonly #graph = byId("graph", HTMLDivElement);
  readonly #graphCaption = byId("graph-caption", HTMLElement);
  readonly #answer = new AnswerView();
  /** The latest question (or bundle): what an earlier, slower answer must not overwrite. */
  #generation = 0;

  constructor(
    private readonly rag: Edgerag,
    private readonly settings: SettingsPanel,
  ) {
    this.#form.addEventListener("submit", (event) => {
      event.preventDefault();
      const question = this.#question.value.trim();
      if (question) void this.ask(question);
    });
  }

  /** A bundle was loaded: questions can be asked, and answers from another bundle go. */
  onBundle(): void {
    this.#generation += 1;
    this.#question.disabled = false;
    this.#button.disabled = false;
    this.#answer.clear();
    this.#graphSection.hidden = true;
    showError(this.#error, null);
  }

  /** Asks `question`; a question asked meanwhile takes over the view (this one's output is dropped). */
  async ask(question: string): Promise<void> {
    const generation = ++this.#generation;
    const current = () => generation === this.#generation;
    showError(this.#error, null);
    this.#graphSection.hidden = true;
    this.#answer.start();
    try {
      const llm = this.settings.llm();
      const answer = await this.rag.ask(question, {
        explain: true,
        ...(llm ? { llm } : {}),
        onToken: (text) => {
          if (current()) this.#answer.append(text);
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
}
