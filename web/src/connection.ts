// One Web Worker and the calls in flight to it (the page side of protocol.ts).
import { EdgeragError, type ErrorCode } from "./errors.js";
import type { Args, Operation, Progress, Reply, Request, Result } from "./protocol.js";

/** Callbacks of one call. */
export interface Hooks {
  onProgress?: ((progress: Progress) => void) | undefined;
  onToken?: ((text: string) => void) | undefined;
}

interface Pending extends Hooks {
  resolve(value: unknown): void;
  reject(error: EdgeragError): void;
}

export class Connection {
  readonly #worker: Worker;
  readonly #pending = new Map<number, Pending>();
  #nextId = 1;
  /** Why the worker can take no more calls, once it cannot. */
  #failure: EdgeragError | null = null;

  constructor(worker: Worker) {
    this.#worker = worker;
    worker.onmessage = (event: MessageEvent<Reply>) => this.#receive(event.data);
    // An error that escapes the worker (its script failed to load, or the wasm instance aborted
    // outside a call) ends it: a worker that threw may hold a broken instance, so it is
    // terminated (not left running) before every call in flight is rejected.
    worker.onerror = (event) => {
      event.preventDefault();
      this.terminate("crashed", `the Web Worker failed: ${event.message || "it could not start or it died"}`);
    };
    worker.onmessageerror = () => this.terminate("crashed", "a message from the Web Worker could not be read");
  }

  /** Whether the worker crashed or was terminated. */
  get dead(): boolean {
    return this.#failure !== null;
  }

  call<O extends Operation>(op: O, args: Args<O>, hooks: Hooks = {}): Promise<Result<O>> {
    if (this.#failure) return Promise.reject(this.#failure);
    const id = this.#nextId++;
    return new Promise<Result<O>>((resolve, reject) => {
      this.#pending.set(id, { ...hooks, resolve: resolve as (value: unknown) => void, reject });
      this.#worker.postMessage({ id, op, args } as Request);
    });
  }

  /** Ends the worker; calls in flight reject with `code`. */
  terminate(code: ErrorCode, message: string): void {
    this.#worker.terminate();
    this.#fail(code, message);
  }

  #receive(reply: Reply): void {
    const pending = this.#pending.get(reply.id);
    if (!pending) return;
    switch (reply.type) {
      case "progress":
        pending.onProgress?.(reply.progress);
        break;
      case "token":
        pending.onToken?.(reply.text);
        break;
      case "done":
        this.#pending.delete(reply.id);
        pending.resolve(reply.value);
        break;
      case "error":
        this.#pending.delete(reply.id);
        pending.reject(new EdgeragError(reply.code, reply.message));
        if (reply.code === "crashed") this.terminate("crashed", reply.message);
        break;
    }
  }

  #fail(code: ErrorCode, message: string): void {
    this.#failure ??= new EdgeragError(code, message);
    for (const pending of this.#pending.values()) pending.reject(new EdgeragError(code, message));
    this.#pending.clear();
  }
}
