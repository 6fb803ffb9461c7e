/// <reference lib="dom" />
/**
 * A few DOM helpers. Every value from the API reaches the page as a text node or an attribute,
 * never as HTML, so a job's error text or a schedule's name cannot inject markup.
 */

type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | null | undefined | EventListener>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === 'function') el.addEventListener(name.replace(/^on/, ''), value);
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

export function append(parent: Node, children: (Child | Child[])[]): void {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

const SVG_NS = 'http://www.w3.org/2000/svg';

export function svg(
  tag: string,
  attrs: Record<string, string | number> = {},
  ...children: Child[]
): SVGElement {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value));
  append(el, children);
  return el;
}

/** Replaces a region's content. */
export function show(region: Element, ...children: (Child | Child[])[]): void {
  region.replaceChildren();
  append(region, children);
}

/** A table with a caption (for screen readers) and column headers; rows are arrays of cells. */
export function table(
  caption: string,
  headers: string[],
  rows: Child[][],
  attrs: Attrs = {},
): HTMLTableElement {
  return h(
    'table',
    attrs,
    h('caption', { class: 'visually-hidden' }, caption),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        headers.map((text) => h('th', { scope: 'col' }, text)),
      ),
    ),
    h(
      'tbody',
      {},
      rows.map((cells) =>
        h(
          'tr',
          {},
          cells.map((cell) => h('td', {}, cell)),
        ),
      ),
    ),
  );
}

export function badge(text: string, tone: string): HTMLSpanElement {
  return h('span', { class: `badge badge-${tone}` }, text);
}

/** A live status line: polite updates for screen readers. */
export function notice(text: string, tone: 'info' | 'error' | 'ok' = 'info'): HTMLParagraphElement {
  return h('p', { class: `notice notice-${tone}`, role: tone === 'error' ? 'alert' : 'status' }, text);
}

/** A horizontal bar, width set through the CSSOM (allowed by the page's CSP, unlike style attributes). */
export function bar(percent: number, attrs: Attrs = {}): HTMLSpanElement {
  const fill = h('span', { class: 'bar-fill' });
  fill.style.width = `${Math.min(100, Math.max(0, percent)).toFixed(1)}%`;
  return h('span', { class: 'bar', ...attrs }, fill);
}
