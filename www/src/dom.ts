// Small DOM helpers: typed look-ups and element construction.

type Child = Node | string | null | undefined | false;

/** The element with this id, checked to be of the expected class. */
export function byId<T extends Element>(id: string, type: abstract new () => T): T {
  const element = document.getElementById(id);
  if (!(element instanceof type)) throw new Error(`#${id} is missing or not a ${type.name}`);
  return element;
}

/** An HTML element with attributes and children. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, string> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value);
  element.append(...children.filter((child): child is Node | string => Boolean(child)));
  return element;
}

/** An SVG element with attributes and children. */
export function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attributes: Record<string, string | number> = {},
  ...children: Child[]
): SVGElementTagNameMap[K] {
  const element = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  element.append(...children.filter((child): child is Node | string => Boolean(child)));
  return element;
}

/** Shows a message in an alert element, or hides it when there is none. */
export function showError(element: HTMLElement, message: string | null): void {
  element.textContent = message ?? "";
  element.hidden = message === null;
}
