/// <reference lib="dom" />
/**
 * Asks before an action that changes jobs, schedules or queues: a modal dialog that says what will
 * happen and to how many rows. The dialog keeps the focus inside it (Tab and Shift+Tab wrap round),
 * closes on Escape, and hands the focus back to what had it when it opened. The safe choice has the
 * focus when it opens, so Enter never destroys anything by accident.
 */
import { h } from './dom.ts';

const FOCUSABLE =
  'a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), summary, [tabindex]:not([tabindex="-1"])';

/**
 * Tab from the last control goes to the first and Shift+Tab from the first to the last. A modal
 * dialog already makes the page behind it inert, but without this Tab leaves the document for the
 * browser's own toolbar before it comes back.
 */
export function trapFocus(dialog: HTMLDialogElement): void {
  dialog.addEventListener('keydown', (event) => {
    if (event.key !== 'Tab') return;
    const items = Array.from(dialog.querySelectorAll<HTMLElement>(FOCUSABLE)).filter(
      (el) => el.getClientRects().length > 0,
    );
    const first = items[0];
    const last = items.at(-1);
    if (first === undefined || last === undefined) return;
    const active = document.activeElement;
    if (event.shiftKey && (active === first || !dialog.contains(active))) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && (active === last || !dialog.contains(active))) {
      event.preventDefault();
      first.focus();
    }
  });
}

/**
 * Opens `dialog` as a modal on top of the page; when it closes (a button, Escape) it is removed and
 * the focus goes back to the element that had it before, or to `back` when given.
 */
export function openModal(dialog: HTMLDialogElement, onClose: () => void, back?: HTMLElement): void {
  const returnTo = back ?? (document.activeElement instanceof HTMLElement ? document.activeElement : null);
  trapFocus(dialog);
  dialog.addEventListener('close', () => {
    dialog.remove();
    returnTo?.focus();
    onClose();
  });
  document.body.appendChild(dialog);
  dialog.showModal();
}

let dialogs = 0;

export function confirmAction(question: string, detail: string | Node, action: string): Promise<boolean> {
  return new Promise((resolve) => {
    const id = `confirm-${++dialogs}`;
    const keep = h('button', { type: 'button', class: 'secondary' }, 'Keep');
    const go = h('button', { type: 'button', class: 'danger' }, action);
    const dialog = h(
      'dialog',
      { class: 'confirm', 'aria-labelledby': `${id}-h`, 'aria-describedby': `${id}-detail` },
      h('h2', { id: `${id}-h` }, question),
      typeof detail === 'string'
        ? h('p', { id: `${id}-detail` }, detail)
        : h('div', { id: `${id}-detail` }, detail),
      h('div', { class: 'actions' }, keep, go),
    );
    let answer = false;
    const close = (yes: boolean): void => {
      answer = yes;
      dialog.close();
    };
    keep.addEventListener('click', () => close(false));
    go.addEventListener('click', () => close(true));
    openModal(dialog, () => resolve(answer));
    keep.focus();
  });
}
