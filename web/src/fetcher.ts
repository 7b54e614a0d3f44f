// Downloads with byte progress, verified and cached in Cache Storage (runs in the worker).
//
// A file whose SHA-256 is known is cached under its URL with that hash; a later load with the
// same hash reads the cache and moves no bytes. A file without a known hash is cached with its
// ETag and revalidated (If-None-Match): a 304 reads the cache. Bytes are verified before they
// are cached: a mismatch is an integrity error and nothing is stored.
import { EdgeragError, messageOf } from "./errors.js";
import type { FileSpec } from "./model.js";

const CACHE_NAME = "edgerag-v1";
const SHA256_HEADER = "x-edgerag-sha256";

/** Bytes of the file so far, and its size when known; `cached` when read from the cache. */
export type OnBytes = (loaded: number, total: number | null, cached: boolean) => void;

/** The bytes at `url`, from the cache when they are still valid, else downloaded. */
export async function fetchBytes(url: string, spec: FileSpec, onBytes: OnBytes): Promise<Uint8Array<ArrayBuffer>> {
  const cache = await openCache();
  const cached = await cache?.match(url);
  if (cached && spec.sha256 !== undefined && sameSha256(cached.headers.get(SHA256_HEADER), spec.sha256)) {
    return readCached(cached, onBytes);
  }
  const etag = spec.sha256 === undefined ? cached?.headers.get("etag") : null;
  const response = await request(url, etag ? { "if-none-match": etag } : {});
  if (response.status === 304 && cached) {
    return readCached(cached, onBytes);
  }
  if (!response.ok) {
    throw new EdgeragError("network", `${url}: HTTP ${response.status} ${response.statusText}`.trim());
  }
  const bytes = await readBody(url, response, spec.bytes, onBytes);
  const sha256 = await verify(bytes, spec, url);
  const responseEtag = response.headers.get("etag");
  if (cache && (spec.sha256 !== undefined || responseEtag)) {
    const headers = new Headers({ [SHA256_HEADER]: sha256, "content-length": String(bytes.length) });
    if (responseEtag) headers.set("etag", responseEtag);
    await cache.put(url, new Response(bytes, { headers })).catch((error: unknown) => {
      // A full or unavailable cache costs the next visit a download, not this load.
      console.warn(`edgerag: could not cache ${url}: ${messageOf(error)}`);
    });
  }
  return bytes;
}

/** The SHA-256 of bytes (lower-case hex), checked against the expected one if any. */
export async function verify(bytes: Uint8Array<ArrayBuffer>, spec: FileSpec, what: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  const sha256 = Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
  if (spec.sha256 !== undefined && !sameSha256(sha256, spec.sha256)) {
    throw new EdgeragError("integrity", `${what}: SHA-256 is ${sha256}, expected ${spec.sha256}`);
  }
  return sha256;
}

/** Whether two hex SHA-256s are the same, whatever the case of their digits. */
function sameSha256(a: string | null, b: string): boolean {
  return a !== null && a.toLowerCase() === b.toLowerCase();
}

/** Cache Storage, or null where the page has none (an insecure context, a refusing browser). */
async function openCache(): Promise<Cache | null> {
  if (typeof caches === "undefined") return null;
  return caches.open(CACHE_NAME).catch(() => null);
}

async function request(url: string, headers: Record<string, string>): Promise<Response> {
  try {
    // no-store: the bytes live in Cache Storage; the HTTP cache would hold a second copy.
    return await fetch(url, { headers, cache: "no-store" });
  } catch (error) {
    throw new EdgeragError("network", `${url}: ${messageOf(error)}`);
  }
}

async function readCached(response: Response, onBytes: OnBytes): Promise<Uint8Array<ArrayBuffer>> {
  const bytes = new Uint8Array(await response.arrayBuffer());
  onBytes(bytes.length, bytes.length, true);
  return bytes;
}

/** Streams a body, reporting bytes as they arrive. */
async function readBody(
  url: string,
  response: Response,
  expected: number | undefined,
  onBytes: OnBytes,
): Promise<Uint8Array<ArrayBuffer>> {
  // Content-Length counts encoded bytes; it is the size only when the body is not compressed.
  const length = response.headers.get("content-encoding") ? null : response.headers.get("content-length");
  const total = expected ?? (length === null ? null : Number(length));
  if (!response.body) {
    throw new EdgeragError("network", `${url}: the response has no body`);
  }
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let loaded = 0;
  onBytes(0, total, false);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      loaded += value.length;
      onBytes(loaded, total, false);
    }
  } catch (error) {
    throw new EdgeragError("network", `${url}: download interrupted after ${loaded} bytes: ${messageOf(error)}`);
  }
  const bytes = new Uint8Array(loaded);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  return bytes;
}
