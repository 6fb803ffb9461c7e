/**
 * /openapi.json as real tools read it: @apidevtools/swagger-parser validates it (schema and
 * references), @redocly/cli lints it with its recommended rules and must find no error, every
 * operation has an operationId and a summary, optional bodies are not marked required, and
 * `servers` names where the API was reached (or the configured public URL).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import SwaggerParser from '@apidevtools/swagger-parser';
import { startTestApi } from './support.ts';

const api = await startTestApi();

interface Operation {
  operationId?: string;
  summary?: string;
  requestBody?: { required?: boolean };
}
interface Document {
  servers: { url: string }[];
  paths: Record<string, Record<string, Operation>>;
}

async function document(): Promise<Document> {
  const reply = await api.call<Document>('GET', '/openapi.json', { token: null });
  assert.equal(reply.status, 200);
  return reply.body;
}

test('swagger-parser validates the document', async () => {
  const doc = await document();
  const validated = await SwaggerParser.validate(structuredClone(doc) as never);
  console.log(`swagger-parser: valid, ${Object.keys(validated.paths ?? {}).length} paths`);
});

test('every operation has a unique operationId and a summary; only needed bodies are required', async () => {
  const doc = await document();
  const ids = new Set<string>();
  const optional: string[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      assert.ok(op.operationId, `${method} ${path} has an operationId`);
      assert.ok(!ids.has(op.operationId), `${op.operationId} is unique`);
      ids.add(op.operationId);
      assert.ok(op.summary, `${method} ${path} has a summary`);
      if (op.requestBody?.required === false) optional.push(`${method.toUpperCase()} ${path}`);
    }
  }
  assert.deepEqual(optional.sort(), [
    'POST /v1/jobs/{id}/heartbeat',
    'POST /v1/jobs/{id}/retry',
    'POST /v1/workflows/{id}/signals/{name}',
  ]);
  // What the document says is what the server does: those three take a request without a body.
  const job = await api.call<{ id: number }>('POST', '/v1/jobs', { body: { kind: 'k' } });
  await api.call('POST', `/v1/jobs/${job.body.id}/cancel`);
  const retry = await fetch(`${api.url}/v1/jobs/${job.body.id}/retry`, {
    method: 'POST',
    headers: { authorization: `Bearer ${api.tokens.admin}` },
  });
  assert.equal(retry.status, 200, await retry.text());
});

test('servers: the URL the request reached, or the configured public URL', async () => {
  assert.deepEqual((await document()).servers, [{ url: api.url }]);
  const behindProxy = await startTestApi({ publicUrl: 'https://jobs.example.test/' });
  const reply = await behindProxy.call<Document>('GET', '/openapi.json', { token: null });
  assert.deepEqual(reply.body.servers, [{ url: 'https://jobs.example.test' }]);
  // A Host header that is not a plain host[:port] is not echoed into the document.
  const hostile = await new Promise<string>((resolve, reject) => {
    const req = request(`${api.url}/openapi.json`, { headers: { host: 'evil.test/"><script>' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve(text));
    });
    req.on('error', reject);
    req.end();
  });
  assert.deepEqual((JSON.parse(hostile) as Document).servers, [{ url: '/' }]);
});

test('redocly lint (recommended rules) finds no error', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tidemark-openapi-'));
  const file = join(dir, 'openapi.json');
  writeFileSync(file, JSON.stringify(await document(), null, 2));
  const run = spawnSync('npx', ['--no-install', 'redocly', 'lint', '--format', 'stylish', file], {
    encoding: 'utf8',
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
  });
  const output = `${run.stdout}${run.stderr}`;
  console.log(
    `redocly lint: exit ${run.status}\n${output
      .split('\n')
      .filter((l) => /error|warning|valid|Woohoo|⚠|✖|validated/i.test(l))
      .join('\n')}`,
  );
  assert.equal(run.status, 0, output);
});
