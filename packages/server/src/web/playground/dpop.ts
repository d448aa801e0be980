/**
 * The playground's DPoP client (RFC 9449), in the browser: an ES256 key pair
 * made by WebCrypto with a non-extractable private key, its public JWK and
 * RFC 7638 thumbprint (`dpop_jkt`, `cnf.jkt`), and proofs signed with it.
 * The key pair must outlive the redirect to the authorization endpoint and
 * back, and a CryptoKey is not a string for sessionStorage: it waits in this
 * origin's IndexedDB (a structured clone, non-extractable still), keyed by
 * the request's state, for at most the saved request's lifetime, and is
 * removed on first use. The JWS is written out here, WebCrypto signing:
 * what a proof is shows in a few lines, and the bundle stays small.
 * https://www.rfc-editor.org/rfc/rfc9449
 */
import { base64url } from 'jose';

/** A P-256 public key as a JWK: the members RFC 7638 §3.2 covers, nothing else. */
export interface PublicJwk {
  kty: 'EC';
  crv: 'P-256';
  x: string;
  y: string;
}

export interface DpopKey {
  /** Non-extractable: it signs, and nothing can read it out. */
  privateKey: CryptoKey;
  /** The public key as sent in every proof's `jwk` header. */
  jwk: PublicJwk;
  /** RFC 7638 SHA-256 thumbprint of `jwk`, base64url: `dpop_jkt` and the tokens' `cnf.jkt`. */
  jkt: string;
}

/** A new ES256 key pair (WebCrypto, private key non-extractable), its public JWK and thumbprint. */
export async function createDpopKey(): Promise<DpopKey> {
  const pair = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign', 'verify']);
  // A generated public key is always extractable; the private key stays inside WebCrypto.
  const { x, y } = await crypto.subtle.exportKey('jwk', pair.publicKey);
  const jwk: PublicJwk = { kty: 'EC', crv: 'P-256', x: x!, y: y! };
  // RFC 7638 §3: the required members in lexicographic order, no white space, hashed; this order is that order.
  const jkt = await sha256(JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y }));
  return { privateKey: pair.privateKey, jwk, jkt };
}

/** base64url of the SHA-256 of `text`'s UTF-8 bytes: RFC 7638 thumbprints and RFC 9449 §4.2 `ath`. */
async function sha256(text: string): Promise<string> {
  return base64url.encode(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text))));
}

const segment = (value: unknown) => base64url.encode(JSON.stringify(value));

/**
 * A DPoP proof (RFC 9449 §4.2) for one request: typ dpop+jwt, ES256, the
 * public key as `jwk`; a fresh `jti`, `htm`, `htu` (no query or fragment),
 * `iat`, and the server's `nonce` (§8) and `ath` (§7.1) where given. ECDSA
 * signatures from WebCrypto are already JOSE's raw r||s form.
 */
export async function dpopProof(
  key: DpopKey,
  htm: string,
  htu: string,
  extra: { nonce?: string | undefined; accessToken?: string | undefined } = {},
): Promise<string> {
  const claims: Record<string, unknown> = {
    jti: base64url.encode(crypto.getRandomValues(new Uint8Array(16))),
    htm,
    htu,
    iat: Math.floor(Date.now() / 1000),
  };
  if (extra.nonce !== undefined) claims.nonce = extra.nonce;
  if (extra.accessToken !== undefined) claims.ath = await sha256(extra.accessToken);
  // RFC 7515 §7.1 compact serialization; ES256 is ECDSA P-256 with SHA-256 over the signing input (RFC 7518 §3.4).
  const input = `${segment({ typ: 'dpop+jwt', alg: 'ES256', jwk: key.jwk })}.${segment(claims)}`;
  const signature = await crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, key.privateKey, new TextEncoder().encode(input));
  return `${input}.${base64url.encode(new Uint8Array(signature))}`;
}

// ---- the key across the redirect ----

const DB = 'authcli-playground';
const KEYS = 'dpop-keys';

interface StoredKey extends DpopKey {
  state: string;
  created_at: number;
}

function openDb(): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open(DB, 1);
    open.onupgradeneeded = () => open.result.createObjectStore(KEYS, { keyPath: 'state' });
    open.onsuccess = () => resolve(open.result);
    open.onerror = () => reject(open.error);
  });
}

/** Runs `work` in one transaction on the key store; resolves with its result once the transaction has committed. */
async function inStore<T>(mode: IDBTransactionMode, work: (store: IDBObjectStore) => IDBRequest<T> | undefined): Promise<T | undefined> {
  const db = await openDb();
  try {
    return await new Promise<T | undefined>((resolve, reject) => {
      const tx = db.transaction(KEYS, mode);
      const request = work(tx.objectStore(KEYS));
      tx.oncomplete = () => resolve(request?.result);
      tx.onerror = () => reject(tx.error);
      tx.onabort = () => reject(tx.error);
    });
  } finally {
    db.close();
  }
}

/** Keeps `key` for the request of `state` until the callback. */
export async function saveDpopKey(state: string, key: DpopKey): Promise<void> {
  const record: StoredKey = { ...key, state, created_at: Date.now() };
  await inStore('readwrite', (store) => store.put(record));
}

/** The key of the request of `state`, removed as it is read (one use); undefined when missing or older than `ttlMs`. */
export async function takeDpopKey(state: string, ttlMs: number): Promise<DpopKey | undefined> {
  const record = await inStore<StoredKey | undefined>('readwrite', (store) => {
    const get = store.get(state) as IDBRequest<StoredKey | undefined>;
    store.delete(state);
    return get;
  });
  if (!record || Date.now() - record.created_at > ttlMs) return undefined;
  return { privateKey: record.privateKey, jwk: record.jwk, jkt: record.jkt };
}

/** Removes the keys of requests older than `ttlMs` (callbacks that never came). */
export async function purgeExpiredDpopKeys(ttlMs: number): Promise<void> {
  await inStore('readwrite', (store) => {
    const cursor = store.openCursor();
    cursor.onsuccess = () => {
      const c = cursor.result;
      if (!c) return;
      if (Date.now() - (c.value as StoredKey).created_at > ttlMs) c.delete();
      c.continue();
    };
    return undefined;
  });
}
