/**
 * Serves the dashboard at `/` from the API server: index.html, style.css, and app.js, the TypeScript
 * under app/ as one bundle. The package ships that bundle beside this file (built by scripts/build.ts);
 * a checkout running its sources has none there and bundles app/ on first use (bundle.ts). One file
 * saves the browser a waterfall of module requests.
 *
 * The pages need no authentication to load: they hold no data, and every API call they make carries
 * the signed-in token. A strict Content-Security-Policy allows only this origin's scripts, styles
 * and API, so an injected string (a job's error text, say) could not run even if it reached the DOM
 * as markup, which dom.ts never lets it.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Api } from '../api/app.ts';

const here = (file: string): string => fileURLToPath(new URL(file, import.meta.url));

interface Asset {
  body: string;
  type: string;
  etag: string;
}

const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

function asset(body: string, type: string): Asset {
  return { body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` };
}

/** The shipped bundle, or (in a checkout, where there is none) one made now from app/. */
async function appCode(): Promise<string> {
  try {
    return await readFile(here('./app.js'), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    return (await import('./bundle.ts')).bundleApp();
  }
}

async function loadAssets(): Promise<{ assets: Map<string, Asset>; ms: number }> {
  const started = performance.now();
  const [html, css, app] = await Promise.all([
    readFile(here('./index.html'), 'utf8'),
    readFile(here('./style.css'), 'utf8'),
    appCode(),
  ]);
  const assets = new Map([
    ['/', asset(html, 'text/html; charset=utf-8')],
    ['/dashboard/style.css', asset(css, 'text/css; charset=utf-8')],
    ['/dashboard/app.js', asset(app, 'text/javascript; charset=utf-8')],
  ]);
  return { assets, ms: performance.now() - started };
}

// One load per process, shared by every server in it: the files are the same for all. Loaded on
// first use, so processes that never show the page never pay for it; a failure is retried on the
// next use rather than cached.
let built: Promise<{ assets: Map<string, Asset>; ms: number }> | undefined;

function assetsBuilt(): Promise<{ assets: Map<string, Asset>; ms: number }> {
  built ??= loadAssets().catch((error: unknown) => {
    built = undefined;
    throw new Error('dashboard assets could not be loaded', { cause: error });
  });
  return built;
}

/**
 * Loads the assets now instead of on the first request, which in a checkout otherwise waits for
 * esbuild (about 2 s cold on a loaded 2-core machine). Resolves with the milliseconds it took.
 */
export async function dashboardWarm(): Promise<number> {
  return (await assetsBuilt()).ms;
}

/** Registers `/`, `/dashboard/app.js` and `/dashboard/style.css`; a RouteModule for src/api/routes/index.ts. */
export function dashboardRoutes(app: Api): void {
  const serve = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const path = request.routeOptions.url ?? '/';
    const found = (await assetsBuilt()).assets.get(path);
    if (found === undefined) throw new Error(`no dashboard asset for ${path}`);
    void reply.headers(SECURITY_HEADERS);
    // Revalidate every time: a 304 costs one round trip, and a new build is seen at once.
    void reply.header('cache-control', 'no-cache').header('etag', found.etag);
    if (request.headers['if-none-match'] === found.etag) return reply.status(304).send();
    return reply.type(found.type).send(found.body);
  };
  const options = { config: { auth: false }, schema: { hide: true } };
  for (const path of ['/', '/dashboard/app.js', '/dashboard/style.css']) app.get(path, options, serve);
}
