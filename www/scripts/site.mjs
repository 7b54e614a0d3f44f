// Assembles the static site in dist/ after tsc has compiled src/ to dist/app/: the page, its
// styles, and the @edgerag/web package (with its worker and wasm module) in dist/edgerag/.
import { cpSync, existsSync } from "node:fs";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";

const site = (path) => fileURLToPath(new URL(`../${path}`, import.meta.url));
const web = dirname(fileURLToPath(import.meta.resolve("@edgerag/web")));
if (!existsSync(`${web}/wasm/edgerag_wasm_bg.wasm`)) {
  console.error(`www: ${web} has no wasm module: build the web package first (make web)`);
  process.exit(1);
}
cpSync(site("index.html"), site("dist/index.html"));
cpSync(site("css"), site("dist/css"), { recursive: true });
cpSync(web, site("dist/edgerag"), { recursive: true });
console.log(`www: site assembled in ${site("dist")}`);
