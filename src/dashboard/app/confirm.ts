/// <reference lib="dom" />
/**
 * Asks before an action that changes jobs or schedules: a modal dialog that says what will happen and
 * to how many rows. The dialog element traps focus and closes on Escape, and the safe choice has
 * the focus when it opens, so Enter never destroys anything by accident.
 */
import { h } from './dom.ts';

export function confirmAction(question: string, detail: string, action: string): Promise<boolean> {
  return new Promise((resolve) => {
    const keep = h('button', { type: 'button', class: 'secondary' }, 'Keep');
    const go = h('button', { type: 'button', class: 'danger' }, action);
    const dialog = h(
      'dialog',
      { class: 'confirm', 'aria-labelledby': 'confirm-h', 'aria-describedby': 'confirm-detail' },
      h('h2', { id: 'confirm-h' }, question),
      h('p', { id: 'confirm-detail' }, detail),
      h('div', { class: 'actions' }, keep, go),
    );
    const back = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    let answer = false;
    const close = (yes: boolean): void => {
      answer = yes;
      dialog.close();
    };
    keep.addEventListener('click', () => close(false));
    go.addEventListener('click', () => close(true));
    dialog.addEventListener('close', () => {
      dialog.remove();
      back?.focus();
      resolve(answer);
    });
    document.body.appendChild(dialog);
    dialog.showModal();
    keep.focus();
  });
}
