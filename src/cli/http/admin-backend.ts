/**
 * Where `tidemark token` and `tidemark tenant` act: the HTTP API (an admin token), or, for bootstrap
 * when no API address is given and DATABASE_URL is set, the database itself, whose credentials are
 * then the authority. A deployment of `tidemark migrate` + `tidemark api` makes its first admin token
 * this way. Both take the same input and refuse the same values (the API's own schemas).
 */
import { Value } from '@sinclair/typebox/value';
import type { TSchema } from '@sinclair/typebox';
import { Name, PositiveInt4, TenantId } from '../../contract/fields.ts';
import { tokenMint } from '../../api/tokens.ts';
import { createPool, type Pool } from '../../store/pool.ts';
import { tenantExists, tenantList, tenantUpsert } from '../../store/tenants.ts';
import { tokenList, tokenRevoke } from '../../store/tokens.ts';
import { tenantJson, tokenJson, type TenantJson, type TokenJson } from '../../api/admin-json.ts';
import { UsageError } from '../usage-error.ts';
import { apiClient, type ApiClient } from './api-client.ts';

export type Token = TokenJson & { token?: string };
export type Tenant = TenantJson;

export interface TokenInput {
  tenantId: string | null;
  name: string;
  ratePerS: number | null;
}

export interface AdminBackend {
  /** Where it acts, for the line the commands print on stderr. */
  readonly where: string;
  tokenCreate(input: TokenInput): Promise<Token>;
  tokenList(tenantId: string | undefined): Promise<Token[]>;
  tokenRevoke(id: string): Promise<Token>;
  tenantPut(id: string, name: string, maxRunning: number | null): Promise<Tenant>;
  tenantList(): Promise<Tenant[]>;
  close(): Promise<void>;
}

class HttpAdmin implements AdminBackend {
  constructor(
    private readonly api: ApiClient,
    readonly where: string,
  ) {}

  tokenCreate(input: TokenInput): Promise<Token> {
    return this.api.call<Token>('POST', '/v1/tokens', input);
  }

  async tokenList(tenantId: string | undefined): Promise<Token[]> {
    const query = tenantId === undefined ? '' : `?tenantId=${encodeURIComponent(tenantId)}`;
    return (await this.api.call<{ items: Token[] }>('GET', `/v1/tokens${query}`)).items;
  }

  tokenRevoke(id: string): Promise<Token> {
    return this.api.call<Token>('DELETE', `/v1/tokens/${encodeURIComponent(id)}`);
  }

  tenantPut(id: string, name: string, maxRunning: number | null): Promise<Tenant> {
    return this.api.call<Tenant>('PUT', `/v1/tenants/${encodeURIComponent(id)}`, { name, maxRunning });
  }

  async tenantList(): Promise<Tenant[]> {
    return (await this.api.call<{ items: Tenant[] }>('GET', '/v1/tenants')).items;
  }

  async close(): Promise<void> {}
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function checked(flag: string, schema: TSchema, value: unknown): void {
  const first = Value.Errors(schema, value).First();
  if (first !== undefined) throw new UsageError(`${flag}: ${first.message} (got ${JSON.stringify(value)})`);
}

class DatabaseAdmin implements AdminBackend {
  readonly where: string;
  readonly #pool: Pool;

  constructor(url: string) {
    const parsed = new URL(url);
    this.where = `the database at ${parsed.host}${parsed.pathname} (DATABASE_URL)`;
    this.#pool = createPool({ connectionString: url, max: 1, applicationName: 'tidemark-cli' });
  }

  async tokenCreate(input: TokenInput): Promise<Token> {
    checked('--name', Name, input.name);
    if (input.ratePerS !== null) checked('--rate', PositiveInt4(''), input.ratePerS);
    if (input.tenantId !== null) {
      checked('--tenant', TenantId, input.tenantId);
      if (!(await tenantExists(this.#pool, input.tenantId))) {
        throw new UsageError(
          `--tenant: no tenant ${input.tenantId} (create it: tidemark tenant create ${input.tenantId})`,
        );
      }
    }
    const minted = await tokenMint(this.#pool, input);
    return { ...tokenJson(minted.row), token: minted.token };
  }

  async tokenList(tenantId: string | undefined): Promise<Token[]> {
    if (tenantId !== undefined) checked('--tenant', TenantId, tenantId);
    return (await tokenList(this.#pool, tenantId === undefined ? {} : { tenantId })).map(tokenJson);
  }

  async tokenRevoke(id: string): Promise<Token> {
    if (!UUID.test(id)) throw new UsageError(`token id: ${JSON.stringify(id)} is not a token id (a UUID)`);
    const row = await tokenRevoke(this.#pool, id);
    if (row === undefined) throw new UsageError(`no active token ${id}`);
    return tokenJson(row);
  }

  async tenantPut(id: string, name: string, maxRunning: number | null): Promise<Tenant> {
    checked('tenant id', TenantId, id);
    checked('--name', Name, name);
    if (maxRunning !== null) checked('--max-running', PositiveInt4(''), maxRunning);
    return tenantJson((await tenantUpsert(this.#pool, { id, name, maxRunning })).row);
  }

  async tenantList(): Promise<Tenant[]> {
    return (await tenantList(this.#pool)).map(tenantJson);
  }

  close(): Promise<void> {
    return this.#pool.end();
  }
}

export const ADMIN_NOTE =
  'With --url or TIDEMARK_URL: through the API (--token or TIDEMARK_TOKEN, an admin token). Without them and\nwith DATABASE_URL set: directly on that database, which needs no token (bootstrap).';

/** The API when an address is given (--url, TIDEMARK_URL) or DATABASE_URL is not set; else the database. */
export function adminBackend(values: { url?: string; token?: string }): AdminBackend {
  const apiNamed = values.url !== undefined || (process.env.TIDEMARK_URL ?? '') !== '';
  const database = process.env.DATABASE_URL ?? '';
  if (!apiNamed && database !== '') return new DatabaseAdmin(database);
  const api = apiClient(values);
  return new HttpAdmin(api, `the API at ${values.url ?? process.env.TIDEMARK_URL ?? 'the default address'}`);
}
