/** The public surface of `import … from 'tidemark'`. */
export { Client, type ClientOptions } from './client.ts';
export { FakeClock, systemClock, type Clock } from './clock.ts';
