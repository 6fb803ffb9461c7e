/**
 * A schedule to register or edit: the one schema the client, `POST`/`PATCH /v1/schedules` and
 * `tidemark schedule add` check, with the same field paths and messages. On the wire `anchor` is
 * RFC 3339 text; the client also takes a Date.
 */
import { Type, type Static } from '@sinclair/typebox';
import { payloadJsonText, textProblem, type InputProblem } from '../input.ts';
import { compileChecker } from './check.ts';
import {
  DateTime,
  MaxAttempts,
  Name,
  NonNegativeInt4,
  PositiveInt4,
  Priority,
  TenantId,
  targetFields,
} from './fields.ts';

export const ScheduleTargetSchema = Type.Object(
  {
    ...targetFields('each occurrence POSTs the payload here'),
    payload: Type.Optional(Type.Unknown()),
    priority: Type.Optional(Priority),
    maxAttempts: Type.Optional(Type.Union([MaxAttempts, Type.Null()])),
    timeoutMs: Type.Optional(Type.Union([PositiveInt4('deadline per attempt'), Type.Null()])),
  },
  { additionalProperties: false },
);

const Misfire = Type.Object(
  {
    policy: Type.Optional(Type.Union([Type.Literal('all'), Type.Literal('latest'), Type.Literal('skip')])),
    cap: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000 })),
    startingDeadlineMs: Type.Optional(
      Type.Union([PositiveInt4('late occurrences past this are missed'), Type.Null()]),
    ),
  },
  { additionalProperties: false },
);

const common = {
  name: Name,
  spec: Type.String({
    minLength: 1,
    maxLength: 500,
    description: 'cron, `every 90s`, `at 2026-01-01T09:00`, or a phrase such as "every weekday at 9am"',
  }),
  timeZone: Type.Optional(
    Type.String({ minLength: 1, maxLength: 100, description: 'IANA zone, default UTC' }),
  ),
  dstGap: Type.Optional(Type.Union([Type.Literal('shift'), Type.Literal('skip')])),
  dstOverlap: Type.Optional(Type.Union([Type.Literal('first'), Type.Literal('both'), Type.Null()])),
  misfire: Type.Optional(Misfire),
  overlap: Type.Optional(
    Type.Union([
      Type.Literal('allow'),
      Type.Literal('forbid'),
      Type.Literal('replace'),
      Type.Literal('buffer_one'),
    ]),
  ),
  jitterMs: Type.Optional(NonNegativeInt4('random delay added to each fire time')),
  anchor: Type.Optional(
    DateTime('intervals count from this instant (default: creation, on the database clock)'),
  ),
  paused: Type.Optional(Type.Boolean()),
};

export const ScheduleCreateSchema = Type.Object(
  { ...common, target: ScheduleTargetSchema, tenantId: Type.Optional(TenantId) },
  { additionalProperties: false },
);
/** Every field optional; `target` and `misfire` are merged into the current ones field by field. */
export const SchedulePatchSchema = Type.Partial(Type.Object({ ...common, target: ScheduleTargetSchema }), {
  additionalProperties: false,
});

/** A backfill: the schedule's fire times in [from, to) to decide now (client.schedules.backfill). */
export const ScheduleBackfillSchema = Type.Object(
  {
    from: DateTime('the range starts here: fire times at or after this instant'),
    to: DateTime('the range ends here, exclusive; not after now'),
    dryRun: Type.Optional(
      Type.Boolean({ description: 'only count what a backfill would create and find, writing nothing' }),
    ),
  },
  { additionalProperties: false },
);

/** A schedule, its edit and its target as the API receives them (`anchor` as text). */
export type ScheduleTargetBody = Static<typeof ScheduleTargetSchema>;
export type ScheduleBody = Static<typeof ScheduleCreateSchema>;
export type SchedulePatchBody = Static<typeof SchedulePatchSchema>;

/**
 * What `client.schedules.create` takes: the API's body, with `anchor` as a Date or RFC 3339 text.
 * The target gives `kind` (a handler) or `url` (a push target, POSTed the payload each occurrence).
 */
export type ScheduleInput = Omit<ScheduleBody, 'anchor'> & { anchor?: Date | string };
/** What `client.schedules.update` takes: any fields of ScheduleInput but the tenant. */
export type ScheduleUpdate = Omit<SchedulePatchBody, 'anchor'> & { anchor?: Date | string };

export type ScheduleBackfillBody = Static<typeof ScheduleBackfillSchema>;
/** What `client.schedules.backfill` takes: the API's body, the instants as Dates or RFC 3339 text. */
export type ScheduleBackfillInput = Omit<ScheduleBackfillBody, 'from' | 'to'> & {
  from: Date | string;
  to: Date | string;
};

const createChecker = compileChecker(ScheduleCreateSchema);
const backfillChecker = compileChecker(ScheduleBackfillSchema);
const patchChecker = compileChecker(SchedulePatchSchema);

function withAnchorText<T extends { anchor?: Date | string }>(input: T): unknown {
  if (typeof input !== 'object' || input === null || !(input.anchor instanceof Date)) return input;
  if (Number.isNaN(input.anchor.getTime())) return { ...input, anchor: 'Invalid Date' };
  return { ...input, anchor: input.anchor.toISOString() };
}

/** The problems of a new schedule from the client, or the wire form it checked. */
export function scheduleCreateChecked(input: ScheduleInput): ScheduleBody | InputProblem[] {
  const wire = withAnchorText(input);
  if (!createChecker.check(wire)) return createChecker.problems(wire, '');
  return wire;
}

const instantText = (v: unknown): unknown =>
  v instanceof Date ? (Number.isNaN(v.getTime()) ? 'Invalid Date' : v.toISOString()) : v;

/** The problems of a backfill range from the client, or the wire form it checked. */
export function scheduleBackfillChecked(input: ScheduleBackfillInput): ScheduleBackfillBody | InputProblem[] {
  const wire: unknown =
    typeof input === 'object' && input !== null
      ? { ...input, from: instantText(input.from), to: instantText(input.to) }
      : input;
  if (!backfillChecker.check(wire)) return backfillChecker.problems(wire, '');
  return wire;
}

/** The problems of an edit from the client, or the wire form it checked. */
export function schedulePatchChecked(patch: ScheduleUpdate): SchedulePatchBody | InputProblem[] {
  const wire = withAnchorText(patch);
  if (!patchChecker.check(wire)) return patchChecker.problems(wire, '');
  return wire;
}

/**
 * A patch's target over the current one, field by field; naming `kind` or `url` drops the other,
 * so an edit can switch a schedule between a handler and a push target.
 */
export function targetMerge(
  current: ScheduleTargetBody,
  patch: ScheduleTargetBody | undefined,
): ScheduleTargetBody {
  if (patch === undefined) return current;
  const { kind, url, ...rest } = current;
  const switched = patch.kind !== undefined || patch.url !== undefined ? rest : { ...rest, kind, url };
  return { ...switched, ...patch };
}

/**
 * What the schema cannot express, on a complete schedule (after a patch is merged): exactly one of
 * target.kind and target.url, and the text checks the API's JSON parser makes on a body (NUL,
 * unpaired surrogates, nesting), which the client does on the strings and the payload's JSON text.
 */
export function scheduleRuleProblems(s: Omit<ScheduleBody, 'tenantId'>): InputProblem[] {
  const problems: InputProblem[] = [];
  const t = s.target;
  if ((t.kind === undefined) === (t.url === undefined)) {
    problems.push({
      field: 'target.kind',
      reason: 'give exactly one of kind (a handler) and url (a push target)',
    });
  }
  for (const [field, value] of [
    ['name', s.name],
    ['spec', s.spec],
    ['timeZone', s.timeZone],
    ['target.kind', t.kind],
    ['target.url', t.url],
  ] as const) {
    const reason = value === undefined ? undefined : textProblem(value);
    if (reason !== undefined) problems.push({ field, reason });
  }
  const payload = payloadJsonText(t.payload ?? {});
  if ('problem' in payload) problems.push({ field: 'target.payload', reason: payload.problem });
  return problems;
}
