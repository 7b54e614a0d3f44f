// What the Node tests of web/ share: a local HTTP server and an in-memory Cache Storage.
import { createHash } from "node:crypto";
import { createServer } from "node:http";

/** The SHA-256 of bytes, in lower-case hex. */
export function sha256(bytes) {
  return createHash("sha256").update(bytes).digest("hex");
}

/** `length` bytes that differ from one `seed` to another. */
export function bytesOf(length, seed = 1) {
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i++) bytes[i] = (i * 31 + seed * 7) & 0xff;
  return bytes;
}

/**
 * An HTTP server on 127.0.0.1 answering with `handler(request, response)`; `requests` records
 * the method, path and headers of every request it received.
 */
export async function serve(t, handler) {
  const requests = [];
  const server = createServer((request, response) => {
    requests.push({ method: request.method, path: request.url, headers: request.headers });
    handler(request, response);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  const { port } = server.address();
  return { url: (path) => `http://127.0.0.1:${port}${path}`, requests };
}

/**
 * Cache Storage as the browser has it, in memory, installed as `globalThis.caches` for the
 * test: `open` gives one Cache per name whose `put` keeps the response's status, headers and
 * bytes and whose `match` gives a fresh Response of them. `failPut` makes every put reject.
 */
export function installCaches(t, { failPut = false, failOpen = false } = {}) {
  const stores = new Map();
  const storage = {
    async open(name) {
      if (failOpen) throw new DOMException("the cache is not available", "SecurityError");
      if (!stores.has(name)) stores.set(name, new Map());
      const store = stores.get(name);
      return {
        async match(url) {
          const entry = store.get(new URL(url).href);
          return entry && new Response(entry.bytes.slice(), { status: entry.status, headers: entry.headers });
        },
        async put(url, response) {
          const bytes = new Uint8Array(await response.arrayBuffer());
          if (failPut) throw new DOMException("the quota is exceeded", "QuotaExceededError");
          store.set(new URL(url).href, { status: response.status, headers: [...response.headers], bytes });
        },
      };
    },
  };
  const had = Object.getOwnPropertyDescriptor(globalThis, "caches");
  globalThis.caches = storage;
  t.after(() => {
    if (had) Object.defineProperty(globalThis, "caches", had);
    else delete globalThis.caches;
  });
  return {
    /** The names opened. */
    names: () => [...stores.keys()],
    /** The entry cached for `url` in the cache `name`: its headers (an object) and bytes. */
    entry(name, url) {
      const entry = stores.get(name)?.get(new URL(url).href);
      return entry && { headers: Object.fromEntries(entry.headers), bytes: entry.bytes };
    },
    size: (name) => stores.get(name)?.size ?? 0,
  };
}

/** A listener recording what `fetchBytes` reports: `[loaded, total, cached]` per call. */
export function progressLog() {
  const events = [];
  const onBytes = (loaded, total, cached) => events.push([loaded, total, cached]);
  return { events, onBytes };
}
