/**
 * What the test suite needs besides Node and PostgreSQL: Debian's `faketime` (the clock failure
 * tests move a process's clock), `chromium` (the dashboard's browser tests) and `prometheus` (its
 * promtool checks /metrics and the example alert rules). `npm test` installs
 * the missing ones where it can (root with apt-get), as it starts PostgreSQL where none is given;
 * anywhere else it stops at once with the one command that installs them.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';

interface Tool {
  package: string;
  for: string;
  present(): boolean;
}

function onPath(command: string): boolean {
  return (process.env.PATH ?? '').split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, command), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

const TOOLS: Tool[] = [
  { package: 'faketime', for: 'clock failure tests', present: () => onPath('faketime') },
  { package: 'chromium', for: 'dashboard browser tests', present: () => existsSync('/usr/bin/chromium') },
  {
    package: 'prometheus',
    for: 'promtool, which checks /metrics and the alert rules',
    present: () => onPath('promtool'),
  },
];

/** Installs what is missing, or throws a message naming it and the command that installs it. */
export function testToolsProvision(log: (line: string) => void): void {
  const missing = TOOLS.filter((tool) => !tool.present());
  if (missing.length === 0) return;
  const packages = missing.map((tool) => tool.package);
  const what = missing.map((tool) => `${tool.package} (${tool.for})`).join(', ');
  if (process.getuid?.() !== 0 || !onPath('apt-get')) {
    throw new Error(
      `npm test needs ${what}, not installed here. Install with:\n  sudo apt-get install -y ${packages.join(' ')}`,
    );
  }
  log(`test: installing ${what} with apt-get`);
  const apt = (args: string[]): void => {
    const result = spawnSync('apt-get', args, {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
    if (result.status !== 0) throw new Error(`apt-get ${args.join(' ')} failed (exit ${result.status})`);
  };
  apt(['update', '-qq']);
  // Fonts: a bare container has none, and the dashboard's screenshots would show boxes.
  apt(['install', '-y', '-qq', '--no-install-recommends', ...packages, 'fonts-dejavu-core']);
  const still = missing.filter((tool) => !tool.present());
  if (still.length > 0)
    throw new Error(`apt-get installed ${packages.join(' ')}, yet ${still[0]?.package} is missing`);
}
