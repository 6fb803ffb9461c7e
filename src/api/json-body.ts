/**
 * The JSON body parser every route shares, in place of Fastify's: the one place a request body
 * becomes a value. It refuses, naming the field, what no schema check can see and PostgreSQL would
 * fail on: text with a NUL or an unpaired surrogate anywhere (payloads included), nesting deeper
 * than MAX_JSON_DEPTH, and `__proto__` keys. The size limit is Fastify's `bodyLimit` (413).
 * An empty body is no body, so routes whose body is optional (retry, heartbeat, signal) take one;
 * a literal `null` is refused.
 */
import type { FastifyInstance } from 'fastify';
import { jsonProblems } from '../input.ts';
import { badRequest } from './errors.ts';

export function useJsonBodyParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, text, done) => {
    const source = typeof text === 'string' ? text : text.toString('utf8');
    if (source.trim() === '') {
      done(null, undefined);
      return;
    }
    let value: unknown;
    try {
      value = JSON.parse(source);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      done(badRequest([{ field: 'body', reason: `is not valid JSON: ${reason}` }], { cause: error }));
      return;
    }
    // Every body the API takes is an object; a literal null would pass an optional body's schema
    // check as if no body were sent.
    if (value === null) {
      done(badRequest([{ field: 'body', reason: 'must be an object, not null (or send no body)' }]));
      return;
    }
    const problems = jsonProblems(value, 'body');
    if (problems.length > 0) {
      done(badRequest(problems));
      return;
    }
    done(null, value);
  });
}
