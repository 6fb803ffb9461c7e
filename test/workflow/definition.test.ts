import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  validateWorkflow,
  WorkflowValidationError,
  type WorkflowSpec,
} from '../../src/workflow/definition.ts';

const gen = (): string => 'generated-id';
const validate = (spec: unknown, maxNodes?: number) => validateWorkflow(spec, { maxNodes, generateId: gen });

function rejects(spec: unknown, field: string, reason: RegExp, maxNodes?: number): void {
  assert.throws(
    () => validate(spec, maxNodes),
    (e: unknown) => {
      assert.ok(e instanceof WorkflowValidationError, String(e));
      assert.equal(e.fields[0]?.field, field);
      assert.match(e.message, reason);
      return true;
    },
  );
}

test('a cycle is rejected with the nodes of one cycle in order, closing on the first', () => {
  rejects(
    {
      nodes: [
        { id: 'start', kind: 'k' },
        { id: 'a', kind: 'k', dependsOn: ['start', 'c'] },
        { id: 'b', kind: 'k', dependsOn: ['a'] },
        { id: 'c', kind: 'k', dependsOn: ['b'] },
        { id: 'after', kind: 'k', dependsOn: ['c'] },
      ],
    },
    'nodes',
    /cycle: a -> b -> c -> a$/,
  );
  rejects({ nodes: [{ id: 'x', kind: 'k', dependsOn: ['x'] }] }, 'nodes.0.dependsOn.0', /cycle: x -> x/);
});

test('a cycle deep inside a large acyclic graph is still found and named', () => {
  const nodes: WorkflowSpec['nodes'] = Array.from({ length: 5000 }, (_, i) => ({
    id: `n${i}`,
    kind: 'k',
    dependsOn: i === 0 ? [] : [`n${i - 1}`],
  }));
  (nodes[2000] as { dependsOn: string[] }).dependsOn.push('n2002');
  rejects({ nodes }, 'nodes', /cycle: n2000 -> n2001 -> n2002 -> n2000$/);
});

test('duplicate ids, dangling dependencies and bad fields name the field and the reason', () => {
  rejects(
    {
      nodes: [
        { id: 'a', kind: 'k' },
        { id: 'a', kind: 'k' },
      ],
    },
    'nodes.1.id',
    /'a' is also the id of nodes\.0$/,
  );
  rejects(
    { nodes: [{ id: 'a', kind: 'k', dependsOn: ['nope'] }] },
    'nodes.0.dependsOn.0',
    /'nope' is not a node/,
  );
  rejects({ nodes: [] }, 'nodes', /non-empty/);
  rejects({ nodes: [{ id: 'a' }] }, 'nodes.0.kind', /non-empty string/);
  rejects({ nodes: [{ id: 'a', kind: 'k', retries: -1 }] }, 'nodes.0.retries', /0 to 100/);
  rejects({ nodes: [{ id: 'a', kind: 'k', queue: 'bad queue' }] }, 'nodes.0.queue', /not a queue name/);
  rejects({ nodes: [{ id: 'a', kind: 'k', timeoutMs: 0 }] }, 'nodes.0.timeoutMs', /positive integer/);
  rejects({ nodes: [{ id: 'a', type: 'timer' }] }, 'nodes.0.type', /'job' or 'signal'/);
  rejects({ nodes: [{ id: 'a', type: 'signal' }] }, 'nodes.0.signal', /non-empty/);
  rejects(
    { nodes: [{ id: 'a', type: 'signal', signal: 's', onTimeout: 'default' }] },
    'nodes.0.onTimeout',
    /needs timeoutMs/,
  );
  rejects({ failurePolicy: 'retry', nodes: [{ id: 'a', kind: 'k' }] }, 'failurePolicy', /fail_fast/);
  rejects({ tenantId: 'Bad Tenant', nodes: [{ id: 'a', kind: 'k' }] }, 'tenantId', /not a tenant id/);
});

test('the size limit defaults to 100,000 nodes and is configurable', () => {
  const nodes = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `n${i}`, kind: 'k' }));
  assert.equal(validate({ nodes: nodes(100_000) }).nodes.length, 100_000);
  rejects({ nodes: nodes(100_001) }, 'nodes', /100001 nodes exceed the limit of 100000/);
  rejects({ nodes: nodes(11) }, 'nodes', /11 nodes exceed the limit of 10/, 10);
});

test('defaults: generated id, 3 retries (4 attempts), default queue; a repeated dependency counts once', () => {
  const w = validate({
    nodes: [
      { id: 'a', kind: 'k' },
      { id: 'b', kind: 'k', dependsOn: ['a', 'a'] },
    ],
  });
  assert.equal(w.id, 'generated-id');
  assert.equal(w.failurePolicy, 'fail_fast');
  assert.equal(w.nodes[0]?.maxAttempts, 4);
  assert.equal(w.nodes[0]?.queue, 'default');
  assert.deepEqual(w.nodes[1]?.parents, [0]);
  assert.equal(w.edgeCount, 1);
  const again = validate({
    nodes: [
      { id: 'a', kind: 'k' },
      { id: 'b', kind: 'k', dependsOn: ['a'] },
    ],
  });
  assert.equal(again.sha256, w.sha256, 'the same definition hashes the same');
  const other = validate({
    nodes: [
      { id: 'a', kind: 'k' },
      { id: 'b', kind: 'k2', dependsOn: ['a'] },
    ],
  });
  assert.notEqual(other.sha256, w.sha256);
});
