// The module Web Worker that owns the WebAssembly instance, the loaded bundle and model, and
// does every download (so big buffers never cross to the page). Started by client.ts.
import init, { build, ChatModel, crashForTests, Edgerag as Core, Model, version } from "./wasm/edgerag_wasm.js";
import type { Answer, AskOptions, BuildProgress, BuildSummary, Generation, Manifest } from "./types.js";
import { EdgeragError, messageOf, type ErrorCode } from "./errors.js";
import { fetchBytes, verify } from "./fetcher.js";
import { MODEL_FILES, type FileSpec, type ModelFileName } from "./model.js";
import type { Args, BundleSource, ModelSource, Operation, Progress, Reply, Request, Result } from "./protocol.js";

/** The worker's global scope, as far as this file uses it (the DOM lib has no worker types). */
interface WorkerScope {
  postMessage(message: Reply, transfer?: Transferable[]): void;
  onmessage: ((event: MessageEvent<Request>) => void) | null;
}
const scope = globalThis as unknown as WorkerScope;

/** What an operation can send back while it runs. */
interface Call {
  progress(progress: Progress): void;
  token(text: string): void;
  /** Moves a buffer to the page with the result instead of copying it. */
  transfer(buffer: ArrayBuffer): void;
}

let bundle: Core | null = null;
let model: Model | null = null;
let chat: ChatModel | null = null;
/** Set when the instance aborted (a Rust panic): it must not run anything again. */
let crashed = false;
/**
 * The tail of the queue that runs every call but `ask` in the order it came (loads, builds,
 * searches, inspections, generations, graphs), one at a time: a search made after a load sees
 * the loaded bundle and model.
 *
 * `ask` is not queued: the core's ask holds its own reference to the bundle's searcher (and
 * chat model), so while it awaits a remote LLM (seconds) searches, other answers and even a
 * new bundle go ahead. A local model's answer is computed on this thread: nothing else runs
 * until it is written.
 * The one thing an answer in progress forbids is changing that bundle's model (`useModel`
 * refuses while the searcher is shared), so `loadModel` waits for the answers (`answering`).
 */
let queue: Promise<unknown> = Promise.resolve();
/** The answers being written. */
const answering = new Set<Promise<unknown>>();

function exclusive<T>(work: () => T | Promise<T>): Promise<T> {
  const run = queue.then(work);
  queue = run.catch(() => undefined);
  return run;
}

function requireBundle(): Core {
  if (!bundle) throw new EdgeragError("bundle", "no bundle is loaded: call loadBundle first");
  return bundle;
}

function requireChat(): ChatModel {
  if (!chat) throw new EdgeragError("llm", "no chat model is loaded: call loadChatModel first");
  return chat;
}

/** Attaches the model to the bundle when the bundle has vectors of that model. */
function attachModel(): boolean {
  if (!bundle || !model) return false;
  try {
    bundle.useModel(model);
  } catch (error) {
    if (error instanceof WebAssembly.RuntimeError) throw error;
    return false; // another model's vectors: BM25 and the graph still work
  }
  return bundle.denseReady;
}

/** The bytes of one file, downloaded (or read from the cache) with byte progress. */
function download(url: string, spec: FileSpec, call: Call): Promise<Uint8Array<ArrayBuffer>> {
  return fetchBytes(url, spec, (loaded, total, cached) => call.progress({ phase: "download", file: url, loaded, total, cached }));
}

async function bundleBytes(source: BundleSource, call: Call): Promise<Uint8Array> {
  if ("url" in source) {
    return download(source.url, source.sha256 === undefined ? {} : { sha256: source.sha256 }, call);
  }
  const bytes = new Uint8Array(await source.blob.arrayBuffer());
  // Bytes the page holds are hashed only to check them against an expected SHA-256.
  if (source.sha256 !== undefined) await verify(bytes, { sha256: source.sha256 }, "the bundle");
  return bytes;
}

/** Opens a bundle; a refusal names the bundle (its URL, or the page's file) and what failed. */
function openBundle(bytes: Uint8Array, source: BundleSource): Core {
  try {
    return new Core(bytes);
  } catch (error) {
    if (error instanceof WebAssembly.RuntimeError) throw error;
    const name = "url" in source ? source.url : source.blob instanceof File ? source.blob.name : "the bundle";
    throw new EdgeragError("bundle", `${name}: ${messageOf(error)}`);
  }
}

/** Downloads the model's files one after the other, reporting bytes over all of them. */
async function modelBytes(source: ModelSource, call: Call): Promise<Record<ModelFileName, Uint8Array>> {
  const sizes = MODEL_FILES.map((name) => source.files[name].bytes);
  const total = sizes.every((size) => size !== undefined) ? sizes.reduce((a, b) => a + b, 0) : null;
  const files = {} as Record<ModelFileName, Uint8Array>;
  let before = 0;
  for (const name of MODEL_FILES) {
    const url = new URL(name, source.baseUrl).href;
    files[name] = await fetchBytes(url, source.files[name], (loaded, _total, cached) =>
      call.progress({ phase: "download", file: url, loaded: before + loaded, total, cached }),
    );
    before += files[name].length;
  }
  return files;
}

type Handlers = { [O in Operation]: (args: Args<O>, call: Call) => Promise<Result<O>> };

const handlers: Handlers = {
  async init({ wasmUrl }) {
    await init(wasmUrl === undefined ? undefined : { module_or_path: wasmUrl });
    return { version: version() };
  },

  async loadBundle({ source }, call) {
    const bytes = await bundleBytes(source, call);
    return exclusive(() => {
      call.progress({ phase: "open", what: "bundle" });
      const next = openBundle(bytes, source);
      bundle?.free();
      bundle = next;
      const manifest: Manifest = next.manifest();
      return { manifest, denseReady: attachModel() };
    });
  },

  async loadModel({ source }, call) {
    const files = await modelBytes(source, call);
    return exclusive(async () => {
      while (answering.size > 0) await Promise.allSettled(answering);
      call.progress({ phase: "open", what: "model" });
      const next = new Model(files["config.json"], files["tokenizer.json"], files["model.safetensors"], source.id);
      model?.free();
      model = next;
      return { id: next.id, dimension: next.dimension, denseReady: attachModel() };
    });
  },

  async loadChatModel({ source }, call) {
    const { url, name, ...spec } = source;
    const bytes = await download(url, spec, call);
    return exclusive(() => {
      call.progress({ phase: "open", what: "chat model" });
      // Freed first, so that two models never share the memory (answers being written hold
      // the previous one until they end); a file that fails to load leaves none.
      chat?.free();
      chat = null;
      chat = new ChatModel(bytes, name);
      return { name: chat.name, contextTokens: chat.contextTokens };
    });
  },

  async generate({ request }, call) {
    return exclusive(() => requireChat().generate(request, (text: string) => call.token(text)) as Generation);
  },

  async search({ query, options }) {
    return exclusive(() => requireBundle().search(query, options));
  },

  async ask({ question, options, local }, call) {
    // Not in the queue: see `queue`. A local model generates on this thread, so while it
    // writes, nothing else runs.
    const onToken = (text: string) => call.token(text);
    const core = requireBundle();
    const answer = (
      writesLocally(local, options) ? core.askWith(requireChat(), question, options, onToken) : core.ask(question, options, onToken)
    ) as Promise<Answer>;
    answering.add(answer);
    try {
      return await answer;
    } finally {
      answering.delete(answer);
    }
  },

  async inspect() {
    return exclusive(() => requireBundle().inspect());
  },

  async graph({ chunkIds, limit }) {
    return exclusive(() => requireBundle().graph(chunkIds, limit));
  },

  async build({ files, options }, call) {
    const inputs = await Promise.all(
      files.map(async (file) => ({ name: file.name, bytes: new Uint8Array(await file.arrayBuffer()) })),
    );
    const report = (progress: BuildProgress) => call.progress({ phase: "build", ...progress });
    return exclusive(() => {
      // The module returns `{ bytes, summary }` as a plain object; its bytes are a copy of
      // wasm memory, a Uint8Array over an ArrayBuffer of its own (moved to the page).
      const built = (model ? model.build(inputs, options, report) : build(inputs, options, report)) as {
        bytes: Uint8Array<ArrayBuffer>;
        summary: BuildSummary;
      };
      call.transfer(built.bytes.buffer);
      return built;
    });
  },

  async crashForTests() {
    crashForTests();
    throw new EdgeragError("crashed", "crashForTests returned");
  },
};

/** The error code of a failed operation when the core's error does not carry one. */
function errorCode(request: Request): ErrorCode {
  switch (request.op) {
    case "init":
      return "init";
    case "loadBundle":
      return "bundle";
    case "loadModel":
    case "loadChatModel":
      return "model";
    case "generate":
      return "llm";
    case "build":
      return "build";
    case "ask":
      return writesLocally(request.args.local, request.args.options) || usesLlm(request.args.options) ? "llm" : "search";
    default:
      return "search";
  }
}

/** Whether the loaded chat model writes the answer (not when it is to be extractive). */
function writesLocally(local: boolean, options: AskOptions): boolean {
  return local && options.extractive !== true;
}

function usesLlm(options: AskOptions): boolean {
  return options.llm !== undefined && options.extractive !== true;
}

async function handle(request: Request): Promise<void> {
  const { id } = request;
  const transfer: Transferable[] = [];
  const call: Call = {
    progress: (progress) => scope.postMessage({ id, type: "progress", progress }),
    token: (text) => scope.postMessage({ id, type: "token", text }),
    transfer: (buffer) => transfer.push(buffer),
  };
  try {
    if (crashed) throw new EdgeragError("crashed", "the WebAssembly instance has crashed");
    // The union of handlers cannot be called with the union of arguments without this cast.
    const run = handlers[request.op] as (args: Args<Operation>, call: Call) => Promise<unknown>;
    const value = await run(request.args, call);
    scope.postMessage({ id, type: "done", value }, transfer);
  } catch (error) {
    if (error instanceof WebAssembly.RuntimeError) {
      crashed = true;
      scope.postMessage({ id, type: "error", code: "crashed", message: `the WebAssembly instance crashed: ${error.message}` });
      return;
    }
    const code = error instanceof EdgeragError ? error.code : errorCode(request);
    scope.postMessage({ id, type: "error", code, message: messageOf(error) });
  }
}

scope.onmessage = (event) => void handle(event.data);
