// The page-side API: an Edgerag drives one Web Worker that owns the wasm, and replaces it
// (restoring the loaded bundle and models) after a crash.
import { Connection, type Hooks } from "./connection.js";
import { EdgeragError, messageOf } from "./errors.js";
import { DEFAULT_MODEL_FILES, DEFAULT_MODEL_URL, type ChatModelSpec, type FileSpec, type ModelFileName } from "./model.js";
import type {
  Args,
  BuildResult,
  BundleInfo,
  BundleSource,
  ChatModelInfo,
  ModelInfo,
  ModelSource,
  Operation,
  Progress,
  Result,
} from "./protocol.js";
import type {
  Answer,
  AskOptions,
  BuildOptions,
  GenerateRequest,
  Generation,
  GraphView,
  Inspection,
  SearchOptions,
  SearchResults,
} from "./types.js";

export type OnProgress = (progress: Progress) => void;

export interface CreateOptions {
  /** The URL of `edgerag_wasm_bg.wasm`; by default the one shipped next to the worker. */
  wasmUrl?: string | URL;
  /** Progress of work done without being asked: restoring the bundle and model after a crash. */
  onProgress?: OnProgress;
}

/** A bundle to load: a URL (relative to the page), a `File`/`Blob`, or its bytes (copied). */
export type BundleInput = string | URL | Blob | ArrayBuffer | ArrayBufferView;

export interface LoadBundleOptions {
  /** The bundle's SHA-256 (hex): checked, and for a URL the key that lets the cache answer. */
  sha256?: string;
  onProgress?: OnProgress;
}

export interface LoadModelOptions {
  /** Where the model's files are (`config.json`, `tokenizer.json`, `model.safetensors`);
   * by default the Hugging Face Hub's all-MiniLM-L6-v2. Relative to the page. */
  baseUrl?: string | URL;
  /** SHA-256 and size per file, replacing the pinned ones of all-MiniLM-L6-v2 (`{}` for a
   * file: not verified, cached by ETag). */
  files?: Partial<Record<ModelFileName, FileSpec>>;
  /** The model's id, which bundles embedded with it record and are checked against (default
   * `sentence-transformers/all-MiniLM-L6-v2`). */
  id?: string;
  onProgress?: OnProgress;
}

export interface AskCallOptions extends AskOptions {
  /** Write the answer with the chat model loaded by {@link Edgerag.loadChatModel}, in the
   * worker, instead of `llm` (`contextTokens` then defaults to 1024). */
  local?: boolean;
  /** Receives the LLM's reply as it streams, piece by piece (not for extractive answers). */
  onToken?: (text: string) => void;
}

export interface LoadChatModelOptions extends ChatModelSpec {
  onProgress?: OnProgress;
}

export interface GenerateCallOptions {
  /** Receives the reply as it is generated, piece by piece. */
  onToken?: (text: string) => void;
}

export interface BuildCallOptions extends BuildOptions {
  onProgress?: OnProgress;
}

/** A file to build from: a `File`, or a name (its extension gives the format) and bytes. */
export type BuildInput = File | { name: string; bytes: ArrayBuffer | ArrayBufferView };

/**
 * edgerag in the page: a corpus bundle searched and asked in a Web Worker, so the page never
 * freezes. Every method returns a promise and rejects with an {@link EdgeragError}.
 */
export class Edgerag {
  readonly #wasmUrl: string | undefined;
  readonly #onProgress: OnProgress | undefined;
  #connection: Connection | null = null;
  #starting: Promise<Connection> | null = null;
  #closed = false;
  #version = "";
  /** What a fresh worker must load again after a crash. */
  #bundle: BundleSource | null = null;
  #model: ModelSource | null = null;
  #chatModel: ChatModelSpec | null = null;

  private constructor(options: CreateOptions) {
    this.#wasmUrl = options.wasmUrl === undefined ? undefined : resolve(options.wasmUrl);
    this.#onProgress = options.onProgress;
  }

  /** Starts the worker and the WebAssembly module. */
  static async create(options: CreateOptions = {}): Promise<Edgerag> {
    const rag = new Edgerag(options);
    await rag.#connect();
    return rag;
  }

  /** The edgerag version of the WebAssembly module. */
  get version(): string {
    return this.#version;
  }

  /** Loads a bundle, replacing the loaded one. URLs are downloaded with byte progress and cached. */
  async loadBundle(input: BundleInput, options: LoadBundleOptions = {}): Promise<BundleInfo> {
    const source: BundleSource = { ...bundleSource(input), ...(options.sha256 === undefined ? {} : { sha256: options.sha256 }) };
    const info = await this.#run("loadBundle", { source }, { onProgress: options.onProgress });
    this.#bundle = source;
    return info;
  }

  /** Loads the embedding model (for dense and hybrid retrieval, and embedding in builds). */
  async loadModel(options: LoadModelOptions = {}): Promise<ModelInfo> {
    const source: ModelSource = {
      baseUrl: withSlash(resolve(options.baseUrl ?? DEFAULT_MODEL_URL)),
      files: { ...DEFAULT_MODEL_FILES, ...options.files },
      ...(options.id === undefined ? {} : { id: options.id }),
    };
    const info = await this.#run("loadModel", { source }, { onProgress: options.onProgress });
    this.#model = source;
    return info;
  }

  /**
   * Loads a GGUF chat model (a llama-architecture one, e.g. SmolLM2-135M-Instruct) to write
   * answers in the tab with `ask(question, { local: true })`: downloaded with byte progress,
   * verified and cached like the other files.
   */
  async loadChatModel(options: LoadChatModelOptions): Promise<ChatModelInfo> {
    const { onProgress, ...spec } = options;
    const source: ChatModelSpec = { ...spec, url: resolve(spec.url) };
    try {
      const info = await this.#run("loadChatModel", { source }, { onProgress });
      this.#chatModel = source;
      return info;
    } catch (error) {
      // The worker may have freed its model (it frees one before loading the next).
      this.#chatModel = null;
      throw error;
    }
  }

  /** A reply of the loaded chat model to an OpenAI-style chat request. */
  generate(request: GenerateRequest, options: GenerateCallOptions = {}): Promise<Generation> {
    return this.#run("generate", { request }, { onToken: options.onToken });
  }

  search(query: string, options: SearchOptions = {}): Promise<SearchResults> {
    return this.#run("search", { query, options });
  }

  /** A cited answer: from the local chat model with `local`, the LLM given in `options.llm`,
   * else extractive. */
  ask(question: string, options: AskCallOptions = {}): Promise<Answer> {
    const { onToken, local = false, ...askOptions } = options;
    return this.#run("ask", { question, options: askOptions, local }, { onToken });
  }

  /** The loaded bundle's manifest, part sizes and documents. */
  inspect(): Promise<Inspection> {
    return this.#run("inspect", {});
  }

  /** The keyword graph around chunks (e.g. an answer's cited chunks), for drawing. */
  graph(chunkIds: string[], limit?: number): Promise<GraphView> {
    return this.#run("graph", limit === undefined ? { chunkIds } : { chunkIds, limit });
  }

  /** Builds a bundle from files, embedding the chunks when a model is loaded. */
  build(files: BuildInput[], options: BuildCallOptions = {}): Promise<BuildResult> {
    const { onProgress, ...buildOptions } = options;
    return this.#run("build", { files: files.map(toFile), options: buildOptions }, { onProgress });
  }

  /** Ends the worker; calls in flight and later calls reject with code `closed`. */
  close(): void {
    this.#closed = true;
    this.#connection?.terminate("closed", "the Edgerag was closed");
    this.#connection = null;
  }

  async #run<O extends Operation>(op: O, args: Args<O>, hooks: Hooks = {}): Promise<Result<O>> {
    const connection = await this.#connect();
    return connection.call(op, args, hooks);
  }

  /** The live worker, or a new one with the bundle and model restored (after a crash). */
  #connect(): Promise<Connection> {
    if (this.#closed) return Promise.reject(closedError());
    if (this.#starting) return this.#starting;
    if (this.#connection && !this.#connection.dead) return Promise.resolve(this.#connection);
    this.#starting = this.#start().finally(() => {
      this.#starting = null;
    });
    return this.#starting;
  }

  /**
   * A new worker with the bundle and model restored. It is the connection from the start, so
   * close() meanwhile terminates it: what the start awaits then rejects with `closed`, and so
   * does the first call on a connection closed after the last reply.
   */
  async #start(): Promise<Connection> {
    const worker = new Worker(new URL("./worker.js", import.meta.url), { type: "module", name: "edgerag" });
    const connection = new Connection(worker);
    this.#connection = connection;
    try {
      const args = this.#wasmUrl === undefined ? {} : { wasmUrl: this.#wasmUrl };
      this.#version = (await connection.call("init", args)).version;
    } catch (error) {
      if (this.#closed) throw closedError();
      connection.terminate("init", messageOf(error));
      throw new EdgeragError("init", `edgerag could not start: ${messageOf(error)}`);
    }
    try {
      const hooks = { onProgress: this.#onProgress };
      if (this.#model) await connection.call("loadModel", { source: this.#model }, hooks);
      if (this.#bundle) await connection.call("loadBundle", { source: this.#bundle }, hooks);
      if (this.#chatModel) await connection.call("loadChatModel", { source: this.#chatModel }, hooks);
    } catch (error) {
      connection.terminate("crashed", messageOf(error));
      throw error;
    }
    return connection;
  }
}

function closedError(): EdgeragError {
  return new EdgeragError("closed", "the Edgerag was closed");
}

function resolve(url: string | URL): string {
  return new URL(url, document.baseURI).href;
}

function withSlash(url: string): string {
  return url.endsWith("/") ? url : `${url}/`;
}

function bundleSource(input: BundleInput): BundleSource {
  if (typeof input === "string" || input instanceof URL) return { url: resolve(input) };
  if (input instanceof Blob) return { blob: input };
  return { blob: new Blob([copy(input)]) };
}

function toFile(input: BuildInput): File {
  return input instanceof File ? input : new File([copy(input.bytes)], input.name);
}

/** The bytes of a buffer or a view of one, as a Uint8Array over an ArrayBuffer. */
function copy(bytes: ArrayBuffer | ArrayBufferView): Uint8Array<ArrayBuffer> {
  const view = bytes instanceof ArrayBuffer ? new Uint8Array(bytes) : new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return new Uint8Array(view);
}
