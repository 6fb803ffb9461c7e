/**
 * `npm run build` (run by `prepack`): the package a user installs. tsc compiles src/ to dist/ with
 * declarations and maps; the migrations and the dashboard's page, styles and bundled app are copied
 * beside the modules that read them, so dist/ runs on plain Node with nothing but the dependencies.
 */
import { spawnSync } from 'node:child_process';
import { chmod, copyFile, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { bundleApp } from '../src/dashboard/bundle.ts';

const DIST = 'dist';

function tsc(): void {
  const result = spawnSync(
    process.execPath,
    ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'],
    {
      stdio: 'inherit',
    },
  );
  if (result.status !== 0) throw new Error(`tsc failed (exit ${result.status ?? result.signal})`);
}

// tsc rewrites the sources' `./x.ts` imports to `./x.js` in JavaScript but not in declarations, and
// a consumer's TypeScript (older ones, or without allowImportingTsExtensions) needs the `.js` form.
const TS_SPECIFIER = /((?:from|import)\s*\(?\s*['"])(\.{1,2}\/[^'"]+)\.ts(['"])/g;

async function declarationsRewritten(dir: string): Promise<number> {
  let count = 0;
  for (const entry of await readdir(dir, { recursive: true })) {
    if (!entry.endsWith('.d.ts')) continue;
    const file = join(dir, entry);
    const text = await readFile(file, 'utf8');
    const rewritten = text.replace(TS_SPECIFIER, '$1$2.js$3');
    if (rewritten !== text) {
      await writeFile(file, rewritten);
      count++;
    }
  }
  return count;
}

async function copyInto(from: string, to: string, names: string[]): Promise<void> {
  await mkdir(to, { recursive: true });
  for (const name of names) await copyFile(join(from, name), join(to, name));
}

async function main(): Promise<void> {
  const started = performance.now();
  await rm(DIST, { recursive: true, force: true });
  tsc();
  const rewritten = await declarationsRewritten(DIST);
  const migrations = (await readdir('src/store/migrations')).filter((f) => f.endsWith('.sql'));
  await copyInto('src/store/migrations', join(DIST, 'store/migrations'), migrations);
  await copyInto('src/dashboard', join(DIST, 'dashboard'), ['index.html', 'style.css']);
  await writeFile(join(DIST, 'dashboard/app.js'), await bundleApp());
  await chmod(join(DIST, 'cli/bin.js'), 0o755);
  const ms = Math.round(performance.now() - started);
  process.stdout.write(
    `build: dist/ in ${ms} ms (${rewritten} declaration files' imports rewritten, ${migrations.length} migrations, dashboard bundled)\n`,
  );
}

await main();
