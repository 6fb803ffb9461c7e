/**
 * A TCP proxy a test puts between a process and PostgreSQL to partition it: `cut()` stops forwarding
 * in both directions (bytes are held, connections stay open, as in a network partition where
 * packets are delayed, not refused), `heal()` delivers everything held, in order, and then closes
 * the server side of connections whose client has gone (after a second, so the server can answer).
 * `delivered` records the client→server bytes that were held during the cut and `lateAnswers` what
 * the server replied to them on connections whose client had gone, so a test can see which
 * statements arrived late and what the database made of them.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import { after } from 'node:test';

interface Pair {
  client: Socket;
  server: Socket;
  toServer: Buffer[];
  toClient: Buffer[];
  clientGone: boolean;
}

export class TcpProxy {
  readonly #server: Server;
  readonly #pairs = new Set<Pair>();
  #cut = false;
  #cutOn: Buffer | null = null;
  /** Client→server bytes that were held during a cut and delivered by heal(). */
  delivered = Buffer.alloc(0);
  /** Server→proxy bytes on connections whose client left during the cut, after heal(). */
  lateAnswers = Buffer.alloc(0);
  port = 0;

  private constructor(upstreamHost: string, upstreamPort: number) {
    this.#server = createServer((client) => {
      const server = connect(upstreamPort, upstreamHost);
      const pair: Pair = { client, server, toServer: [], toClient: [], clientGone: false };
      this.#pairs.add(pair);
      client.on('data', (chunk: Buffer) => {
        if (this.#cutOn !== null && chunk.includes(this.#cutOn)) {
          this.#cutOn = null;
          this.#cut = true;
        }
        if (this.#cut) pair.toServer.push(chunk);
        else server.write(chunk);
      });
      server.on('data', (chunk: Buffer) => {
        if (this.#cut) pair.toClient.push(chunk);
        else if (!pair.clientGone) client.write(chunk);
        else this.lateAnswers = Buffer.concat([this.lateAnswers, chunk]);
      });
      const clientClosed = (): void => {
        pair.clientGone = true;
        if (!this.#cut) {
          server.end();
          this.#pairs.delete(pair);
        }
      };
      client.on('close', clientClosed);
      client.on('error', () => undefined);
      server.on('error', () => client.destroy());
      server.on('close', () => {
        if (!this.#cut) {
          client.destroy();
          this.#pairs.delete(pair);
        }
      });
    });
  }

  static async start(upstreamUrl: string): Promise<TcpProxy> {
    const url = new URL(upstreamUrl);
    const proxy = new TcpProxy(url.hostname, Number(url.port || 5432));
    await new Promise<void>((done) => proxy.#server.listen(0, '127.0.0.1', done));
    const address = proxy.#server.address();
    if (address === null || typeof address === 'string') throw new Error('proxy has no port');
    proxy.port = address.port;
    after(() => proxy.close());
    return proxy;
  }

  /** `upstreamUrl` with its host and port replaced by the proxy's. */
  urlFor(upstreamUrl: string): string {
    const url = new URL(upstreamUrl);
    url.hostname = '127.0.0.1';
    url.port = String(this.port);
    return url.toString();
  }

  cut(): void {
    this.#cut = true;
  }

  /** Whether bytes are being held now (after cut(), or once cutOn's marker arrived). */
  get isCut(): boolean {
    return this.#cut;
  }

  /**
   * Cuts as the next client→server chunk holding `marker` (a statement's name) arrives, and holds
   * that chunk: the statement is surely in flight, where a cut at a moment of the test's choosing
   * caught whatever the process sent then (on a loaded machine, a lease renewal).
   */
  cutOn(marker: string): void {
    this.#cutOn = Buffer.from(marker, 'latin1');
  }

  heal(): void {
    this.#cut = false;
    for (const pair of this.#pairs) {
      for (const chunk of pair.toServer) {
        this.delivered = Buffer.concat([this.delivered, chunk]);
        pair.server.write(chunk);
      }
      pair.toServer = [];
      if (!pair.clientGone) for (const chunk of pair.toClient) pair.client.write(chunk);
      pair.toClient = [];
      if (pair.clientGone) {
        setTimeout(() => pair.server.end(), 1000);
        this.#pairs.delete(pair);
      }
    }
  }

  async close(): Promise<void> {
    for (const pair of this.#pairs) {
      pair.client.destroy();
      pair.server.destroy();
    }
    this.#pairs.clear();
    await new Promise<void>((done) => this.#server.close(() => done()));
  }
}
