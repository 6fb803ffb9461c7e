/**
 * Bounded concurrency per target host: one slow or overloaded host holds at most `perHost`
 * requests, and its queue never delays deliveries to other hosts.
 */
export class HostLimiter {
  readonly #perHost: number;
  readonly #active = new Map<string, number>();
  readonly #waiting = new Map<string, (() => void)[]>();

  constructor(perHost: number) {
    this.#perHost = perHost;
  }

  /**
   * Resolves with a release function once the host has a free slot; rejects with the signal's reason
   * if it fires first (a cancelled or timed-out job stops waiting and takes no slot).
   */
  async acquire(host: string, signal: AbortSignal): Promise<() => void> {
    signal.throwIfAborted();
    const active = this.#active.get(host) ?? 0;
    if (active < this.#perHost) {
      this.#active.set(host, active + 1);
    } else {
      await new Promise<void>((resolve, reject) => {
        const queue = this.#waiting.get(host) ?? [];
        const granted = (): void => {
          signal.removeEventListener('abort', aborted);
          resolve();
        };
        const aborted = (): void => {
          const i = queue.indexOf(granted);
          if (i >= 0) queue.splice(i, 1);
          reject(signal.reason as Error);
        };
        signal.addEventListener('abort', aborted, { once: true });
        queue.push(granted);
        this.#waiting.set(host, queue);
      });
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiting.get(host)?.shift();
      // The slot passes straight to the next waiter, so the count stays at the limit.
      if (next !== undefined) return next();
      const left = (this.#active.get(host) ?? 1) - 1;
      if (left === 0) this.#active.delete(host);
      else this.#active.set(host, left);
      this.#waiting.delete(host);
    };
  }
}
