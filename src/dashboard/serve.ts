/**
 * Serves the dashboard at `/` from the API server: index.html, style.css, and app.js — the
 * TypeScript under app/ bundled in memory by esbuild on first use (at start under `tidemark dev`) and kept for the process's life.
 *
 * Why TypeScript built at run time rather than hand-written JS or committed output: the page is
 * type-checked and linted with the rest of the code (typed lint would refuse stray .js files), no
 * built file can drift from its source, and esbuild already ships with tsx. Bundling the ~15 small
 * modules takes tens of milliseconds once (printed by the e2e test as `bundle:`), and one file
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
import { build } from 'esbuild';
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

export async function bundleApp(): Promise<{ code: string; ms: number }> {
  const started = performance.now();
  const result = await build({
    entryPoints: [here('./app/main.ts')],
    bundle: true,
    write: false,
    format: 'esm',
    target: 'es2022',
    minify: true,
    legalComments: 'none',
    logLevel: 'silent',
  });
  const code = result.outputFiles[0]?.text;
  if (code === undefined) throw new Error('esbuild produced no output for the dashboard');
  return { code, ms: performance.now() - started };
}

async function loadAssets(): Promise<{ assets: Map<string, Asset>; bundleMs: number }> {
  const [html, css, app] = await Promise.all([
    readFile(here('./index.html'), 'utf8'),
    readFile(here('./style.css'), 'utf8'),
    bundleApp(),
  ]);
  const assets = new Map([
    ['/', asset(html, 'text/html; charset=utf-8')],
    ['/dashboard/style.css', asset(css, 'text/css; charset=utf-8')],
    ['/dashboard/app.js', asset(app.code, 'text/javascript; charset=utf-8')],
  ]);
  return { assets, bundleMs: app.ms };
}

// One build per process, shared by every server in it: the files are the same for all. Built on
// first use, so processes that never show the page never pay for the bundle; a failed build is
// retried on the next use rather than cached.
let built: Promise<{ assets: Map<string, Asset>; bundleMs: number }> | undefined;

function assetsBuilt(): Promise<{ assets: Map<string, Asset>; bundleMs: number }> {
  built ??= loadAssets().catch((error: unknown) => {
    built = undefined;
    throw new Error('dashboard assets could not be built', { cause: error });
  });
  return built;
}

/**
 * Builds the assets now instead of on the first request, which otherwise waits for esbuild (1.8–2.3 s
 * cold against 0.2–0.4 s warm, loaded 2-core machine). Resolves with the bundle's build time.
 */
export async function dashboardWarm(): Promise<number> {
  return (await assetsBuilt()).bundleMs;
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
