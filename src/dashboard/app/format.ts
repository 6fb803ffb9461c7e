/** Times, durations and JSON as operators read them. Times show UTC, and the browser's local time. */

export function utc(iso: string | null): string {
  if (iso === null) return '—';
  return `${iso.slice(0, 19).replace('T', ' ')} UTC`;
}

const localFormat = new Intl.DateTimeFormat(undefined, {
  year: 'numeric',
  month: 'short',
  day: '2-digit',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  timeZoneName: 'short',
});

export function local(iso: string | null): string {
  if (iso === null) return '—';
  return localFormat.format(new Date(iso));
}

/** "1.2 s", "3 min 4 s", "2 h 5 min": precise enough to tell a slow job from a stuck one. */
export function duration(ms: number): string {
  if (!Number.isFinite(ms)) return '—';
  const abs = Math.abs(ms);
  if (abs < 1000) return `${Math.round(ms)} ms`;
  if (abs < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(abs / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  const m = Math.floor(s / 60);
  if (m < 48 * 60) return `${Math.floor(m / 60)} h ${m % 60} min`;
  return `${Math.floor(m / 1440)} d ${Math.floor((m % 1440) / 60)} h`;
}

export function ago(iso: string | null, now: number): string {
  if (iso === null) return '—';
  return `${duration(now - Date.parse(iso))} ago`;
}

export function json(value: unknown): string {
  return JSON.stringify(value, null, 2) ?? 'null';
}

export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

const zoneFormats = new Map<string, Intl.DateTimeFormat>();

/** "2026-12-03 09:00:00 GMT+5:30" in `timeZone`: a schedule's times as its own zone reads them. */
export function inZone(iso: string | null, timeZone: string): string {
  if (iso === null) return '—';
  let format = zoneFormats.get(timeZone);
  if (format === undefined) {
    format = new Intl.DateTimeFormat('en-CA', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      timeZoneName: 'short',
    });
    zoneFormats.set(timeZone, format);
  }
  const part = (parts: Intl.DateTimeFormatPart[], type: string) => parts.find((p) => p.type === type)?.value;
  const p = format.formatToParts(new Date(iso));
  return `${part(p, 'year')}-${part(p, 'month')}-${part(p, 'day')} ${part(p, 'hour')}:${part(p, 'minute')}:${part(p, 'second')} ${part(p, 'timeZoneName')}`;
}

/** The first line of an error, for a list; the whole text goes behind a disclosure. */
export function firstLine(text: string): string {
  const line = text.split('\n', 1)[0] ?? '';
  return line.length > 160 ? `${line.slice(0, 159)}…` : line;
}
