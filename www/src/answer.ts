// The answer (streamed, then final with linked citations) and its sources, each with the
// retrieval explanation and the cited sentences highlighted in the chunk.
import type { Answer, Source } from "@edgerag/web";
import { byId, h } from "./dom.js";
import { place, score } from "./format.js";

/** `[S1]` or `[S1, S2]`: the markers inside. */
const CITATION = /\[(S\d+(?:\s*,\s*S\d+)*)\]/g;
/** A citation with the space before it, as the core puts it inside a sentence: "… text [S1]." */
const SPACED_CITATION = /\s*\[S\d+(?:\s*,\s*S\d+)*\]/g;

const MODES: Record<Answer["mode"], string> = {
  llm: "Written by the LLM from the sources",
  extractive: "Extractive: the sources' best sentences",
  refused: "Not answered: the sources do not contain the answer",
};

export class AnswerView {
  readonly #article = byId("answer", HTMLElement);
  readonly #meta = byId("answer-meta", HTMLParagraphElement);
  readonly #text = byId("answer-text", HTMLDivElement);
  readonly #warnings = byId("answer-warnings", HTMLUListElement);
  readonly #sourcesSection = byId("sources-section", HTMLElement);
  readonly #sources = byId("sources", HTMLOListElement);

  /** Empties the view for a new question; the answer region is busy until `show`. */
  start(): void {
    this.#article.hidden = false;
    this.#article.setAttribute("aria-busy", "true");
    this.#meta.textContent = "Searching the sources…";
    this.#text.replaceChildren();
    this.#warnings.replaceChildren();
    this.#sourcesSection.hidden = true;
    this.#sources.replaceChildren();
  }

  /** Appends a piece of the reply as it streams in, written by `writer`. */
  append(text: string, writer = "The LLM"): void {
    this.#meta.textContent = `${writer} is writing…`;
    this.#text.append(text);
  }

  /** The final answer, its warnings and its sources (explained when asked with `explain`). */
  show(answer: Answer): void {
    const model = answer.mode === "llm" && answer.model ? ` (${answer.model})` : "";
    const confidence = answer.mode === "refused" ? "" : ` · confidence ${score(answer.confidence)}`;
    this.#meta.textContent = `${MODES[answer.mode]}${model}${confidence}`;
    const sources = new Map(answer.sources.map((source) => [source.marker, source]));
    this.#text.replaceChildren(h("p", {}, ...linkCitations(answer.answer, sources)));
    this.#warnings.replaceChildren(...answer.warnings.map((warning) => h("li", {}, warning.message)));
    this.#sources.replaceChildren(...answer.sources.map((source) => sourceItem(source, citedSentences(answer, source.marker))));
    this.#sourcesSection.hidden = answer.sources.length === 0;
    this.#article.setAttribute("aria-busy", "false");
  }

  /** Hides the answer and its sources (a failed question, another bundle). */
  clear(): void {
    this.#article.hidden = true;
    this.#article.setAttribute("aria-busy", "false");
    this.#sourcesSection.hidden = true;
  }
}

/** The answer's text with each citation marker a link to its source. */
function linkCitations(text: string, sources: ReadonlyMap<string, Source>): (string | Node)[] {
  const parts: (string | Node)[] = [];
  let last = 0;
  for (const match of text.matchAll(CITATION)) {
    parts.push(text.slice(last, match.index));
    const markers = (match[1] ?? "").split(/\s*,\s*/);
    parts.push("[");
    markers.forEach((marker, i) => {
      if (i > 0) parts.push(", ");
      const source = sources.get(marker);
      parts.push(
        source
          ? h("a", { href: `#source-${marker}`, class: "citation", title: `${place(source.title, source.section, source.page)} — ${source.document}`, "data-document": source.document }, marker)
          : marker,
      );
    });
    parts.push("]");
    last = match.index + match[0].length;
  }
  parts.push(text.slice(last));
  return parts;
}

/** The answer's sentences that cite `marker`, without their citation markers. */
function citedSentences(answer: Answer, marker: string): string[] {
  return answer.sentences
    .filter((sentence) => sentence.cites.includes(marker))
    .map((sentence) => sentence.text.replace(SPACED_CITATION, "").trim())
    .filter((text) => text.length > 0);
}

function sourceItem(source: Source, cited: readonly string[]): HTMLLIElement {
  return h(
    "li",
    { id: `source-${source.marker}`, class: "source", tabindex: "-1" },
    h(
      "div",
      { class: "source-head" },
      h("span", { class: "marker" }, source.marker),
      h("h3", {}, place(source.title, source.section, source.page)),
      h("span", { class: "document" }, source.document),
    ),
    explanation(source),
    h("blockquote", { class: "chunk" }, ...highlight(source.text, cited)),
  );
}

/** The retrieval explanation: score, per-signal scores and ranks, matched keywords and terms. */
function explanation(source: Source): HTMLElement {
  const rows: (string | Node)[] = [`score ${score(source.score)}`];
  const { explain } = source;
  if (explain) {
    for (const signal of ["bm25", "dense", "graph", "bridge"] as const) {
      const value = explain[signal];
      if (value) rows.push(` · ${signal} ${score(value.score)} (#${value.rank})`);
    }
  }
  const details = h("div", { class: "explain" }, h("p", { class: "scores" }, ...rows));
  if (explain && explain.keywords.length > 0) {
    details.append(h("p", { class: "chips" }, "Keywords: ", ...explain.keywords.map((keyword) => h("span", { class: "chip" }, keyword))));
  }
  if (explain && explain.terms.length > 0) {
    const terms = explain.terms.map((term) => `${term.term} ${score(term.score)}`).join(", ");
    details.append(h("p", { class: "terms" }, `Query terms (BM25): ${terms}`));
  }
  return details;
}

/** The chunk's text with the cited sentences marked where they appear verbatim. */
function highlight(text: string, sentences: readonly string[]): (string | Node)[] {
  const ranges = sentences
    .map((sentence) => [text.indexOf(sentence), sentence.length] as const)
    .filter(([start]) => start >= 0)
    .sort((a, b) => a[0] - b[0]);
  const parts: (string | Node)[] = [];
  let last = 0;
  for (const [start, length] of ranges) {
    if (start < last) continue; // overlaps one already marked
    parts.push(text.slice(last, start), h("mark", {}, text.slice(start, start + length)));
    last = start + length;
  }
  parts.push(text.slice(last));
  return parts;
}
