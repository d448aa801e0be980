import { SIGNIN_EVENTS_KEPT_MS, SIGNIN_EVENTS_PER_USER } from '../../config/defaults.js';
import type { CredentialEventKind, SignInEvent, SignInKind } from '../schema.js';
import type { AuditEvent, KyselyAudit, NewAuditEvent } from './audit.js';

export type { CredentialEventKind, SignInEvent, SignInKind } from '../schema.js';

/** A sign-in to record; `detail` only for credential events. */
export type NewSignInEvent = Omit<SignInEvent, 'id' | 'detail'> & { detail?: string | null };

/** The audit action of each kind of sign-in record (docs/audit.md's events). */
export const SIGNIN_ACTIONS: Readonly<Record<SignInKind, string>> = {
  password: 'signin.password',
  passkey: 'signin.passkey',
  federated: 'signin.federated',
  'device-approved': 'device.approved',
  'device-denied': 'device.denied',
  'passkey-added': 'passkey.added',
  'passkey-removed': 'passkey.removed',
  'connector-linked': 'connector.linked',
  'connector-unlinked': 'connector.unlinked',
};
const KIND_OF = new Map(Object.entries(SIGNIN_ACTIONS).map(([kind, action]) => [action, kind as SignInKind]));

/** The audit row of a sign-in record: the user is both who did it and whom it is about. */
export function signInAuditEvent(e: NewSignInEvent, username: string | null): NewAuditEvent {
  const who = { type: 'user', id: e.user_id, name: username };
  return {
    at: e.at,
    actor: { ...who, type: 'user' },
    action: SIGNIN_ACTIONS[e.kind],
    target: who,
    address: e.client_ip,
    detail: {
      ...(e.client_id !== null && { client_id: e.client_id }),
      ...(e.device_ip !== null && { device_ip: e.device_ip }),
      ...(e.detail != null && { detail: e.detail }),
    },
  };
}

/** An audit row read back as the sign-in record it was written from. */
function signInOf(r: AuditEvent): SignInEvent {
  const d = JSON.parse(r.detail) as { client_id?: string; device_ip?: string; detail?: string };
  return {
    id: String(r.seq),
    user_id: r.target!,
    at: Number(r.at),
    kind: KIND_OF.get(r.action)!,
    client_ip: r.address ?? '',
    device_ip: d.device_ip ?? null,
    client_id: d.client_id ?? null,
    detail: d.detail ?? null,
  };
}

/**
 * A user's sign-ins, device decisions and credential changes (the account
 * page's "Recent sign-ins"), kept as rows of the audit trail (audit.ts):
 * the page shows the newest {@link SIGNIN_EVENTS_PER_USER} of the last
 * {@link SIGNIN_EVENTS_KEPT_MS}; the trail keeps them for its retention.
 */
export interface SignInEvents {
  record(event: NewSignInEvent): Promise<void>;
  /** Records a way into the account added or removed (`detail`: the passkey's name, the connector's id), from `clientIp`. */
  recordCredential(userId: string, kind: CredentialEventKind, detail: string, clientIp: string, at: number): Promise<void>;
  /** The user's records of the SIGNIN_EVENTS_KEPT_MS before `now`, newest first, at most SIGNIN_EVENTS_PER_USER. */
  recent(userId: string, now: number): Promise<SignInEvent[]>;
}

/** {@link SignInEvents} on the audit trail. */
export class AuditSignInEvents implements SignInEvents {
  constructor(
    private readonly audit: KyselyAudit,
    private readonly usernameOf: (userId: string) => Promise<string | null>,
  ) {}

  async record(event: NewSignInEvent): Promise<void> {
    await this.audit.append(signInAuditEvent(event, await this.usernameOf(event.user_id)));
  }

  recordCredential(userId: string, kind: CredentialEventKind, detail: string, clientIp: string, at: number): Promise<void> {
    return this.record({ user_id: userId, at, kind, client_ip: clientIp, device_ip: null, client_id: null, detail });
  }

  async recent(userId: string, now: number): Promise<SignInEvent[]> {
    const rows = await this.audit.list({
      target: userId,
      actions: Object.values(SIGNIN_ACTIONS),
      since: now - SIGNIN_EVENTS_KEPT_MS + 1,
      order: 'desc',
      limit: SIGNIN_EVENTS_PER_USER,
    });
    return rows.map(signInOf);
  }
}
