#!/usr/bin/env node
// The installed entry point: TypeScript sources run through tsx's loader, so there is no build step
// between a change and a running process.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
