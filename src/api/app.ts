/** The Fastify instance type every route module is written against (TypeBox-typed requests). */
import Fastify, { LogController, type FastifyServerOptions } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';

import { handleError } from './errors.ts';

/**
 * Longest path segment the router accepts, as sent (percent-encoded): a 200-character workflow id
 * or signal name of 3-byte characters is 1,800. Longer ones are a 400 naming `params`; the
 * parameter's schema bounds the decoded length.
 */
export const MAX_PARAM_LENGTH = 2048;

export function createApp(options: FastifyServerOptions) {
  // Per-request log lines would double the work of a hot route; errors are logged by the handler.
  const logController = new LogController({ disableRequestLogging: true });
  return Fastify({
    ...options,
    logController,
    maxParamLength: MAX_PARAM_LENGTH,
    // The router's own refusals (bad percent-encoding, an over-long segment) get the one error shape.
    frameworkErrors: handleError,
  }).withTypeProvider<TypeBoxTypeProvider>();
}

export type Api = ReturnType<typeof createApp>;
