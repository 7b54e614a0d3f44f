// How places, sizes and scores read (as the CLI writes them).

/** "Title › Section › Subsection (p. 3)"; a section path repeating the title skips it. */
export function place(title: string, section: readonly string[], page: number | null): string {
  const rest = section[0] === title ? section.slice(1) : section;
  const path = rest.length > 0 ? `${title} › ${rest.join(" › ")}` : title;
  return page === null ? path : `${path} (p. ${page})`;
}

export function bytes(count: number): string {
  if (count < 1024) return `${count} B`;
  if (count < 1024 * 1024) return `${(count / 1024).toFixed(1)} KB`;
  return `${(count / (1024 * 1024)).toFixed(1)} MB`;
}

export function score(value: number): string {
  return value.toFixed(3);
}

export function plural(count: number, noun: string): string {
  return `${count.toLocaleString("en")} ${noun}${count === 1 ? "" : "s"}`;
}
