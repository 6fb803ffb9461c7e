#!/usr/bin/env node
/** The `tidemark` executable: the command line's exit code becomes the process's. */
import { main } from './main.ts';

process.exitCode = await main(process.argv.slice(2));
