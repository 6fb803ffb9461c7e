/**
 * The in-memory due indexes against a model: a plain map of live entries scanned in full. Random
 * interleavings of set, delete and popDue (fast-check) must give the same batches as the scan.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { compareEntries, type DueEntry, type DueIndex } from '../../src/scheduler/due-index.ts';
import { HeapDueIndex } from '../../src/scheduler/heap-index.ts';
import { WheelDueIndex } from '../../src/scheduler/wheel-index.ts';

const START = 1_700_000_000_000;

type Op =
  | { op: 'set'; id: number; dueOffset: number; version: number }
  | { op: 'delete'; id: number }
  | { op: 'pop'; advance: number; limit: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant('set' as const),
      id: fc.integer({ min: 0, max: 30 }),
      // Mostly near, sometimes far beyond the wheel's top level (64^5 × 10 ms ≈ 12 days), sometimes past.
      dueOffset: fc.oneof(
        fc.integer({ min: -5_000, max: 120_000 }),
        fc.integer({ min: 0, max: 40 * 86_400_000 }),
      ),
      version: fc.integer({ min: 1, max: 4 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ op: fc.constant('delete' as const), id: fc.integer({ min: 0, max: 30 }) }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('pop' as const),
      advance: fc.oneof(fc.integer({ min: 0, max: 3_000 }), fc.integer({ min: 0, max: 20 * 86_400_000 })),
      limit: fc.integer({ min: 1, max: 8 }),
    }),
  },
);

function runAgainstModel(make: () => DueIndex, ops: Op[]): void {
  const index = make();
  const model = new Map<string, DueEntry>();
  let now = START;
  for (const o of ops) {
    if (o.op === 'set') {
      const entry = { id: `s${o.id}`, dueMs: now + o.dueOffset, version: o.version };
      index.set(entry);
      model.set(entry.id, entry);
    } else if (o.op === 'delete') {
      index.delete(`s${o.id}`);
      model.delete(`s${o.id}`);
    } else {
      now += o.advance;
      if (index.peekDue !== undefined) {
        // Peeking ahead sees exactly the live entries due by then, and takes nothing out.
        const horizon = now + 60_000;
        const ahead = [...model.values()].filter((e) => e.dueMs <= horizon).sort(compareEntries);
        assert.deepEqual(index.peekDue(horizon, 1_000).sort(compareEntries), ahead);
        const some = index.peekDue(horizon, 2);
        assert.equal(some.length, Math.min(2, ahead.length));
        for (const e of some) assert.ok(ahead.includes(model.get(e.id)!));
      }
      const expected = [...model.values()]
        .filter((e) => e.dueMs <= now)
        .sort(compareEntries)
        .slice(0, o.limit);
      for (const e of expected) model.delete(e.id);
      const got = index.popDue(now, o.limit);
      assert.ok(Array.isArray(got));
      assert.deepEqual(got, expected);
    }
  }
  assert.equal(index.size, model.size);
}

test('heap: popDue returns exactly the live due entries, earliest first, never a cancelled or superseded one', () => {
  fc.assert(
    fc.property(fc.array(opArb, { maxLength: 200 }), (ops) => runAgainstModel(() => new HeapDueIndex(), ops)),
    { numRuns: 300 },
  );
});

test('timing wheel: same as the model at 10 ms and at 1 s resolution, across cascades and far entries', () => {
  for (const resolutionMs of [10, 1000]) {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 200 }), (ops) =>
        runAgainstModel(() => new WheelDueIndex({ startMs: START, resolutionMs }), ops),
      ),
      { numRuns: 300 },
    );
  }
});

test('an entry cancelled while it sits in a wheel bucket and in the heap never comes out', () => {
  const heap = new HeapDueIndex();
  const wheel = new WheelDueIndex({ startMs: START });
  for (const index of [heap, wheel]) {
    index.set({ id: 'keep', dueMs: START + 500, version: 1 });
    index.set({ id: 'paused', dueMs: START + 500, version: 1 });
    index.set({ id: 'edited', dueMs: START + 500, version: 1 });
    index.delete('paused');
    index.set({ id: 'edited', dueMs: START + 90_000, version: 2 });
    assert.deepEqual(
      index.popDue(START + 60_000, 10).map((e) => e.id),
      ['keep'],
      index.kind,
    );
    assert.deepEqual(index.popDue(START + 90_000, 10), [{ id: 'edited', dueMs: START + 90_000, version: 2 }]);
  }
});
