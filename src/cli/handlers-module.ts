/**
 * Loads the module named by `--handlers`: its default export maps job kinds to handler functions.
 * JavaScript (.js, .mjs, .cjs) loads as Node loads it, in ESM and CommonJS projects alike. TypeScript
 * (.ts, .mts, .cts) loads through Node's own type stripping where it has it (22.18 and later, 24),
 * and otherwise through tsx when the handlers' project has it installed; the package itself ships
 * JavaScript only, so neither is needed to run `.js` handlers.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, extname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Handler, Handlers } from '../worker/handler.ts';
import { UsageError } from './usage-error.ts';

const JAVASCRIPT = new Set(['.js', '.mjs', '.cjs']);
const TYPESCRIPT = new Set(['.ts', '.mts', '.cts']);

export async function handlersLoad(path: string): Promise<Handlers> {
  const file = resolve(path);
  const extension = extname(file);
  if (!JAVASCRIPT.has(extension) && !TYPESCRIPT.has(extension)) {
    throw new UsageError(
      `--handlers: ${path}: a handlers module ends in .js, .mjs, .cjs, .ts, .mts or .cts, not '${extension}'`,
    );
  }
  let module: unknown;
  try {
    module =
      TYPESCRIPT.has(extension) && !nodeStripsTypes()
        ? await tsxImport(file)
        : await import(pathToFileURL(file).href);
  } catch (error) {
    throw error instanceof UsageError ? error : loadFailure(path, error);
  }
  return handlersOf(module, path);
}

/** Whether this Node runs TypeScript files itself (unflagged from 22.18 and 23.6). */
function nodeStripsTypes(): boolean {
  const typescript = (process.features as { typescript?: unknown }).typescript;
  return typescript === 'strip' || typescript === 'transform';
}

/** Imports a TypeScript file through the tsx installed beside it; says what to do when there is none. */
async function tsxImport(file: string): Promise<unknown> {
  let manifest: string;
  try {
    manifest = createRequire(file).resolve('tsx/package.json');
  } catch {
    throw new UsageError(
      `--handlers: ${file}: Node ${process.version} can not run TypeScript by itself; install tsx in that project (npm install --save-dev tsx), run Node 22.18 or later, or point --handlers at compiled JavaScript`,
    );
  }
  // The ES module build of tsx's API: its CommonJS build's tsImport fails when loaded from ESM.
  const { exports } = JSON.parse(await readFile(manifest, 'utf8')) as {
    exports?: Record<string, { import?: string | { default?: string } }>;
  };
  const entry = exports?.['./esm/api']?.import;
  const target = typeof entry === 'string' ? entry : entry?.default;
  if (target === undefined)
    throw new UsageError(`--handlers: ${file}: the tsx at ${manifest} has no ESM API`);
  const { tsImport } = (await import(pathToFileURL(join(dirname(manifest), target)).href)) as {
    tsImport: (specifier: string, parent: string) => Promise<unknown>;
  };
  return tsImport(pathToFileURL(file).href, import.meta.url);
}

/** Node's message, and for ESM syntax in a file Node took as CommonJS, how to say which it is. */
function loadFailure(path: string, error: unknown): UsageError {
  const message = error instanceof Error ? error.message : String(error);
  const esmAsCommonJs = error instanceof SyntaxError && /\b(export|import)\b/.test(message);
  const hint = esmAsCommonJs
    ? ' (ES module syntax in a file its package.json makes CommonJS: name it .mjs, or set "type": "module")'
    : '';
  return new UsageError(`--handlers: can not load ${path}: ${message}${hint}`, { cause: error });
}

/**
 * The default export as a map of functions. A CommonJS module's `module.exports` arrives as the
 * default; one compiled from `export default` (exports.default with __esModule) is unwrapped once.
 */
function handlersOf(module: unknown, path: string): Handlers {
  let handlers = (module as { default?: unknown }).default;
  if (isObject(handlers) && handlers.__esModule === true && isObject(handlers.default))
    handlers = handlers.default;
  if (!isObject(handlers)) {
    throw new UsageError(`--handlers: ${path} must default-export an object of job kind → handler function`);
  }
  const kinds = Object.entries(handlers);
  if (kinds.length === 0) throw new UsageError(`--handlers: ${path}: the default export names no job kind`);
  for (const [kind, fn] of kinds) {
    if (typeof fn !== 'function') throw new UsageError(`--handlers: ${path}: '${kind}' is not a function`);
  }
  return handlers as Record<string, Handler>;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}
