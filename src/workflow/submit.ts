/**
 * Submission: validate first (nothing is written for an invalid workflow), then one transaction of
 * a few statements whatever the size: the workflow row, a block of node ids, every node with its
 * children's ids (one COPY), and the jobs of the nodes with no dependencies.
 */
import { randomUUID } from 'node:crypto';
import type { PoolClient } from '../store/pool.ts';
import { workflowNodeInsertMany } from '../store/workflow-nodes.ts';
import { workflowStart } from '../store/workflow-release.ts';
import { workflowGet, workflowInsert } from '../store/workflows.ts';
import { validateWorkflow, workflowInvalid, type WorkflowSpec } from './definition.ts';

export interface SubmitOptions {
  /** Largest workflow accepted (default 100,000 nodes). */
  maxNodes?: number;
}

export interface SubmitResult {
  id: string;
  /** False when a workflow with this id and the same definition already existed: nothing was written. */
  created: boolean;
  nodes: number;
  edges: number;
}

function isForeignKeyViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === '23503';
}

/** Submits in the caller's transaction. */
export async function workflowSubmitTx(
  tx: Pick<PoolClient, 'query'>,
  spec: WorkflowSpec,
  options: SubmitOptions = {},
): Promise<SubmitResult> {
  const w = validateWorkflow(spec, { maxNodes: options.maxNodes, generateId: randomUUID });
  const result = { id: w.id, nodes: w.nodes.length, edges: w.edgeCount };
  let inserted: boolean;
  try {
    inserted = await workflowInsert(tx, {
      id: w.id,
      tenantId: w.tenantId,
      name: w.name,
      failurePolicy: w.failurePolicy,
      sha256: w.sha256,
      nodeCount: w.nodes.length,
    });
  } catch (error) {
    if (isForeignKeyViolation(error)) {
      throw workflowInvalid('tenantId', `no tenant '${w.tenantId}'`, { cause: error });
    }
    throw error;
  }
  if (!inserted) {
    const existing = await workflowGet(tx, w.id);
    if (existing?.definition_sha256 !== w.sha256) {
      throw workflowInvalid('id', `workflow '${w.id}' already exists with a different definition`);
    }
    return { ...result, created: false };
  }
  const roots = await workflowNodeInsertMany(tx, w.id, w.nodes, w.children, w.heights);
  await workflowStart(tx, w.id, roots);
  return { ...result, created: true };
}
