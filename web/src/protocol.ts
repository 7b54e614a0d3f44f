// The messages between the page (client.ts) and the Web Worker that owns the wasm (worker.ts).
import type { ErrorCode } from "./errors.js";
import type { ChatModelSpec, FileSpec, ModelFileName } from "./model.js";
import type {
  Answer,
  AskOptions,
  BuildOptions,
  BuildProgress,
  BuildSummary,
  GenerateRequest,
  Generation,
  GraphView,
  Inspection,
  Manifest,
  SearchOptions,
  SearchResults,
} from "./types.js";

/**
 * What a long call reports through `onProgress`:
 * - `download`: bytes of the call's files so far (`loaded`) out of `total` (null while
 *   unknown), `file` being the URL in flight; `cached` when they came from the cache, with no
 *   transfer;
 * - `open`: the bytes are being turned into a bundle or a model (a second or so);
 * - `build`: a stage of an in-browser build (`done` of `total` items, `file` while loading).
 */
export type Progress =
  | { phase: "download"; file: string; loaded: number; total: number | null; cached: boolean }
  | { phase: "open"; what: "bundle" | "model" | "chat model" }
  | ({ phase: "build" } & BuildProgress);

/** A bundle as the worker loads it: downloaded (and cached), or bytes the page holds. */
export type BundleSource = ({ url: string } | { blob: Blob }) & { sha256?: string };

/** The model as the worker loads it: every file of it from `baseUrl`, under `id` (by default
 * the core's, all-MiniLM-L6-v2's). */
export interface ModelSource {
  baseUrl: string;
  files: Record<ModelFileName, FileSpec>;
  id?: string;
}

/** The loaded bundle; `denseReady` once a model of its vectors is loaded too. */
export interface BundleInfo {
  manifest: Manifest;
  denseReady: boolean;
}

/** The loaded model; `denseReady` when the loaded bundle can use it for dense retrieval. */
export interface ModelInfo {
  id: string;
  dimension: number;
  denseReady: boolean;
}

/** The loaded chat model. */
export interface ChatModelInfo {
  name: string;
  /** Longest prompt plus reply, in tokens. */
  contextTokens: number;
}

/** An in-browser build's output: the bundle's bytes and what went into it. */
export interface BuildResult {
  bytes: Uint8Array<ArrayBuffer>;
  summary: BuildSummary;
}

/** Every operation the worker performs: its arguments and its result. */
export interface Operations {
  init: { args: { wasmUrl?: string }; result: { version: string } };
  loadBundle: { args: { source: BundleSource }; result: BundleInfo };
  loadModel: { args: { source: ModelSource }; result: ModelInfo };
  loadChatModel: { args: { source: ChatModelSpec }; result: ChatModelInfo };
  generate: { args: { request: GenerateRequest }; result: Generation };
  search: { args: { query: string; options: SearchOptions }; result: SearchResults };
  /** `local`: written by the loaded chat model. */
  ask: { args: { question: string; options: AskOptions; local: boolean }; result: Answer };
  inspect: { args: Record<string, never>; result: Inspection };
  graph: { args: { chunkIds: string[]; limit?: number }; result: GraphView };
  build: { args: { files: File[]; options: BuildOptions }; result: BuildResult };
  /** Aborts the wasm instance with a real panic, for tests of crash recovery: the client never
   * sends it; a test posts it from inside the worker. */
  crashForTests: { args: Record<string, never>; result: never };
}

export type Operation = keyof Operations;
export type Args<O extends Operation> = Operations[O]["args"];
export type Result<O extends Operation> = Operations[O]["result"];

/** Page → worker. */
export type Request = { [O in Operation]: { id: number; op: O; args: Args<O> } }[Operation];

/** Worker → page: events of a call in flight, then its outcome. */
export type Reply =
  | { id: number; type: "progress"; progress: Progress }
  | { id: number; type: "token"; text: string }
  | { id: number; type: "done"; value: unknown }
  | { id: number; type: "error"; code: ErrorCode; message: string };
