/**
 * Why a call failed:
 * - `network`: a download failed (no connection, an HTTP error status);
 * - `integrity`: downloaded bytes do not have the expected SHA-256 (nothing was cached);
 * - `bundle`: the bytes are not a readable bundle, or no bundle is loaded;
 * - `model`: the model files (or a chat model's GGUF file) do not make a model;
 * - `build`: an in-browser build failed;
 * - `search`: a search, inspection or graph query failed;
 * - `llm`: an answer could not be produced, or a local chat model could not generate;
 * - `init`: the Web Worker or the WebAssembly module could not start;
 * - `crashed`: the WebAssembly instance aborted (a panic in the core); the next call starts a
 *   fresh one and restores the loaded bundle and model;
 * - `closed`: {@link Edgerag.close} was called.
 */
export type ErrorCode =
  | "network"
  | "integrity"
  | "bundle"
  | "model"
  | "build"
  | "search"
  | "llm"
  | "init"
  | "crashed"
  | "closed";

/** The error every method of {@link Edgerag} rejects with; `message` is the core's message. */
export class EdgeragError extends Error {
  override readonly name = "EdgeragError";

  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** The message of anything thrown. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
