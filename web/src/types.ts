// The shapes of what the core takes and returns, as JavaScript sees them: options in camelCase
// (unknown fields are refused), results in the snake_case of the CLI's `--json` output. The
// wasm module passes them as plain objects (its generated types say `any`); these are their
// one TypeScript description, following edgerag-core's serde types.

export type Mode = "bm25" | "dense" | "graph" | "hybrid";
export type DocKind = "text" | "markdown" | "html" | "pdf";

/** Restrictions applied before ranking. */
export interface Filter {
  /** Documents by source (exact, or a path suffix such as `normans.md`) or id. */
  documents?: string[];
  /** Only chunks under a heading containing this text (case-insensitive). */
  section?: string;
  /** Only chunks starting on a page in this inclusive range (PDF). */
  pages?: [number, number];
  kinds?: DocKind[];
}

export interface SearchOptions {
  /** Results, 1 to 1000 (default 10). */
  k?: number;
  /** Default `hybrid`. */
  mode?: Mode;
  /** Adds per-signal scores and ranks, BM25 terms and matched keywords to each hit. */
  explain?: boolean;
  filter?: Filter;
  denseWeight?: number;
  graphWeight?: number;
  bridgeWeight?: number;
  /** Dense partitions probed in a bundle read by range (format 4; default: those near the query, 4 to 32). */
  probe?: number;
  /** Bytes of postings BM25 may read in a bundle read by range (format 4; default 262144). */
  bm25Budget?: number;
}

/** An OpenAI-compatible chat-completions API. */
export interface LlmOptions {
  /** Default Groq's, `https://api.groq.com/openai/v1`. */
  baseUrl?: string;
  apiKey?: string;
  /** Tried in order. */
  models?: string[];
  temperature?: number;
  maxTokens?: number;
  timeoutMs?: number;
  retries?: number;
}

export interface AskOptions {
  /** Sources (default 5). */
  k?: number;
  mode?: Mode;
  filter?: Filter;
  /** Answer with the sources' best sentences even when `llm` is given. */
  extractive?: boolean;
  /** Sentences of an extractive answer (default 3). */
  sentences?: number;
  /** Below this relevance the answer is a refusal (default 0.3). */
  minRelevance?: number;
  contextTokens?: number;
  /** Let the LLM choose the keyword graph's starting points. */
  llmKeywords?: boolean;
  /** Adds to each source why it was retrieved (as `explain` does for search hits). */
  explain?: boolean;
  /** Without it, answers are extractive. */
  llm?: LlmOptions;
}

/** An OpenAI-style chat request to a local chat model (`Edgerag.generate`). */
export interface GenerateRequest {
  messages: { role: "system" | "user" | "assistant"; content: string }[];
  /** Most tokens to generate (default 512). */
  max_tokens?: number;
  /** 0 (the default) always takes the likeliest token. */
  temperature?: number;
  top_p?: number;
  seed?: number;
  stop?: string | string[];
}

/** A local chat model's reply. */
export interface Generation {
  text: string;
  prompt_tokens: number;
  completion_tokens: number;
  /** `length` when `max_tokens` (or the context) ended it. */
  finish: "stop" | "length";
}

export interface BuildOptions {
  /** The corpus name (default "corpus"). */
  name?: string;
  /** Unix seconds (default now). */
  created?: number;
  /** Embed the chunks (default: when the model is loaded). */
  embed?: boolean;
  chunkTarget?: number;
  chunkMax?: number;
  chunkMin?: number;
  chunkOverlap?: number;
  maxDf?: number;
  /** Keywords kept whatever their document frequency. */
  keep?: string[];
  keywordSimilarity?: number;
  vectors?: "int8" | "f32";
  /** The bundle's format: 4 (default), read by range, or 3, read whole by older readers. */
  format?: 3 | 4;
}

export interface BuildProgress {
  stage: "load" | "embed" | "dense" | "keywords" | "graph" | "keyword_vectors" | "bm25";
  done: number;
  total: number;
  /** The file being read (stage `load`). */
  file?: string;
}

export interface Counts {
  documents: number;
  chunks: number;
  duplicates_removed: number;
  keywords: number;
  edges: number;
  terms: number;
  vectors: number;
}

export interface BuildSummary extends Counts {
  /** The bundle's size. */
  bytes: number;
  /** Chunk vectors taken from an earlier build (0 in the browser, which always embeds). */
  reused_vectors: number;
  /** Files that could not be loaded, skipped: the document's name and why. */
  failed: { source: string; error: string }[];
}

export interface Signal {
  score: number;
  rank: number;
}

export interface Explanation {
  bm25: Signal | null;
  dense: Signal | null;
  graph: Signal | null;
  graph_hops: number | null;
  bridge: Signal | null;
  terms: { term: string; score: number }[];
  keywords: string[];
}

/** A retrieved chunk: what search results and answer sources have in common. */
export interface Passage {
  chunk_id: string;
  document: string;
  title: string;
  page: number | null;
  section: string[];
  score: number;
  text: string;
  /** Why it was retrieved, when asked with `explain: true`. */
  explain?: Explanation;
}

export interface Hit extends Passage {
  rank: number;
}

export interface SearchResults {
  query: string;
  mode: Mode;
  results: Hit[];
}

/** A search result given to the answer as source `S<n>`. */
export interface Source extends Hit {
  marker: string;
}

export interface Answer {
  answer: string;
  mode: "llm" | "extractive" | "refused";
  model?: string;
  citations: { marker: string; chunk_id: string; document: string; page: number | null }[];
  sources: Source[];
  sentences: { text: string; cites: string[]; support: number }[];
  warnings: { kind: string; message: string }[];
  relevance: number;
  confidence: number;
  keywords?: string[];
}

export interface Manifest {
  format_version: number;
  corpus: string;
  edgerag_version: string;
  created: number;
  embedding: {
    model: string;
    dimension: number;
    pooling: "mean" | "cls";
    query_prefix: string;
    document_prefix: string;
    max_tokens: number;
  } | null;
  /** Chunking, keyword, graph, BM25 and dense parameters of the build. */
  params: Record<string, unknown>;
  counts: Counts;
}

/** What `inspect()` shows: the manifest and the documents, and for a bundle read whole the
 * size of each part, for a bundle of format 4 its sections. */
export type Inspection = WholeInspection | PagedInspection;

/** One document of a bundle: its source, title, format, pages (PDF), headings and chunks. */
export interface DocumentSummary {
  source: string;
  title: string;
  kind: DocKind;
  pages: number;
  sections: number;
  chunks: number;
}

export interface WholeInspection {
  manifest: Manifest;
  part_bytes: { manifest: number; documents: number; chunks: number; graph: number; bm25: number; dense: number };
  documents: DocumentSummary[];
}

export interface PagedInspection {
  manifest: Manifest;
  /** Each section in file order: its name, bytes of each slot (proof included), slot count. */
  sections: { name: string; slot: number; slots: number }[];
  /** From the bundle's document table; absent in bundles written before it existed. */
  documents?: DocumentSummary[];
}

export interface GraphView {
  nodes: {
    id: string;
    kind: "chunk" | "keyword";
    label: string;
    chunk_id?: string;
    keyword_kind?: "name" | "acronym" | "phrase" | "date" | "number";
    weight: number;
    /** One of the chunks the view was drawn around. */
    seed: boolean;
  }[];
  edges: { source: string; target: string; kind: "appears_in" | "similar_to"; weight: number }[];
}
