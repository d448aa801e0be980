import { decryptPrivateJwk, encryptPrivateJwk, isEncryptedPrivateJwk } from '../oauth/key-encryption.js';
import type { ConnectorRow } from '../store/store.js';
import { InputError } from '../util/input-error.js';
import type { LdapSettings } from './ldap.js';

/**
 * The connectors an operator adds (`authcli-server connectors add oidc|github|ldap`): their settings, checked
 * once when they are added, and their secret (a client secret or a bind password), stored encrypted with the
 * key-encryption key when the server has one (AUTHCLI_KEY_ENCRYPTION_KEY), as signing keys are.
 */

export type ConnectorType = 'oidc' | 'github' | 'ldap';
export const CONNECTOR_TYPES: readonly ConnectorType[] = ['oidc', 'github', 'ldap'];

/** An id is part of the callback URL ({issuer}/connectors/<id>/callback): short, lower case, never changing. */
export const CONNECTOR_ID = /^[a-z0-9][a-z0-9-]{0,31}$/;

export interface OidcSettings {
  issuer: string;
  clientId: string;
  scopes: string[];
  /** Only people whose verified email is in one of these domains get in; empty: anyone the upstream signs in. */
  allowedEmailDomains: string[];
  /**
   * Whether the upstream's `acr` `phr` (a phishing-resistant sign-in there) counts as this server's `phr`, for
   * step-up and `--require-acr phr` applications. Off (absent) by default: a sign-in through the upstream is then
   * of the federated class whatever it asserts, since this server cannot check how the upstream signed the person
   * in; an operator who trusts the upstream's assurance turns it on (`--trust-upstream-acr`).
   */
  trustUpstreamAcr?: boolean;
}
export interface GithubConnectorSettings {
  clientId: string;
  orgs: { org: string; team?: string }[];
  apiBase?: string;
}
/** connectors/ldap.ts's settings but the bind password, which is the connector's secret. */
export type LdapConnectorSettings = Omit<LdapSettings, 'bindPassword'>;

export type Connector =
  | { id: string; type: 'oidc'; name: string; settings: OidcSettings; secret: string }
  | { id: string; type: 'github'; name: string; settings: GithubConnectorSettings; secret: string }
  | { id: string; type: 'ldap'; name: string; settings: LdapConnectorSettings; secret: string };

/** The associated data a connector's secret is encrypted under: its row, so it cannot be moved to another. */
const aad = (id: string) => `connector:${id}`;

/** A stored row as the server uses it: settings parsed, secret decrypted. */
export function connectorOf(row: ConnectorRow, kek: Buffer | undefined): Connector {
  const secret = isEncryptedPrivateJwk(row.secret)
    ? kek
      ? decryptPrivateJwk(row.secret, aad(row.id), kek)
      : (() => {
          throw new InputError(`the connector ${row.id}'s secret is encrypted: set the AUTHCLI_KEY_ENCRYPTION_KEY it was encrypted with`);
        })()
    : row.secret;
  return { id: row.id, type: row.type, name: row.name, settings: JSON.parse(row.settings), secret } as Connector;
}

/** The row a new connector is stored as. */
export function rowOf(c: Connector, now: number, kek: Buffer | undefined): ConnectorRow {
  if (!CONNECTOR_ID.test(c.id))
    throw new InputError('a connector id is 1-32 lower-case letters, digits and -, starting with a letter or digit');
  const name = c.name.trim();
  if (!name || name.length > 64 || /[\p{Cc}\p{Cf}]/u.test(name)) {
    throw new InputError('a connector name is 1-64 characters, without control characters');
  }
  if (!c.secret) throw new InputError(c.type === 'ldap' ? 'the bind password is empty' : 'the client secret is empty');
  return {
    id: c.id,
    type: c.type,
    name,
    settings: JSON.stringify(c.settings),
    secret: kek ? encryptPrivateJwk(c.secret, aad(c.id), kek) : c.secret,
    created_at: now,
  };
}

/** An email domain as `--allowed-email-domain` takes it: lower case, no @, a dot inside. */
export function emailDomain(value: string): string {
  const d = value.trim().toLowerCase().replace(/^@/, '');
  if (!/^[a-z0-9-]+(\.[a-z0-9-]+)+$/.test(d)) throw new InputError(`${value} is not an email domain (e.g. example.com)`);
  return d;
}
