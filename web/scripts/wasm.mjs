// Copies the wasm module built by `make wasm-web` into DIR: `node scripts/wasm.mjs DIR`.
// The package is taken from $EDGERAG_WASM_WEB_PKG, else $CARGO_TARGET_DIR/wasm-pkg-web (default
// target dir ~/.cache/edgerag/target). src/wasm gives tsc the generated types; dist/wasm ships.
import { copyFileSync, existsSync, mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";

const FILES = ["edgerag_wasm.js", "edgerag_wasm.d.ts", "edgerag_wasm_bg.wasm"];

const [dir] = process.argv.slice(2);
if (!dir) {
  console.error("usage: node scripts/wasm.mjs DIR");
  process.exit(2);
}
const targetDir = process.env.CARGO_TARGET_DIR ?? join(homedir(), ".cache/edgerag/target");
const pkg = resolve(process.env.EDGERAG_WASM_WEB_PKG ?? join(targetDir, "wasm-pkg-web"));
const missing = FILES.filter((file) => !existsSync(join(pkg, file)));
if (missing.length > 0) {
  console.error(`web: ${missing.join(", ")} missing in ${pkg}: run \`make wasm-web\` first`);
  process.exit(1);
}
mkdirSync(dir, { recursive: true });
for (const file of FILES) copyFileSync(join(pkg, file), join(dir, file));
console.log(`web: wasm module ${pkg} -> ${dir}`);
