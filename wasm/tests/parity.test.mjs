// Parity of the wasm module with the native CLI on the same inputs: search (every mode),
// extractive answers, and bundles built in wasm. Run by `make test-wasm`.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { cli, demoBundlePath, env, loadModel, repoFile, wasm } from "./support.mjs";

const queries = repoFile("demo/queries.txt").toString().trim().split("\n");
const modes = ["bm25", "dense", "graph", "hybrid"];

const demo = new wasm.Edgerag(readFileSync(demoBundlePath()));
demo.useModel(loadModel());

/** Same chunks in the same order, scores within 1e-4. */
function assertSameHits(actual, expected, what) {
  const ids = (hits) => hits.map((h) => h.chunk_id);
  assert.deepEqual(ids(actual), ids(expected), `${what}: chunk ids`);
  actual.forEach((hit, i) => {
    const diff = Math.abs(hit.score - expected[i].score);
    assert.ok(diff <= 1e-4, `${what}: rank ${i + 1} score ${hit.score} vs ${expected[i].score}`);
  });
}

test("search in wasm ranks like native search: top 10, every mode, every demo query", () => {
  assert.equal(demo.denseReady, true);
  for (const query of queries) {
    for (const mode of modes) {
      const native = cli("search", demoBundlePath(), query, "-k", "10", "--mode", mode);
      const ours = demo.search(query, { k: 10, mode });
      assert.equal(ours.results.length, 10);
      assert.equal(ours.mode, mode);
      assertSameHits(ours.results, native.results, `${mode} "${query}"`);
      assert.deepEqual(
        ours.results.map(({ document, title, page, section, text }) => ({ document, title, page, section, text })),
        native.results.map(({ document, title, page, section, text }) => ({ document, title, page, section, text })),
      );
    }
  }
});

test("a bundle of format 4 is read from its bytes and answers as the same bundle in format 3", async () => {
  const paged = demo;
  const whole = new wasm.Edgerag(readFileSync(env("EDGERAG_BUNDLE_V3")));
  whole.useModel(loadModel());
  assert.equal(whole.denseReady, true);
  assert.deepEqual(paged.manifest().counts, whole.manifest().counts);
  assert.equal(whole.inspect().manifest.format_version, 3);
  const inspection = paged.inspect();
  assert.deepEqual(inspection, (({ bundle, bytes, open_bytes, ...rest }) => rest)(cli("inspect", demoBundlePath())));
  assert.ok(inspection.sections.some((s) => s.name === "chunk ids"), JSON.stringify(inspection.sections));
  // One partition holds every vector of so small a bundle, so dense search is exact in both.
  for (const query of queries.slice(0, 3)) {
    for (const mode of modes) {
      assertSameHits(paged.search(query, { k: 10, mode }).results, whole.search(query, { k: 10, mode }).results, `${mode} "${query}"`);
    }
  }
  const answer = await paged.ask("Who won Super Bowl 50?", { extractive: true });
  assert.equal(answer.answer, (await whole.ask("Who won Super Bowl 50?", { extractive: true })).answer);
  const cited = answer.citations.map((c) => c.chunk_id);
  assert.deepEqual(paged.graph(cited, 12), whole.graph(cited, 12));
  assert.throws(() => paged.graph(["not-a-chunk"]), /no chunk "not-a-chunk"/);
});

test("extractive answers in wasm equal native ones", async () => {
  for (const question of queries) {
    const native = cli("ask", demoBundlePath(), question, "--extractive");
    const ours = await demo.ask(question, { extractive: true });
    assert.equal(ours.answer, native.answer, question);
    assert.equal(ours.mode, native.mode);
    assert.deepEqual(ours.citations, native.citations);
    assertSameHits(ours.sources, native.sources, question);
    assert.ok(Math.abs(ours.confidence - native.confidence) <= 1e-4, question);
  }
  const rollo = await demo.ask("Who was the leader of the Norse raiders who settled Normandy?");
  assert.match(rollo.answer, /Rollo/);
  assert.ok(rollo.citations.some((c) => c.document.endsWith("normans.md")));
});

test("inspect and the graph view describe the bundle", async () => {
  const inspection = demo.inspect();
  const native = cli("inspect", demoBundlePath());
  assert.deepEqual(inspection.manifest, native.manifest);
  assert.deepEqual(inspection.documents, native.documents);
  assert.deepEqual(inspection.part_bytes, native.part_bytes);

  const answer = await demo.ask("Who won Super Bowl 50?");
  const cited = answer.citations.map((c) => c.chunk_id);
  const view = demo.graph(cited, 12);
  const seeds = view.nodes.filter((n) => n.seed);
  assert.deepEqual(seeds.map((n) => n.chunk_id), [...new Set(cited)]);
  const keywords = view.nodes.filter((n) => n.kind === "keyword");
  assert.ok(keywords.length > 0 && keywords.length <= 12 + 3, `${keywords.length} keywords`);
  assert.ok(keywords.some((k) => /Super Bowl/.test(k.label)), keywords.map((k) => k.label).join(", "));
  const ids = new Set(view.nodes.map((n) => n.id));
  for (const edge of view.edges) {
    assert.ok(ids.has(edge.source) && ids.has(edge.target), JSON.stringify(edge));
  }
  for (const keyword of keywords) {
    assert.ok(view.edges.some((e) => e.source === keyword.id || e.target === keyword.id), `${keyword.label} is unconnected`);
  }
  assert.throws(() => demo.graph(["not-a-chunk"]), /no chunk "not-a-chunk"/);
});

test("a bundle built in wasm without embeddings is byte-identical to the native build, in either format", () => {
  const files = ["demo/corpus/normans.md", "demo/corpus/shared-mime-info-spec.pdf", "demo/corpus/nikola-tesla.html"];
  const dir = mkdtempSync(join(tmpdir(), "edgerag-parity-"));
  // Both builders write format 4 unless told otherwise.
  for (const format of [undefined, 3]) {
    const progress = [];
    // The CLI names a file given on its command line by its file name.
    const built = wasm.build(
      files.map((name) => ({ name: basename(name), bytes: repoFile(name) })),
      { name: "parity", created: 1700000000, format },
      (p) => progress.push(p),
    );
    const native = join(dir, `native-${format}.bundle`);
    const args = ["-o", native, "--name", "parity", "--created", "1700000000", "--no-embed"];
    const summary = cli("build", ...files, ...args, ...(format ? ["--format", `${format}`] : []));
    // The header's format version, after the 8-byte magic.
    assert.equal(Buffer.from(built.bytes).readUInt16LE(8), format ?? 4);
    assert.equal(built.summary.chunks, summary.chunks);
    assert.equal(built.summary.documents, 3);
    assert.deepEqual(built.summary.failed, []);
    assert.equal(built.bytes.length, summary.bytes);
    assert.ok(Buffer.from(built.bytes).equals(readFileSync(native)), `format ${format}: bundle bytes differ`);
    assert.deepEqual(progress[0], { stage: "load", done: 0, total: 3, file: "normans.md" });
    for (const stage of ["load", "keywords", "graph", "bm25"]) {
      assert.ok(progress.some((p) => p.stage === stage && p.done === p.total), `no finished ${stage}`);
    }
  }
  assert.throws(() => wasm.build([{ name: "a.md", bytes: repoFile(files[0]) }], { format: 2 }), /a build writes format 3 or 4, not 2/);
});

test("a bundle built in wasm with embeddings searches like the native build", () => {
  const files = ["demo/corpus/normans.md", "demo/corpus/steam-engine.md"];
  const built = loadModel().build(files.map((name) => ({ name, bytes: repoFile(name) })), { name: "embedded", created: 1 });
  const dir = mkdtempSync(join(tmpdir(), "edgerag-parity-"));
  const path = join(dir, "wasm.bundle");
  writeFileSync(path, built.bytes);
  const native = join(dir, "native.bundle");
  cli("build", ...files, "-o", native, "--name", "embedded", "--created", "1");
  assert.ok(built.summary.vectors > 0 && built.summary.vectors === built.summary.chunks);
  const ours = new wasm.Edgerag(built.bytes);
  ours.useModel(loadModel());
  for (const query of ["Who was Rollo?", "What did James Watt improve?", "steam locomotives"]) {
    for (const mode of modes) {
      const expected = cli("search", native, query, "-k", "10", "--mode", mode).results;
      // The same bundle searched natively and in wasm, and the two builds' rankings.
      assertSameHits(cli("search", path, query, "-k", "10", "--mode", mode).results, expected, `native on wasm-built, ${mode} "${query}"`);
      assertSameHits(ours.search(query, { k: 10, mode }).results, expected, `wasm on wasm-built, ${mode} "${query}"`);
    }
  }
});

test("bad input is a thrown error with core's message, and the module stays usable", () => {
  assert.throws(() => new wasm.Edgerag(new Uint8Array([1, 2, 3])), /not an edgerag bundle|truncated/);
  // A changed byte: in a bundle read whole, anywhere; in one of format 4, in its directory
  // (a changed page is refused when read: core's tests).
  for (const [path, at] of [[env("EDGERAG_BUNDLE_V3"), -10], [demoBundlePath(), 100]]) {
    const corrupt = Uint8Array.from(readFileSync(path));
    corrupt[(corrupt.length + at) % corrupt.length] ^= 0xff;
    assert.throws(() => new wasm.Edgerag(corrupt), /corrupted bundle: checksum mismatch/, path);
  }
  assert.throws(() => demo.search("the of and", { mode: "bm25" }), /invalid query/);
  assert.throws(() => demo.search("Rollo", { topK: 3 }), /unknown field `topK`/);
  assert.throws(() => demo.search("Rollo", { mode: "fuzzy" }), /fuzzy/);
  assert.throws(() => wasm.build([{ name: "a.docx", bytes: new Uint8Array([1]) }], {}), /none of the 1 files could be loaded \(a\.docx: unsupported file type/);
  assert.throws(() => wasm.build([{ name: "a.md" }], {}), /a\.md: `bytes` must be a Uint8Array/);
  const partial = wasm.build([
    { name: "ok.md", bytes: repoFile("demo/corpus/normans.md") },
    { name: "empty.txt", bytes: new Uint8Array() },
  ]);
  assert.deepEqual(partial.summary.failed, [{ source: "empty.txt", error: "the document is empty" }]);
  assert.equal(demo.search("Rollo", { k: 1 }).results.length, 1);
});
