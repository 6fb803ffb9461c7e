/** `tidemark workflow submit|ls|show|cancel|resume|signal` over the HTTP API. */
import { readFile } from 'node:fs/promises';
import { parseIntOption, parseJsonOption, requireArg, type ApiClient } from './api-client.ts';
import { block, print, table } from './output.ts';
import { str, subcommands, type Sub } from './subcommands.ts';

interface Status {
  id: string;
  name: string;
  tenantId: string;
  state: string;
  nodeCount: number;
  nodes: Record<string, number>;
  error: string | null;
  startedAt: string;
  finishedAt: string | null;
  criticalPath: { node: string }[];
}

interface Summary {
  id: string;
  name: string;
  tenantId: string;
  state: string;
  nodeCount: number;
  unfinished: number;
  failedNodes: number;
  startedAt: string;
  finishedAt: string | null;
}

const transition = (verb: 'cancel' | 'resume'): Sub => ({
  usage: `${verb} <id>`,
  async run(api: ApiClient, args, v) {
    const id = requireArg(args, 0, 'workflow id');
    const r = await api.call<{ changed: boolean; state: string }>(
      'POST',
      `/v1/workflows/${encodeURIComponent(id)}/${verb}`,
    );
    print(v.json === true, r, () => `workflow ${id}: ${r.changed ? '' : 'unchanged, '}${r.state}\n`);
    return 0;
  },
});

export const command = subcommands('workflow', 'submit and manage workflows through the HTTP API', {
  submit: {
    usage: 'submit <file.json>',
    async run(api, args, v) {
      const file = requireArg(args, 0, 'workflow file');
      const spec = JSON.parse(await readFile(file, 'utf8')) as unknown;
      process.stderr.write(`submitting ${file}…\n`);
      const r = await api.call<{ id: string; created: boolean; nodes: number; edges: number }>(
        'POST',
        '/v1/workflows',
        spec,
      );
      print(
        v.json === true,
        r,
        () =>
          `workflow ${r.id}: ${r.created ? 'submitted' : 'already submitted'} (${r.nodes} nodes, ${r.edges} edges)\n`,
      );
      return 0;
    },
  },
  ls: {
    usage: 'ls [--tenant T] [--state running|succeeded|failed|cancelled] [--limit N] [--after CURSOR]',
    options: {
      tenant: { type: 'string' },
      state: { type: 'string' },
      limit: { type: 'string' },
      after: { type: 'string' },
    },
    async run(api, _args, v) {
      const q = new URLSearchParams();
      const tenant = str(v, 'tenant');
      if (tenant !== undefined) q.set('tenantId', tenant);
      for (const name of ['state', 'after'] as const) {
        const value = str(v, name);
        if (value !== undefined) q.set(name, value);
      }
      const limit = parseIntOption('limit', str(v, 'limit'));
      if (limit !== undefined) q.set('limit', String(limit));
      const page = await api.call<{ items: Summary[]; next: string | null }>(
        'GET',
        `/v1/workflows?${q.toString()}`,
      );
      print(
        v.json === true,
        page,
        () =>
          table(
            ['id', 'name', 'tenant', 'state', 'nodes', 'unfinished', 'failed', 'started', 'finished'],
            page.items.map((w) => [
              w.id,
              w.name,
              w.tenantId,
              w.state,
              w.nodeCount,
              w.unfinished,
              w.failedNodes,
              w.startedAt,
              w.finishedAt,
            ]),
          ) + (page.next === null ? '' : `more: --after ${page.next}\n`),
      );
      return 0;
    },
  },
  show: {
    usage: 'show <id>',
    async run(api, args, v) {
      const s = await api.call<Status>(
        'GET',
        `/v1/workflows/${encodeURIComponent(requireArg(args, 0, 'workflow id'))}`,
      );
      print(
        v.json === true,
        s,
        () =>
          block([
            ['id', s.id],
            ['name', s.name],
            ['tenant', s.tenantId],
            ['state', s.state],
            ['nodes', s.nodeCount],
            ['started', s.startedAt],
            ['finished', s.finishedAt],
            ['error', s.error],
            ['critical path', s.criticalPath.map((p) => p.node).join(' → ') || null],
          ]) + `\n${table(Object.keys(s.nodes), [Object.values(s.nodes)])}`,
      );
      return 0;
    },
  },
  cancel: transition('cancel'),
  resume: transition('resume'),
  signal: {
    usage: 'signal <id> <name> [--payload JSON]',
    options: { payload: { type: 'string' } },
    async run(api, args, v) {
      const id = requireArg(args, 0, 'workflow id');
      const name = requireArg(args, 1, 'signal name');
      const r = await api.call<{ accepted: boolean; completed: number }>(
        'POST',
        `/v1/workflows/${encodeURIComponent(id)}/signals/${encodeURIComponent(name)}`,
        { payload: parseJsonOption('payload', str(v, 'payload')) },
      );
      print(v.json === true, r, () =>
        r.accepted
          ? `signal ${name}: accepted, ${r.completed} node(s) completed\n`
          : `signal ${name}: already received earlier\n`,
      );
      return 0;
    },
  },
});
