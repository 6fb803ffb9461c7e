/** `tidemark workers ls`: the worker registry over the HTTP API (admin token). */
import { print, table } from './output.ts';
import { subcommands } from './subcommands.ts';

interface WorkerJson {
  id: string;
  host: string;
  pid: number;
  version: string;
  startedAt: string;
  heartbeatAt: string;
  stoppedAt: string | null;
  state: string;
  queues: { name: string; concurrency: number; running: number }[];
  running: { jobId: number; queue: string; kind: string }[];
}

export const command = subcommands('workers', 'worker processes and what each runs now (HTTP API)', {
  ls: {
    usage: 'ls   (running, then lost, then stopped; RUNNING lists the jobs each holds)',
    async run(api, _args, v) {
      const page = await api.call<{ workers: WorkerJson[] }>('GET', '/v1/workers');
      print(v.json === true, page, () =>
        table(
          ['id', 'state', 'host', 'pid', 'version', 'slots', 'heartbeat', 'running'],
          page.workers.map((w) => [
            w.id,
            w.state,
            w.host,
            w.pid,
            w.version,
            w.queues.map((q) => `${q.name} ${q.running}/${q.concurrency}`).join(' '),
            w.heartbeatAt,
            w.running.map((j) => `${j.jobId}:${j.kind}`).join(' '),
          ]),
        ),
      );
      return 0;
    },
  },
});
