/**
 * Minting and checking bearer tokens. A token is `tdm_` and 32 random bytes in base64url; only its
 * SHA-256 is stored. A fast hash is enough because the secret has 256 bits of entropy: there is no
 * password to guess, so a slow KDF would only slow every request.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Queryable } from '../store/pool.ts';
import { tokenInsert, type TokenRow } from '../store/tokens.ts';

export const TOKEN_PREFIX = 'tdm_';

export function tokenHash(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

export interface MintedToken {
  token: string;
  row: TokenRow;
}

export async function tokenMint(
  db: Queryable,
  options: { tenantId: string | null; name: string; ratePerS?: number | null },
): Promise<MintedToken> {
  const token = `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
  const row = await tokenInsert(db, {
    tenantId: options.tenantId,
    name: options.name,
    hash: tokenHash(token),
    ratePerS: options.ratePerS ?? null,
  });
  return { token, row };
}
