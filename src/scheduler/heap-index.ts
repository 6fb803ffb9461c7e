/**
 * The heap due index: a binary min-heap of (due time, id, version) with lazy deletion. Cancels and
 * edits only update the live map (O(1)); stale entries are dropped as they reach the top, and the
 * heap is rebuilt from the live map when stale ones outnumber live ones, so memory stays O(live).
 */
import { compareEntries, LiveEntries, type DueEntry, type DueIndex } from './due-index.ts';

export class HeapDueIndex implements DueIndex {
  readonly kind = 'heap';
  #heap: DueEntry[] = [];
  readonly #live = new LiveEntries();

  get size(): number {
    return this.#live.size;
  }

  set(entry: DueEntry): void {
    this.#live.set(entry);
    this.#push(entry);
    this.#compactIfMostlyStale();
  }

  delete(id: string): void {
    this.#live.delete(id);
    this.#compactIfMostlyStale();
  }

  popDue(nowMs: number, limit: number): DueEntry[] {
    const out: DueEntry[] = [];
    while (out.length < limit) {
      const top = this.#heap[0];
      if (top === undefined || top.dueMs > nowMs) break;
      this.#pop();
      if (this.#live.take(top)) out.push(top);
    }
    return out;
  }

  /** Earliest live due time, or null; stale tops are dropped on the way. */
  nextDueMs(): number | null {
    for (;;) {
      const top = this.#heap[0];
      if (top === undefined) return null;
      if (this.#live.isLive(top)) return top.dueMs;
      this.#pop();
    }
  }

  peekDue(byMs: number, limit: number): DueEntry[] {
    // Every node is due no earlier than its parent, so a subtree whose root is due after byMs holds
    // nothing due by then: the walk visits only the entries it returns and their direct children.
    const out: DueEntry[] = [];
    const heap = this.#heap;
    const stack = [0];
    while (out.length < limit) {
      const i = stack.pop();
      if (i === undefined) break;
      const entry = heap[i];
      if (entry === undefined || entry.dueMs > byMs) continue;
      if (this.#live.isLive(entry)) out.push(entry);
      stack.push(2 * i + 2, 2 * i + 1);
    }
    return out;
  }

  clear(): void {
    this.#heap = [];
    this.#live.clear();
  }

  #compactIfMostlyStale(): void {
    // Rebuilding is O(n); doing it only when over half the slots are stale keeps it amortised O(1).
    if (this.#heap.length > 1024 && this.#heap.length > 2 * this.#live.size) {
      this.#heap = [...this.#live.values()].sort(compareEntries);
    }
  }

  #push(entry: DueEntry): void {
    const heap = this.#heap;
    let i = heap.length;
    heap.push(entry);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = heap[parent] as DueEntry;
      if (compareEntries(p, entry) <= 0) break;
      heap[i] = p;
      i = parent;
    }
    heap[i] = entry;
  }

  #pop(): void {
    const heap = this.#heap;
    const last = heap.pop();
    if (last === undefined || heap.length === 0) return;
    const n = heap.length;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      let c = l;
      if (r < n && compareEntries(heap[r] as DueEntry, heap[l] as DueEntry) < 0) c = r;
      const child = heap[c] as DueEntry;
      if (compareEntries(last, child) <= 0) break;
      heap[i] = child;
      i = c;
    }
    heap[i] = last;
  }
}
