// A radial drawing of the keyword graph around an answer: its chunks on an inner ring (each a
// link to its source), their keywords on an outer ring next to the chunks they appear in.
import type { GraphView } from "@edgerag/web";
import { svg } from "./dom.js";
import { plural } from "./format.js";

type Node = GraphView["nodes"][number];

const WIDTH = 800;
const HEIGHT = 560;
const CENTER = { x: WIDTH / 2, y: HEIGHT / 2 };
const CHUNK_RING = 95;
const KEYWORD_RING = 200;
const LABEL_CHARS = 20;

interface Point {
  x: number;
  y: number;
  angle: number;
}

/** Draws `view` into `container`; `markers` names the chunks that are sources (S1, …). */
export function drawGraph(container: HTMLElement, view: GraphView, markers: ReadonlyMap<string, string>): string {
  const chunks = view.nodes.filter((node) => node.kind === "chunk");
  const keywords = view.nodes.filter((node) => node.kind === "keyword");
  const positions = layout(chunks, keywords, view.edges);
  const heaviest = Math.max(1e-9, ...view.nodes.map((node) => node.weight));
  const radius = (node: Node, base: number) => base + 6 * Math.sqrt(node.weight / heaviest);

  const edges = view.edges.flatMap((edge) => {
    const a = positions.get(edge.source);
    const b = positions.get(edge.target);
    if (!a || !b) return [];
    return [svg("line", { x1: a.x, y1: a.y, x2: b.x, y2: b.y, class: `edge ${edge.kind}` })];
  });
  const keywordNodes = keywords.flatMap((node) => {
    const p = positions.get(node.id);
    if (!p) return [];
    const right = Math.cos(p.angle) >= 0;
    const label = node.label.length > LABEL_CHARS ? `${node.label.slice(0, LABEL_CHARS - 1)}…` : node.label;
    return [
      svg(
        "g",
        { class: "node keyword" },
        svg("title", {}, node.label),
        svg("circle", { cx: p.x, cy: p.y, r: radius(node, 3) }),
        svg("text", { x: p.x + (right ? 9 : -9), y: p.y + 5, "text-anchor": right ? "start" : "end" }, label),
      ),
    ];
  });
  const chunkNodes = chunks.flatMap((node) => {
    const p = positions.get(node.id);
    if (!p) return [];
    const marker = node.chunk_id === undefined ? undefined : markers.get(node.chunk_id);
    const shape = svg(
      "g",
      { class: `node chunk${marker ? " source" : ""}` },
      svg("title", {}, marker ? `${marker}: ${node.label}` : node.label),
      svg("circle", { cx: p.x, cy: p.y, r: radius(node, 12) }),
      svg("text", { x: p.x, y: p.y + 5, "text-anchor": "middle" }, marker ?? "·"),
    );
    return [marker ? svg("a", { href: `#source-${marker}`, "aria-label": `Source ${marker}: ${node.label}` }, shape) : shape];
  });

  // The container is the labelled group (named in the page, described by the returned
  // summary); the drawing itself is no image, so the source links inside it stay reachable.
  container.replaceChildren(
    svg(
      "svg",
      { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "none" },
      svg("g", { class: "edges" }, ...edges),
      svg("g", {}, ...keywordNodes),
      svg("g", {}, ...chunkNodes),
    ),
  );
  return describe(chunks, keywords, markers);
}

/** Chunks evenly on the inner ring; keywords on the outer ring, in the order of the mean
 *  angle of their chunks, evenly spaced so labels do not collide. */
function layout(chunks: readonly Node[], keywords: readonly Node[], edges: GraphView["edges"]): Map<string, Point> {
  const positions = new Map<string, Point>();
  chunks.forEach((node, i) => {
    const angle = (2 * Math.PI * i) / chunks.length - Math.PI / 2;
    const ring = chunks.length === 1 ? 0 : CHUNK_RING;
    positions.set(node.id, at(angle, ring));
  });
  const pull = new Map<string, { x: number; y: number }>();
  for (const edge of edges) {
    for (const [keyword, chunk] of [
      [edge.target, edge.source],
      [edge.source, edge.target],
    ] as const) {
      const p = positions.get(chunk);
      if (!p) continue;
      const sum = pull.get(keyword) ?? { x: 0, y: 0 };
      pull.set(keyword, { x: sum.x + Math.cos(p.angle), y: sum.y + Math.sin(p.angle) });
    }
  }
  const ordered = keywords
    .map((node, i) => {
      const sum = pull.get(node.id);
      return { node, angle: sum && (sum.x !== 0 || sum.y !== 0) ? Math.atan2(sum.y, sum.x) : (2 * Math.PI * i) / keywords.length };
    })
    .sort((a, b) => a.angle - b.angle);
  const start = ordered[0]?.angle ?? 0;
  ordered.forEach(({ node }, i) => positions.set(node.id, at(start + (2 * Math.PI * i) / ordered.length, KEYWORD_RING)));
  return positions;
}

function at(angle: number, ring: number): Point {
  return { x: CENTER.x + ring * Math.cos(angle), y: CENTER.y + ring * Math.sin(angle), angle };
}

function describe(chunks: readonly Node[], keywords: readonly Node[], markers: ReadonlyMap<string, string>): string {
  const sources = chunks.flatMap((node) => (node.chunk_id === undefined ? [] : (markers.get(node.chunk_id) ?? [])));
  const named = sources.length > 0 ? ` (sources ${sources.join(", ")})` : "";
  const shown = keywords.slice(0, 12).map((node) => node.label).join(", ");
  const more = keywords.length > 12 ? ` and ${keywords.length - 12} more` : "";
  return `${plural(chunks.length, "chunk")}${named} and ${plural(keywords.length, "keyword")}: ${shown}${more}. Lines join a keyword to the chunks it appears in; dashed lines join similar keywords.`;
}
