/** The Fastify instance type every route module is written against (TypeBox-typed requests). */
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyServerOptions,
  type RawReplyDefaultExpression,
  type RawRequestDefaultExpression,
  type RawServerDefault,
} from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';

import { MAX_PARAM_LENGTH, handleError } from './errors.ts';

// Spelled out rather than inferred: the inferred type names Fastify's namespace, which a consumer's
// TypeScript under moduleResolution "bundler" can not resolve from the published declarations.
export type Api = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

export function createApp(options: FastifyServerOptions): Api {
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
