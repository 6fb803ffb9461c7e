/**
 * `--handlers` modules in every form a user writes: .js, .mjs, .cjs, .ts, .mts and .cts, in an ES
 * module project, a CommonJS project and a folder with no package.json; and the refusals, each
 * naming the file and the reason. The consumer test (scripts/consumer-test.ts) runs handlers through
 * the installed package on plain Node 20, 22 and 24, where no tsx is loaded.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, test } from 'node:test';
import { handlersLoad } from '../../src/cli/handlers-module.ts';

const REPO_MODULES = fileURLToPath(new URL('../../node_modules', import.meta.url));

const SOURCES: Record<string, string> = {
  js: "export default { hello: async () => 'js' };\n",
  mjs: "export default { hello: async () => 'mjs' };\n",
  cjs: "module.exports = { hello: async () => 'cjs' };\n",
  ts: "const handlers: Record<string, () => Promise<string>> = { hello: async () => 'ts' };\nexport default handlers;\n",
  mts: "const handlers: Record<string, () => Promise<string>> = { hello: async () => 'mts' };\nexport default handlers;\n",
  cts: "const handlers: Record<string, () => Promise<string>> = { hello: async () => 'cts' };\nmodule.exports = handlers;\n",
};

async function tempRoot(withTsx: boolean): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'tidemark-handlers-'));
  after(() => rm(root, { recursive: true, force: true }));
  // tsx beside the projects, as a user's TypeScript project has it (Node 20 needs it for .ts).
  if (withTsx) await symlink(REPO_MODULES, join(root, 'node_modules'));
  return root;
}

async function project(root: string, name: string, manifest: object | undefined): Promise<string> {
  const dir = join(root, name);
  await mkdir(dir);
  if (manifest !== undefined) await writeFile(join(dir, 'package.json'), JSON.stringify(manifest));
  for (const [extension, source] of Object.entries(SOURCES)) {
    // One base name per form: this process runs under tsx, which would take handlers.js to handlers.ts.
    await writeFile(join(dir, `${extension}-handlers.${extension}`), source);
  }
  return dir;
}

test('every module form loads in an ES module project, a CommonJS project and a bare folder', async () => {
  const root = await tempRoot(true);
  const kinds = { esm: { type: 'module' }, commonjs: { type: 'commonjs' }, bare: undefined };
  for (const [name, manifest] of Object.entries(kinds)) {
    await project(root, name, manifest);
    for (const extension of Object.keys(SOURCES)) {
      // ESM syntax in a .js that "type": "commonjs" makes CommonJS is refused by plain Node (the
      // consumer test checks its message); this process runs under tsx, which would accept it.
      if (name === 'commonjs' && extension === 'js') continue;
      const file = `${name}/${extension}-handlers.${extension}`;
      const hello = (await handlersLoad(join(root, file))).hello;
      assert.equal(typeof hello, 'function', file);
      assert.equal(await (hello as () => Promise<string>)(), extension, file);
    }
  }
});

test('TypeScript without tsx beside it: loaded by a Node that strips types, else refused saying what to install', async () => {
  const dir = await project(await tempRoot(false), 'esm', { type: 'module' });
  const stripsTypes = Boolean((process.features as { typescript?: unknown }).typescript);
  if (stripsTypes) {
    assert.equal(typeof (await handlersLoad(join(dir, 'ts-handlers.ts'))).hello, 'function');
    return;
  }
  await assert.rejects(handlersLoad(join(dir, 'ts-handlers.ts')), (error: Error) => {
    assert.match(error.message, /ts-handlers\.ts: Node v\d+.* can not run TypeScript by itself; install tsx/);
    return true;
  });
});

test('a module that is not a map of handler functions is refused, naming the file and the reason', async () => {
  const root = await tempRoot(false);
  const cases: [string, string, RegExp][] = [
    ['none.mjs', 'export const hello = () => 1;\n', /none\.mjs must default-export an object/],
    ['empty.mjs', 'export default {};\n', /empty\.mjs: the default export names no job kind/],
    ['number.mjs', 'export default { hello: 42 };\n', /number\.mjs: 'hello' is not a function/],
    ['broken.mjs', 'export default {\n', /can not load .*broken\.mjs/],
    ['throws.mjs', "throw new Error('boom at load');\n", /can not load .*throws\.mjs: boom at load/],
    [
      'handlers.json',
      '{}',
      /handlers\.json: a handlers module ends in \.js, \.mjs, \.cjs, \.ts, \.mts or \.cts/,
    ],
  ];
  for (const [file, source, expected] of cases) {
    await writeFile(join(root, file), source);
    await assert.rejects(handlersLoad(join(root, file)), (error: Error) => {
      assert.match(error.message, expected);
      return true;
    });
  }
  await assert.rejects(handlersLoad(join(root, 'missing.js')), /can not load .*missing\.js/);
});
