/// <reference lib="dom" />
/**
 * Labelled form fields whose errors show next to them: the API names each bad value
 * (`body.maxAttempts`), and the reason goes under that field, tied to it with aria-describedby and
 * aria-invalid so a screen reader reads it when the field has the focus.
 */
import { h } from './dom.ts';

export interface FieldProblem {
  field: string;
  reason: string;
}

/** A label, the input, an optional hint and an (empty, hidden) error line under them. */
export function labelledField(input: HTMLInputElement, label: string, hint?: string): HTMLElement {
  const id = input.id;
  const described = [hint === undefined ? null : `${id}-hint`, `${id}-error`].filter((x) => x !== null);
  input.setAttribute('aria-describedby', described.join(' '));
  return h(
    'div',
    { class: 'field' },
    h('label', { for: id }, label),
    input,
    hint === undefined ? null : h('small', { id: `${id}-hint` }, hint),
    h('p', { id: `${id}-error`, class: 'field-error', hidden: true }),
  );
}

export function fieldErrorsClear(inputs: Iterable<HTMLInputElement>): void {
  for (const input of inputs) {
    input.removeAttribute('aria-invalid');
    const slot = document.getElementById(`${input.id}-error`);
    if (slot !== null) {
      slot.textContent = '';
      slot.hidden = true;
    }
  }
}

/**
 * Shows each problem under the input it names (`${prefix}${name}`, the inputs keyed by name) and
 * moves the focus to the first bad one. Returns the problems no input here matches.
 */
export function fieldErrorsShow(
  inputs: Record<string, HTMLInputElement>,
  problems: readonly FieldProblem[],
  prefix: string,
): FieldProblem[] {
  const unmatched: FieldProblem[] = [];
  let first: HTMLInputElement | undefined;
  for (const p of problems) {
    const input = p.field.startsWith(prefix) ? inputs[p.field.slice(prefix.length)] : undefined;
    const slot = input === undefined ? null : document.getElementById(`${input.id}-error`);
    if (input === undefined || slot === null) {
      unmatched.push(p);
      continue;
    }
    input.setAttribute('aria-invalid', 'true');
    slot.textContent = p.reason;
    slot.hidden = false;
    first ??= input;
  }
  first?.focus();
  return unmatched;
}

/** A submitted form's text fields, trimmed; '' for one that is missing or not text. */
export function formTexts(form: HTMLFormElement): (key: string) => string {
  const data = new FormData(form);
  return (key) => {
    const value = data.get(key);
    return typeof value === 'string' ? value.trim() : '';
  };
}
