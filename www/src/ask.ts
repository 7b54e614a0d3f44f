// The question form: an answer (streamed when an LLM writes it), its explained sources and
// the keyword graph around it.
import type { Edgerag } from "@edgerag/web";
import { AnswerView } from "./answer.js";
import { byId, showError } from "./dom.js";
import { drawGraph } from "./graph.js";
import type { SettingsPanel } from "./settings.js";
import { describe } from "./tasks.js";

/** Sources explained (searched with explain: true) beside the answer's own. */
const EXPLAINED = 10;

export class AskPanel {
  readonly #form = byId("ask-form", HTMLFormElement);
  readonly #question = byId("question", HTMLInputElement);
  readonly #button = byId("ask-button", HTMLButtonElement);
  readonly #error = byId("ask-error", HTMLParagraphElement);
  readonly #graphSection = byId("graph-section", HTMLElement);
  readonly #graph = byId("graph", HTMLDivElement);
  readonly #graphCaption = byId("graph-caption", HTMLElement);
  readonly #answer = new AnswerView();

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
    this.#question.disabled = false;
    this.#button.disabled = false;
    this.#answer.clear();
    this.#graphSection.hidden = true;
    showError(this.#error, null);
  }

  async ask(question: string): Promise<void> {
    this.#button.disabled = true;
    showError(this.#error, null);
    this.#graphSection.hidden = true;
    this.#answer.start();
    try {
      const explained = this.rag.search(question, { k: EXPLAINED, explain: true });
      const llm = this.settings.llm();
      const answer = await this.rag.ask(question, {
        ...(llm ? { llm } : {}),
        onToken: (text) => this.#answer.append(text),
      });
      this.#answer.show(answer, (await explained).results);
      const cited = [...new Set(answer.citations.map((citation) => citation.chunk_id))];
      if (cited.length > 0) {
        const markers = new Map(answer.sources.map((source) => [source.chunk_id, source.marker]));
        const view = await this.rag.graph(cited);
        this.#graphCaption.textContent = drawGraph(this.#graph, view, markers);
        this.#graphSection.hidden = false;
      }
    } catch (error) {
      this.#answer.clear();
      showError(this.#error, `Could not answer: ${describe(error)}`);
    } finally {
      this.#button.disabled = false;
    }
  }
}
