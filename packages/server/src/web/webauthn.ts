import {
  type AuthenticationResponseJSON,
  generateAuthenticationOptions,
  generateRegistrationOptions,
  type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON,
  type RegistrationResponseJSON,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
} from '@simplewebauthn/server';
import { isIP } from 'node:net';
import { PASSKEY_NAME_MAX, PASSKEYS_PER_USER_MAX, WEBAUTHN_CHALLENGE_TTL_MS, WEBAUTHN_RESPONSE_MAX } from '../config/defaults.js';
import { passkeyAmr } from '../oauth/acr.js';
import { CredentialChangeRefused } from '../oauth/credential-change.js';
import type { Passkey, Store, User } from '../store/store.js';
import { sha256Hex } from '../util/crypto.js';

/**
 * Passkeys (WebAuthn Level 3) as this server's relying party: the options of
 * a registration or sign-in ceremony, and the checks of the browser's answer,
 * with @simplewebauthn/server doing the WebAuthn parsing and signature work.
 * Every ceremony's challenge is a row in the store, bound to the browser
 * that asked and used up by the first answer (on any instance), so an
 * answer cannot be replayed or finished elsewhere. User verification is
 * required in both ceremonies (a PIN or a biometric on the authenticator):
 * a passkey sign-in is two factors, phishing-resistant (`acr` `phr`).
 */

/** A person-facing refusal of a ceremony's answer. */
export class PasskeyError extends Error {
  override name = 'PasskeyError';
}

/** This server as a WebAuthn relying party. */
export interface RelyingParty {
  /** The RP ID: the issuer's host name. */
  id: string;
  /** The origin every answer must come from: the issuer's. */
  origin: string;
}

/**
 * The relying party of an issuer, or why it cannot have one. Browsers take
 * only a domain name as RP ID (Chromium: "This is an invalid domain" for an
 * IP address) and offer WebAuthn only in a secure context: https, or http on
 * localhost.
 */
export function relyingParty(issuer: string): RelyingParty | { unavailable: string } {
  const url = new URL(issuer);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const local = host === 'localhost' || host.endsWith('.localhost');
  if (isIP(host) !== 0) {
    const suggestion = isLocalAddress(host) ? ` Start it with --issuer http://localhost:${url.port || '80'} to use them here.` : '';
    return {
      unavailable: `Passkeys need this server to be reached by a domain name, and its address is ${url.host}.${suggestion}`,
    };
  }
  if (url.protocol !== 'https:' && !local) {
    return { unavailable: `Passkeys need this server on https (browsers offer them only there, or on localhost): it is ${url.origin}.` };
  }
  return { id: host, origin: url.origin };
}

const isLocalAddress = (ip: string) => ip === '::1' || ip.startsWith('127.');

/** The WebAuthn user handle of an account: its id, which never changes and names no one (§14.6.1). */
const userHandle = (user: User) => new TextEncoder().encode(user.id);

/** A ceremony's challenge as the store keeps it. */
const challengeRow = (
  challenge: string,
  purpose: 'register' | 'authenticate',
  userId: string | null,
  browserHash: string,
  now: number,
) => ({
  challenge_hash: sha256Hex(challenge),
  purpose,
  user_id: userId,
  browser_hash: browserHash,
  expires_at: now + WEBAUTHN_CHALLENGE_TTL_MS,
});

/** A registration ceremony for `user`, whose passkeys so far are `existing` (not offered again). */
export async function registrationOptions(
  store: Store,
  rp: RelyingParty,
  user: User,
  existing: readonly Passkey[],
  browserHash: string,
  now: number,
): Promise<PublicKeyCredentialCreationOptionsJSON> {
  if (existing.length >= PASSKEYS_PER_USER_MAX) throw new PasskeyError(`You have ${existing.length} passkeys: remove one to add another.`);
  const options = await generateRegistrationOptions({
    rpName: 'authcli',
    rpID: rp.id,
    userName: user.username,
    userID: userHandle(user),
    userDisplayName: user.username,
    timeout: WEBAUTHN_CHALLENGE_TTL_MS,
    attestationType: 'none',
    excludeCredentials: existing.map((p) => ({ id: p.id, transports: JSON.parse(p.transports) as string[] })),
    authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
  });
  await store.passkeys.addChallenge(challengeRow(options.challenge, 'register', user.id, browserHash, now));
  return options;
}

/** A sign-in ceremony: any account's discoverable passkey may answer it (no username is asked first). */
export async function authenticationOptions(
  store: Store,
  rp: RelyingParty,
  browserHash: string,
  now: number,
): Promise<PublicKeyCredentialRequestOptionsJSON> {
  const options = await generateAuthenticationOptions({ rpID: rp.id, userVerification: 'required', timeout: WEBAUTHN_CHALLENGE_TTL_MS });
  await store.passkeys.addChallenge(challengeRow(options.challenge, 'authenticate', null, browserHash, now));
  return options;
}

/** The browser's answer (a PublicKeyCredential as JSON, posted as a form field), parsed, or a PasskeyError. */
function parseResponse<T extends { id: string; response: object }>(text: string | undefined): T {
  if (!text || text.length > WEBAUTHN_RESPONSE_MAX) throw new PasskeyError('The passkey answer is missing or too large.');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new PasskeyError('The passkey answer is not valid JSON.');
  }
  const v = value as { id?: unknown; response?: unknown; type?: unknown };
  if (typeof v !== 'object' || v === null || typeof v.id !== 'string' || typeof v.response !== 'object' || v.response === null) {
    throw new PasskeyError('The passkey answer is not a WebAuthn credential.');
  }
  return value as T;
}

/**
 * The challenge check both ceremonies give the library: the challenge the answer signed must be a live one of
 * this purpose, asked for by this browser (and for registration, by this user), and it is used up here.
 */
function takeChallenge(store: Store, purpose: 'register' | 'authenticate', browserHash: string, now: number, userId?: string) {
  return async (challenge: string): Promise<boolean> => {
    const row = await store.passkeys.takeChallenge(sha256Hex(challenge), purpose, browserHash, now);
    return row !== undefined && (userId === undefined || row.user_id === userId);
  };
}

/**
 * Checks a registration answer and stores the passkey under `name`; the stored passkey. `onlyFirst`: the session
 * adding it is not a passkey sign-in, so it may add the account's first passkey only (checked again as it is
 * stored: parallel ceremonies of one password session cannot add two). `from`: the address it is added from.
 */
export async function finishRegistration(
  store: Store,
  rp: RelyingParty,
  user: User,
  answer: { response: string | undefined; name: string | undefined },
  browserHash: string,
  now: number,
  context: { onlyFirst: boolean; from: string },
): Promise<Passkey> {
  const name = (answer.name ?? '').trim() || 'Passkey';
  if (name.length > PASSKEY_NAME_MAX || /[\p{Cc}\p{Cf}]/u.test(name)) {
    throw new PasskeyError(`A passkey's name is at most ${PASSKEY_NAME_MAX} characters, without control characters.`);
  }
  const response = parseResponse<RegistrationResponseJSON>(answer.response);
  let verified: Awaited<ReturnType<typeof verifyRegistrationResponse>>;
  try {
    verified = await verifyRegistrationResponse({
      response,
      expectedChallenge: takeChallenge(store, 'register', browserHash, now, user.id),
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      requireUserVerification: true,
    });
  } catch (err) {
    throw new PasskeyError(`The passkey could not be added: ${(err as Error).message}`);
  }
  if (!verified.verified) throw new PasskeyError('The passkey could not be added: its answer did not verify.');
  const info = verified.registrationInfo;
  const passkey: Passkey = {
    id: info.credential.id,
    user_id: user.id,
    public_key: Buffer.from(info.credential.publicKey).toString('base64url'),
    counter: info.credential.counter,
    transports: JSON.stringify(info.credential.transports ?? []),
    device_type: info.credentialDeviceType,
    backed_up: info.credentialBackedUp ? 1 : 0,
    aaguid: info.aaguid,
    name,
    created_at: now,
    last_used_at: null,
    added_from: context.from,
  };
  switch (await store.passkeys.insert(passkey, { max: PASSKEYS_PER_USER_MAX, onlyFirst: context.onlyFirst })) {
    case 'added':
      return passkey;
    case 'registered':
      throw new PasskeyError('That passkey is registered already.');
    case 'full':
      throw new PasskeyError(`You have ${PASSKEYS_PER_USER_MAX} passkeys: remove one to add another.`);
    case 'not-first':
      throw new CredentialChangeRefused('passkey');
  }
}

/** A passkey sign-in that verified: who, and the RFC 8176 methods it used. */
export interface PasskeySignIn {
  user: User;
  amr: readonly string[];
  passkey: Passkey;
}

/** Checks a sign-in answer: a registered passkey of an enabled account, user verified, over a live challenge of this browser. */
export async function finishAuthentication(
  store: Store,
  rp: RelyingParty,
  answer: string | undefined,
  browserHash: string,
  now: number,
): Promise<PasskeySignIn> {
  const response = parseResponse<AuthenticationResponseJSON>(answer);
  const passkey = await store.passkeys.find(response.id);
  // One answer for a passkey this server does not know and one of a disabled or deleted account.
  const unknown = new PasskeyError('This passkey is not registered here (it may have been removed). Sign in with your password.');
  if (!passkey) throw unknown;
  const handle = (response.response as { userHandle?: unknown }).userHandle;
  if (typeof handle === 'string' && Buffer.from(handle, 'base64url').toString('utf8') !== passkey.user_id) throw unknown;
  let verified: Awaited<ReturnType<typeof verifyAuthenticationResponse>>;
  try {
    verified = await verifyAuthenticationResponse({
      response,
      expectedChallenge: takeChallenge(store, 'authenticate', browserHash, now),
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      credential: {
        id: passkey.id,
        publicKey: new Uint8Array(Buffer.from(passkey.public_key, 'base64url')),
        counter: passkey.counter,
        transports: JSON.parse(passkey.transports),
      },
      requireUserVerification: true,
    });
  } catch (err) {
    throw new PasskeyError(`The passkey sign-in failed: ${(err as Error).message}`);
  }
  if (!verified.verified) throw new PasskeyError('The passkey sign-in failed: its answer did not verify.');
  const user = await store.users.findById(passkey.user_id);
  if (!user || user.disabled_at !== null) throw unknown;
  const { newCounter, credentialBackedUp } = verified.authenticationInfo;
  await store.passkeys.recordUse(passkey.id, { newCounter, backedUp: credentialBackedUp, at: now });
  return { user, amr: passkeyAmr(credentialBackedUp), passkey };
}

/** Whether this server can offer passkeys, and if not, why (the account and sign-in pages say it). */
export function passkeyAvailability(issuer: string): { available: true } | { available: false; reason: string } {
  const rp = relyingParty(issuer);
  return 'unavailable' in rp ? { available: false, reason: rp.unavailable } : { available: true };
}
