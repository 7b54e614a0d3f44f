export {
  Edgerag,
  type AskCallOptions,
  type BuildCallOptions,
  type BuildInput,
  type BundleInput,
  type CreateOptions,
  type LoadBundleOptions,
  type LoadModelOptions,
  type OnProgress,
} from "./client.js";
export { EdgeragError, type ErrorCode } from "./errors.js";
export { DEFAULT_MODEL_FILES, DEFAULT_MODEL_URL, MODEL_FILES, type FileSpec, type ModelFileName } from "./model.js";
export type { BuildResult, BundleInfo, ModelInfo, Progress } from "./protocol.js";
export type {
  Answer,
  AskOptions,
  BuildOptions,
  BuildProgress,
  BuildSummary,
  Counts,
  DocKind,
  Explanation,
  Filter,
  GraphView,
  Hit,
  Inspection,
  LlmOptions,
  Manifest,
  Mode,
  SearchOptions,
  SearchResults,
  Signal,
  Source,
} from "./types.js";
