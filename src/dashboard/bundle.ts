/**
 * Bundles the dashboard's TypeScript (app/) into one ES module with esbuild. The published package
 * ships the result as dist/dashboard/app.js (scripts/build.ts); a checkout running its sources
 * bundles on first use instead, so a page edit is seen on the next start without a build step.
 * esbuild is a development dependency: an installed package never reaches this file.
 */
import { fileURLToPath } from 'node:url';

export const APP_ENTRY = fileURLToPath(new URL('./app/main.ts', import.meta.url));

export async function bundleApp(): Promise<string> {
  const { build } = await import('esbuild');
  const result = await build({
    entryPoints: [APP_ENTRY],
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
  return code;
}
