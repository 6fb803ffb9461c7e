/**
 * The worker sends a job's success to its workflow's completion lane by the workflow id in the
 * job's key (store/job-key.ts); any other key is a plain job's.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { workflowJobKeyNodeId, workflowJobKeyWorkflowId } from '../../src/store/job-key.ts';

test('the workflow and node ids are read from a node job key, colons in the workflow id included', () => {
  assert.equal(workflowJobKeyWorkflowId('workflow:nightly:42:1'), 'nightly');
  assert.equal(workflowJobKeyNodeId('workflow:nightly:42:1'), 42);
  assert.equal(workflowJobKeyNodeId('workflow:etl:2026-12-04T00:00:00Z:7:3'), 7);
  assert.equal(workflowJobKeyWorkflowId('workflow:etl:2026-12-04T00:00:00Z:7:3'), 'etl:2026-12-04T00:00:00Z');
});

test('keys of another form name no workflow', () => {
  for (const key of [
    'job-17-0123456789abcdef',
    'occurrence:3f1c2a4e-8b7d-4c6a-9e2f-1a2b3c4d5e6f:2026-12-04T00:00:00.000Z',
    'workflow:nightly:42',
    'workflow::42:1',
    'workflow:nightly:0:1',
    'my-workflow:nightly:42:1',
  ]) {
    assert.equal(workflowJobKeyWorkflowId(key), undefined, key);
    assert.equal(workflowJobKeyNodeId(key), undefined, key);
  }
});
