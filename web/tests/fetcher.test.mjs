// fetcher.ts under Node: downloads from a local server, progress, SHA-256 checks, errors, and
// caching (Cache Storage is the in-memory one of helpers.mjs; Node has none).
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { gzipSync } from "node:zlib";
import { EdgeragError } from "./build/errors.js";
import { fetchBytes, verify } from "./build/fetcher.js";
import { bytesOf, installCaches, progressLog, serve, sha256 } from "./helpers.mjs";

const CACHE = "edgerag-v1";

/** Answers `body` with its length, in `pieces` writes apart in time, with extra headers. */
function sendInPieces(response, body, { pieces = 8, headers = {}, status = 200 } = {}) {
  response.writeHead(status, { "content-type": "application/octet-stream", "content-length": body.length, ...headers });
  const size = Math.ceil(body.length / pieces);
  (async () => {
    for (let at = 0; at < body.length; at += size) {
      response.write(body.subarray(at, at + size));
      await sleep(5);
    }
    response.end();
  })();
}

async function rejectsWith(promise, code, pattern) {
  await assert.rejects(promise, (error) => {
    assert.ok(error instanceof EdgeragError, `an EdgeragError, not ${error}`);
    assert.equal(error.name, "EdgeragError");
    assert.equal(error.code, code);
    assert.match(error.message, pattern);
    return true;
  });
}

test("downloads the bytes and reports them as they arrive, from 0 to the Content-Length", async (t) => {
  const body = bytesOf(64 * 1024);
  const server = await serve(t, (_, response) => sendInPieces(response, body));
  const { events, onBytes } = progressLog();

  const bytes = await fetchBytes(server.url("/file.bin"), {}, onBytes);

  assert.deepEqual(bytes, body);
  assert.ok(bytes.buffer instanceof ArrayBuffer && bytes.byteLength === bytes.buffer.byteLength);
  assert.deepEqual(events[0], [0, body.length, false]);
  assert.deepEqual(events.at(-1), [body.length, body.length, false]);
  assert.ok(events.length > 2, `progress before the end (${events.length} reports)`);
  for (let i = 1; i < events.length; i++) {
    assert.ok(events[i][0] > events[i - 1][0], "loaded grows with every report");
    assert.equal(events[i][1], body.length);
    assert.equal(events[i][2], false);
  }
  assert.equal(server.requests.length, 1);
  assert.equal(server.requests[0].headers["if-none-match"], undefined);
});

test("the total is the spec's size when given, else the Content-Length, unknown when compressed or absent", async (t) => {
  const body = bytesOf(10_000, 2);
  const gzipped = gzipSync(body);
  const server = await serve(t, (request, response) => {
    if (request.url === "/gzip") {
      response.writeHead(200, { "content-encoding": "gzip", "content-length": gzipped.length });
      response.end(gzipped);
    } else if (request.url === "/chunked") {
      response.writeHead(200); // no Content-Length: chunked
      response.end(body);
    } else {
      response.writeHead(200, { "content-length": body.length });
      response.end(body);
    }
  });
  const totals = async (path, spec) => {
    const { events, onBytes } = progressLog();
    const bytes = await fetchBytes(server.url(path), spec, onBytes);
    assert.deepEqual(bytes, body, path);
    assert.equal(events.at(-1)[0], body.length, `${path}: the last report has every byte`);
    return [...new Set(events.map(([, total]) => total))];
  };

  assert.deepEqual(await totals("/plain", {}), [body.length]);
  assert.deepEqual(await totals("/plain", { bytes: 12_345 }), [12_345]);
  // The Content-Length of a compressed body counts the compressed bytes: not the size.
  assert.deepEqual(await totals("/gzip", {}), [null]);
  assert.deepEqual(await totals("/gzip", { bytes: body.length }), [body.length]);
  assert.deepEqual(await totals("/chunked", {}), [null]);
});

test("the SHA-256 is checked, whatever the case of its digits; a mismatch is an integrity error", async (t) => {
  const body = bytesOf(3000, 3);
  const server = await serve(t, (_, response) => response.end(body));
  const hash = sha256(body);

  assert.deepEqual(await fetchBytes(server.url("/a"), { sha256: hash }, () => {}), body);
  assert.deepEqual(await fetchBytes(server.url("/a"), { sha256: hash.toUpperCase() }, () => {}), body);

  const wrong = sha256(bytesOf(3000, 4));
  const url = server.url("/a");
  await rejectsWith(fetchBytes(url, { sha256: wrong }, () => {}), "integrity", new RegExp(`^${url}: SHA-256 is ${hash}, expected ${wrong}$`));
});

test("verify gives the SHA-256 in lower-case hex and names what failed", async () => {
  const abc = new TextEncoder().encode("abc");
  const expected = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
  assert.equal(await verify(abc, {}, "abc"), expected);
  assert.equal(await verify(abc, { sha256: expected.toUpperCase() }, "abc"), expected);
  await rejectsWith(verify(abc, { sha256: "00".repeat(32) }, "the bundle"), "integrity", /^the bundle: SHA-256 is ba7816bf/);
});

test("a file with a known SHA-256 is cached and read back with no request, until the hash changes", async (t) => {
  const caches = installCaches(t);
  let body = bytesOf(5000, 5);
  const server = await serve(t, (_, response) => sendInPieces(response, body, { pieces: 2 }));
  const url = server.url("/bundle");

  assert.deepEqual(await fetchBytes(url, { sha256: sha256(body) }, () => {}), body);
  assert.deepEqual(caches.names(), [CACHE]);
  const entry = caches.entry(CACHE, url);
  assert.deepEqual(entry.bytes, body);
  assert.equal(entry.headers["x-edgerag-sha256"], sha256(body));
  assert.equal(entry.headers["content-length"], String(body.length));

  for (const hash of [sha256(body), sha256(body).toUpperCase()]) {
    const { events, onBytes } = progressLog();
    assert.deepEqual(await fetchBytes(url, { sha256: hash }, onBytes), body);
    assert.deepEqual(events, [[body.length, body.length, true]], "one report: every byte, from the cache");
  }
  assert.equal(server.requests.length, 1, "the cache answered");

  // A new hash downloads again (not revalidated by ETag: the hash decides) and replaces the entry.
  const old = body;
  body = bytesOf(6000, 6);
  const { events, onBytes } = progressLog();
  assert.deepEqual(await fetchBytes(url, { sha256: sha256(body) }, onBytes), body);
  assert.ok(events.every(([, , cached]) => !cached));
  assert.equal(server.requests.length, 2);
  assert.equal(server.requests[1].headers["if-none-match"], undefined);
  assert.deepEqual(caches.entry(CACHE, url).bytes, body);
  assert.notDeepEqual(caches.entry(CACHE, url).bytes, old);
});

test("bytes that fail their SHA-256 are not cached, and the cached ones are kept", async (t) => {
  const caches = installCaches(t);
  const good = bytesOf(2000, 7);
  let body = good;
  const server = await serve(t, (_, response) => response.end(body));
  const url = server.url("/model.safetensors");

  await rejectsWith(fetchBytes(url, { sha256: sha256(bytesOf(2000, 8)) }, () => {}), "integrity", /SHA-256 is/);
  assert.equal(caches.size(CACHE), 0, "nothing cached after a mismatch");

  await fetchBytes(url, { sha256: sha256(good) }, () => {});
  body = bytesOf(2000, 9); // the server now serves other bytes
  await rejectsWith(fetchBytes(url, { sha256: sha256(bytesOf(2000, 10)) }, () => {}), "integrity", /SHA-256 is/);
  assert.deepEqual(caches.entry(CACHE, url).bytes, good, "the verified entry stays");
});

test("a file without a SHA-256 is cached with its ETag and revalidated: 304 reads the cache, 200 replaces it", async (t) => {
  const caches = installCaches(t);
  let version = 1;
  let body = bytesOf(4000, 11);
  const server = await serve(t, (request, response) => {
    const etag = `"v${version}"`;
    if (request.headers["if-none-match"] === etag) {
      response.writeHead(304, { etag });
      response.end();
    } else {
      sendInPieces(response, body, { pieces: 2, headers: { etag } });
    }
  });
  const url = server.url("/bundle");

  assert.deepEqual(await fetchBytes(url, {}, () => {}), body);
  assert.equal(server.requests[0].headers["if-none-match"], undefined);
  const entry = caches.entry(CACHE, url);
  assert.equal(entry.headers.etag, '"v1"');
  assert.equal(entry.headers["x-edgerag-sha256"], sha256(body), "the hash is recorded even when not expected");

  const first = body;
  const { events, onBytes } = progressLog();
  assert.deepEqual(await fetchBytes(url, {}, onBytes), first);
  assert.equal(server.requests[1].headers["if-none-match"], '"v1"');
  assert.deepEqual(events, [[first.length, first.length, true]]);

  version = 2;
  body = bytesOf(4500, 12);
  const again = progressLog();
  assert.deepEqual(await fetchBytes(url, {}, again.onBytes), body);
  assert.equal(server.requests[2].headers["if-none-match"], '"v1"');
  assert.ok(again.events.every(([, , cached]) => !cached), "downloaded, not read from the cache");
  assert.equal(caches.entry(CACHE, url).headers.etag, '"v2"');
  assert.deepEqual(caches.entry(CACHE, url).bytes, body);
  assert.equal(server.requests.length, 3);
});

test("a file with neither a SHA-256 nor an ETag is not cached", async (t) => {
  const caches = installCaches(t);
  const body = bytesOf(1000, 13);
  const server = await serve(t, (_, response) => response.end(body));
  const url = server.url("/plain");

  assert.deepEqual(await fetchBytes(url, {}, () => {}), body);
  assert.deepEqual(await fetchBytes(url, {}, () => {}), body);
  assert.equal(caches.size(CACHE), 0);
  assert.equal(server.requests.length, 2);
  assert.equal(server.requests[1].headers["if-none-match"], undefined);
});

test("without Cache Storage (Node, an insecure page) or when it refuses, files are downloaded every time", async (t) => {
  assert.equal(typeof globalThis.caches, "undefined");
  const body = bytesOf(1000, 14);
  const server = await serve(t, (_, response) => {
    response.writeHead(200, { etag: '"same"' });
    response.end(body);
  });
  const url = server.url("/f");
  const spec = { sha256: sha256(body) };
  assert.deepEqual(await fetchBytes(url, spec, () => {}), body);
  assert.deepEqual(await fetchBytes(url, {}, () => {}), body);

  installCaches(t, { failOpen: true });
  assert.deepEqual(await fetchBytes(url, spec, () => {}), body);
  assert.deepEqual(await fetchBytes(url, {}, () => {}), body);
  assert.equal(server.requests.length, 4);
  assert.ok(server.requests.every((request) => request.headers["if-none-match"] === undefined));
});

test("a cache that cannot store costs a warning, not the load", async (t) => {
  installCaches(t, { failPut: true });
  const warn = t.mock.method(console, "warn", () => {});
  const body = bytesOf(1500, 15);
  const server = await serve(t, (_, response) => response.end(body));
  const url = server.url("/big");

  assert.deepEqual(await fetchBytes(url, { sha256: sha256(body) }, () => {}), body);
  assert.equal(warn.mock.callCount(), 1);
  assert.match(warn.mock.calls[0].arguments[0], new RegExp(`^edgerag: could not cache ${url}: the quota is exceeded$`));
});

test("an HTTP error status is a network error naming the URL and the status", async (t) => {
  const caches = installCaches(t);
  const server = await serve(t, (request, response) => {
    const status = request.url === "/missing" ? 404 : 500;
    response.writeHead(status, { etag: '"e"' });
    response.end("no");
  });
  for (const [path, status] of [["/missing", "404 Not Found"], ["/broken", "500 Internal Server Error"]]) {
    const url = server.url(path);
    const { events, onBytes } = progressLog();
    await rejectsWith(fetchBytes(url, {}, onBytes), "network", new RegExp(`^${url}: HTTP ${status}$`));
    assert.deepEqual(events, [], "no bytes reported");
  }
  assert.equal(caches.size(CACHE), 0);
});

test("a 304 with nothing cached is an error, not empty bytes", async (t) => {
  installCaches(t);
  const server = await serve(t, (_, response) => {
    response.writeHead(304);
    response.end();
  });
  const url = server.url("/gone");
  await rejectsWith(fetchBytes(url, {}, () => {}), "network", new RegExp(`^${url}: HTTP 304`));
});

test("a server that cannot be reached is a network error", async () => {
  // A port that was just free: nothing listens there.
  const server = createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${server.address().port}/x`;
  await new Promise((resolve) => server.close(resolve));
  await rejectsWith(fetchBytes(url, {}, () => {}), "network", new RegExp(`^${url}: `));
});

test("a body cut short is a network error saying how many bytes arrived, and nothing is cached", async (t) => {
  const caches = installCaches(t);
  const body = bytesOf(4096, 16);
  const server = await serve(t, (_, response) => {
    response.writeHead(200, { "content-length": body.length * 2, etag: '"cut"' });
    response.write(body, () => setTimeout(() => response.socket.destroy(), 20));
  });
  const url = server.url("/cut");
  const { events, onBytes } = progressLog();

  await rejectsWith(
    fetchBytes(url, { sha256: sha256(body) }, onBytes),
    "network",
    new RegExp(`^${url}: download interrupted after ${body.length} bytes: `),
  );
  assert.deepEqual(events.at(-1), [body.length, body.length * 2, false]);
  assert.equal(caches.size(CACHE), 0);
});
