import { randomUUID } from 'node:crypto';
import { USERNAME_PATTERN } from '../config/defaults.js';
import { serializeClaims, type Store, StoreError, SYSTEM, type User, type UserClaims } from '../store/store.js';

/**
 * People who sign in through a connector: a first sign-in makes a user linked to (connector, upstream
 * subject), with the upstream's claims; later sign-ins find that link. A link never comes from a matching
 * email or username: an upstream that lets anyone choose their email would otherwise hand out the local
 * account that has it.
 */

/** Who an upstream says signed in, and how. */
export interface UpstreamIdentity {
  /** Stable at the upstream (an OIDC `sub`, GitHub's numeric id, an LDAP entryUUID): never an email. */
  subject: string;
  claims: {
    preferred_username?: string | undefined;
    email?: string | undefined;
    email_verified?: boolean | undefined;
    name?: string | undefined;
  };
  /** RFC 8176 methods the upstream reported (only registered values), for the session. */
  amr: readonly string[];
  /** `phr` when the upstream asserted it; else the federated class. */
  acr: string;
}

/** A federated user has no password here: a hash that no password matches (util/password.ts parses none). */
export const NO_PASSWORD = '!federated';

/** A username for a new federated user: the upstream's, made to fit USERNAME_PATTERN. */
function usernameBase(id: UpstreamIdentity, connectorId: string): string {
  const raw = id.claims.preferred_username ?? id.claims.email?.split('@')[0] ?? `${connectorId}-user`;
  const cleaned = raw
    .normalize('NFKC')
    .replace(/[^A-Za-z0-9._@-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 48);
  return USERNAME_PATTERN.test(cleaned) ? cleaned : `${connectorId}-user`;
}

/** The user an upstream account signs in as: linked before, or made now; undefined when that user is disabled. */
export async function federatedUser(store: Store, connectorId: string, id: UpstreamIdentity, now: number): Promise<User | undefined> {
  const linked = await store.connectors.linkedUser(connectorId, id.subject);
  if (linked !== undefined) {
    const user = await store.users.findById(linked);
    return user && user.disabled_at === null ? user : undefined;
  }
  const claims: UserClaims = {
    ...(id.claims.name && { name: id.claims.name }),
    ...(id.claims.email && { email: id.claims.email, email_verified: id.claims.email_verified === true }),
  };
  const base = usernameBase(id, connectorId);
  // A username taken by someone else is not theirs: the next free one (alice, alice-2, ...).
  for (let n = 1; n <= 20; n++) {
    const username = n === 1 ? base : `${base}-${n === 20 ? randomUUID().slice(0, 8) : n}`;
    if (n < 20 && (await store.users.findByUsername(username))) continue;
    try {
      const newId = randomUUID();
      // The account and its audit row together; a sign-in that races this one and links first makes none.
      const userId = await store.changes(async () => {
        const linkedId = await store.connectors.provision(
          connectorId,
          id.subject,
          {
            id: newId,
            username,
            password_hash: NO_PASSWORD,
            claims: serializeClaims(claims),
            claims_updated_at: now,
            is_admin: 0,
            disabled_at: null,
            created_at: now,
          },
          now,
        );
        if (linkedId === newId) {
          await store.audit.append({
            at: now,
            actor: { ...SYSTEM, name: `connector ${connectorId}` },
            action: 'user.created',
            target: { type: 'user', id: newId, name: username },
            detail: { username, connector: connectorId, name: claims.name ?? null, email: claims.email ?? null },
          });
        }
        return linkedId;
      });
      const user = await store.users.findById(userId);
      return user && user.disabled_at === null ? user : undefined;
    } catch (err) {
      if (!(err instanceof StoreError && err.code === 'duplicate')) throw err;
    }
  }
  throw new StoreError('duplicate', `no free username for ${base}`);
}

/**
 * What a person refused by a membership rule (LDAP groups, GitHub organizations and teams) is told: that they
 * may not use this service, and not which memberships would have let them in (who is in which group of the
 * organization is not for whoever types a name on the form; the log has it, for the operator).
 */
export const NOT_A_MEMBER = 'your account may not use this service';
