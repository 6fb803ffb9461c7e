/// <reference lib="dom" />
/**
 * The filter row above a list (jobs, workflows): labelled fields and a Filter button that puts the
 * chosen values into the page's hash route, so a filtered list can be bookmarked and reloaded.
 */
import { h } from './dom.ts';
import type { PageContext } from './page.ts';

/** A select of `values` with a first option for "no filter". */
export function choice(
  id: string,
  name: string,
  none: string,
  values: readonly string[],
  selected: string,
): HTMLSelectElement {
  return h(
    'select',
    { id, name },
    h('option', { value: '' }, none),
    values.map((v) => h('option', { value: v, selected: v === selected }, v)),
  );
}

/** The tenant filter, for an admin token only: a tenant token sees its own tenant and no other. */
export function tenantChoice(ctx: PageContext, id: string, selected: string): HTMLSelectElement | null {
  return ctx.session.admin ? choice(id, 'tenantId', 'all', ctx.session.tenants, selected) : null;
}

export function filterForm(
  label: string,
  fields: [string, HTMLInputElement | HTMLSelectElement | null][],
  apply: () => void,
): HTMLElement {
  return h(
    'form',
    {
      class: 'filters',
      role: 'search',
      'aria-label': label,
      onsubmit: (event: Event) => {
        event.preventDefault();
        apply();
      },
    },
    fields.flatMap(([text, field]) => (field === null ? [] : [h('label', { for: field.id }, text), field])),
    h('button', { type: 'submit' }, 'Filter'),
  );
}
