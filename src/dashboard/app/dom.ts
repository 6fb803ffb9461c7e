/// <reference lib="dom" />
/**
 * A few DOM helpers. Every value from the API reaches the page as a text node or an attribute,
 * never as HTML, so a job's error text or a schedule's name cannot inject markup.
 *
 * Pages that poll build their view afresh each time and hand it to `update`, which changes only the
 * nodes that differ: an element the operator has focused, a text selection, a checkbox ticked or a
 * field half typed stay where they are when the data beside them moves.
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
    if (typeof value === 'function') listen(el, name.replace(/^on/, ''), value);
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

/**
 * Each element's handlers, by event type. The element listens once per type through this table, so
 * `update` can hand a kept element the handlers of its new version (closed over the new data).
 */
const HANDLERS = new WeakMap<Element, Map<string, EventListener>>();

function listen(el: Element, type: string, handler: EventListener): void {
  let table = HANDLERS.get(el);
  if (table === undefined) HANDLERS.set(el, (table = new Map<string, EventListener>()));
  if (!table.has(type)) el.addEventListener(type, (event) => HANDLERS.get(el)?.get(type)?.(event));
  table.set(type, handler);
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

/**
 * Makes a region's content equal to `children` by changing only what differs. Children with a
 * `data-key` attribute (table rows) are matched by key, so a row added above does not turn the
 * focused row's button into another job's button; the rest are matched by position and tag.
 */
export function update(region: Element, ...children: (Child | Child[])[]): void {
  const fresh = document.createDocumentFragment();
  append(fresh, children);
  morphChildren(region, Array.from(fresh.childNodes));
}

const keyOf = (node: Node): string | null => (node instanceof Element ? node.getAttribute('data-key') : null);

function morphChildren(parent: Element, wanted: Node[]): void {
  const keyed = new Map<string, Element>();
  const wantedKeys = new Set(wanted.map(keyOf).filter((k): k is string => k !== null));
  for (const child of Array.from(parent.childNodes)) {
    const key = keyOf(child);
    if (key === null) continue;
    // Removed first, so the kept ones never move to close a gap (moving a focused node blurs it).
    if (wantedKeys.has(key) && !keyed.has(key)) keyed.set(key, child as Element);
    else child.remove();
  }
  wanted.forEach((next, i) => {
    const current = parent.childNodes[i] ?? null;
    const key = keyOf(next);
    const match = key === null ? null : (keyed.get(key) ?? null);
    if (match !== null) {
      if (match !== current) parent.insertBefore(match, current);
      morph(match, next);
    } else if (key === null && current !== null && keyOf(current) === null && sameKind(current, next)) {
      morph(current, next);
    } else {
      parent.insertBefore(next, current);
    }
  });
  while (parent.childNodes.length > wanted.length) parent.lastChild?.remove();
}

/** Whether a details element is open is the operator's choice, not the data's. */
function userOwned(el: Element, attribute: string): boolean {
  return attribute === 'open' && el.tagName === 'DETAILS';
}

function sameKind(a: Node, b: Node): boolean {
  return a.nodeType === b.nodeType && a.nodeName === b.nodeName;
}

function morph(current: Node, next: Node): void {
  if (!(current instanceof Element) || !(next instanceof Element)) {
    if (current.nodeValue !== next.nodeValue) current.nodeValue = next.nodeValue;
    return;
  }
  for (const { name } of Array.from(current.attributes)) {
    if (!next.hasAttribute(name) && !userOwned(current, name)) current.removeAttribute(name);
  }
  for (const { name, value } of Array.from(next.attributes)) {
    if (current.getAttribute(name) === value || userOwned(current, name)) continue;
    // The page's CSP refuses style attributes; the CSSOM is allowed (see bar()).
    if (name === 'style' && current instanceof HTMLElement && next instanceof HTMLElement)
      current.style.cssText = next.style.cssText;
    else current.setAttribute(name, value);
  }
  for (const [type, handler] of HANDLERS.get(next) ?? []) listen(current, type, handler);
  morphChildren(current, Array.from(next.childNodes));
}

/**
 * A table with a caption (for screen readers) and column headers, text or an element (a checkbox
 * that selects every row); rows are arrays of cells.
 */
export function table(
  caption: string,
  headers: Child[],
  rows: Child[][],
  attrs: Attrs = {},
  /** One per row, for `update` to match rows by (a job's id, a schedule's id). */
  keys: string[] = [],
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
        headers.map((header) => h('th', { scope: 'col' }, header)),
      ),
    ),
    h(
      'tbody',
      {},
      rows.map((cells, i) =>
        h(
          'tr',
          { 'data-key': keys[i] },
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
