/**
 * Reading a running job: its progress (any JSON the handler heartbeats) and whether it looks stuck.
 *
 * Progress conventions understood: a number 0–100; `{ percent }` or `{ pct }`; `{ done, total }`;
 * and a `message` (or `msg`, `status`) string, or a bare string. Anything else is shown as JSON.
 */
import type { Job } from './types.ts';

export interface ProgressView {
  percent: number | null;
  message: string | null;
  /** Progress that fits no convention, shown as it is. */
  raw: string | null;
}

function num(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

const clamp = (p: number) => Math.min(100, Math.max(0, p));

export function progressView(progress: unknown): ProgressView {
  if (progress === null || progress === undefined) return { percent: null, message: null, raw: null };
  if (typeof progress === 'number') return { percent: clamp(progress), message: null, raw: null };
  if (typeof progress === 'string') return { percent: null, message: progress, raw: null };
  if (typeof progress !== 'object' || Array.isArray(progress)) {
    return { percent: null, message: null, raw: JSON.stringify(progress) };
  }
  const p = progress as Record<string, unknown>;
  let percent = num(p.percent) ?? num(p.pct);
  const done = num(p.done);
  const total = num(p.total);
  if (percent === null && done !== null && total !== null && total > 0) percent = (done / total) * 100;
  const text = [p.message, p.msg, p.status].find((v): v is string => typeof v === 'string') ?? null;
  if (percent === null && text === null)
    return { percent: null, message: null, raw: JSON.stringify(progress) };
  return { percent: percent === null ? null : clamp(percent), message: text, raw: null };
}

export interface HeartbeatView {
  /** Since the last heartbeat (or the start, before the first one). */
  ageMs: number;
  /** How often a heartbeat is due: the job's heartbeatMs, or a third of its lease (the worker renews at that rate). */
  expectedMs: number;
  stuck: boolean;
  leaseExpired: boolean;
}

const FALLBACK_EXPECTED_MS = 10_000;

/**
 * A running job looks stuck when two heartbeats in a row are overdue: one late renewal is a busy
 * event loop or a slow database round trip; two mean the worker is blocked, gone or cut off, and the
 * reaper will take the job back when its lease runs out.
 */
export function heartbeatView(job: Job, now: number): HeartbeatView | null {
  if (job.state !== 'running') return null;
  const last = job.heartbeatAt ?? job.startedAt;
  if (last === null) return null;
  const lastMs = Date.parse(last);
  const leaseMs = job.leaseExpiresAt === null ? null : Date.parse(job.leaseExpiresAt) - lastMs;
  const expectedMs =
    job.heartbeatMs ?? (leaseMs !== null && leaseMs > 0 ? leaseMs / 3 : FALLBACK_EXPECTED_MS);
  const ageMs = Math.max(0, now - lastMs);
  const leaseExpired = job.leaseExpiresAt !== null && Date.parse(job.leaseExpiresAt) < now;
  return { ageMs, expectedMs, stuck: ageMs > 2 * expectedMs || leaseExpired, leaseExpired };
}
