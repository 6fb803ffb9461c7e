/** The Fastify instance type every route module is written against (TypeBox-typed requests). */
import Fastify, { LogController, type FastifyServerOptions } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';

import { MAX_PARAM_LENGTH, handleError } from './errors.ts';

export function createApp(options: FastifyServerOptions) {
  // Per-request log lines would double the work of a hot route; errors are logged by the handler.
  const logController = new LogController({ disableRequestLogging: true });
  return Fastify({
    ...options,
    logController,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // The router's own refusals (bad percent-encoding, an over-long segment) get the one error shape.
    frameworkErrors: handleError,
  }).withTypeProvider<TypeBoxTypeProvider>();
}

export type Api = ReturnType<typeof createApp>;
