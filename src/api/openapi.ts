/**
 * GET /openapi.json: the document @fastify/swagger builds from the route schemas, finished per
 * request with what it cannot know: `servers` (the configured public URL, else the URL this request
 * reached), and `requestBody.required: false` for routes whose body schema is optional (retry,
 * heartbeat, signal), which the plugin always marks required.
 */
import { OptionalKind, type TSchema } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { Api } from './app.ts';

interface Operation {
  requestBody?: { required?: boolean };
}
interface Document {
  servers?: { url: string; description?: string }[];
  paths?: Record<string, Record<string, Operation>>;
}

// A Host header is the client's text: only a plain host[:port] is echoed into the document.
const PLAIN_HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/** Registers the route hook; call before any route is added. Returns the document for a request. */
export function openApiDocuments(
  app: Api,
  publicUrl: string | undefined,
): (request: FastifyRequest) => Document {
  const optionalBodies: [string, string][] = [];
  app.addHook('onRoute', (route) => {
    const body = (route.schema as { body?: TSchema } | undefined)?.body;
    if (body?.[OptionalKind] !== 'Optional') return;
    const path = route.url.replace(/:(\w+)/g, '{$1}');
    for (const method of [route.method].flat()) optionalBodies.push([path, method.toLowerCase()]);
  });
  return (request) => {
    const doc = structuredClone(app.swagger()) as Document;
    for (const [path, method] of optionalBodies) {
      const body = doc.paths?.[path]?.[method]?.requestBody;
      if (body !== undefined) body.required = false;
    }
    const url =
      publicUrl ?? (PLAIN_HOST.test(request.host) ? `${request.protocol}://${request.host}` : undefined);
    doc.servers = url === undefined ? [{ url: '/' }] : [{ url: url.replace(/\/$/, '') }];
    return doc;
  };
}
