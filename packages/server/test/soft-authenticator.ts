import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto';

/**
 * A WebAuthn authenticator in software (P-256, ES256, "none" attestation), for the tests that answer the
 * server's passkey ceremonies as an attacker would: replayed, from another origin, for another RP ID,
 * without user verification, in parallel. Chromium's virtual authenticator (test/passkeys.e2e.test.ts) is
 * the real thing; this one makes answers a browser would never send.
 */

/** Just enough CBOR (RFC 8949) for an attestation object and a COSE key: integers, byte and text strings, maps. */
function cbor(value: unknown): Buffer {
  const head = (major: number, n: number): Buffer => {
    if (n < 24) return Buffer.from([(major << 5) | n]);
    if (n < 0x100) return Buffer.from([(major << 5) | 24, n]);
    if (n < 0x10000) return Buffer.from([(major << 5) | 25, n >> 8, n & 0xff]);
    const b = Buffer.alloc(5);
    b[0] = (major << 5) | 26;
    b.writeUInt32BE(n, 1);
    return b;
  };
  if (typeof value === 'number') return value >= 0 ? head(0, value) : head(1, -1 - value);
  if (Buffer.isBuffer(value)) return Buffer.concat([head(2, value.length), value]);
  if (typeof value === 'string') {
    const bytes = Buffer.from(value, 'utf8');
    return Buffer.concat([head(3, bytes.length), bytes]);
  }
  if (value instanceof Map) {
    return Buffer.concat([head(5, value.size), ...[...value].flatMap(([k, v]) => [cbor(k), cbor(v)])]);
  }
  throw new Error(`cbor: cannot encode ${typeof value}`);
}

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest();
const b64u = (b: Buffer) => b.toString('base64url');

/** Authenticator data flags (WebAuthn §6.1). */
const UP = 0x01;
const UV = 0x04;
const BE = 0x08;
const BS = 0x10;
const AT = 0x40;

export interface Ceremony {
  /** The user verified (a PIN, a fingerprint); the server requires it. */
  uv?: boolean;
  /** The origin the "browser" reports (the server's, unless a phishing page's). */
  origin?: string;
  /** The RP ID the authenticator scopes the credential to. */
  rpId?: string;
}

export class SoftAuthenticator {
  private readonly key = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  readonly credentialId = randomBytes(16);
  counter = 0;
  private userHandle: string | undefined;

  constructor(
    private readonly rpId: string,
    private readonly origin: string,
    /** A synced passkey (backup eligible and backed up). */
    private readonly synced = false,
  ) {}

  private coseKey(): Buffer {
    const jwk = this.key.publicKey.export({ format: 'jwk' });
    return cbor(
      new Map<number, unknown>([
        [1, 2],
        [3, -7],
        [-1, 1],
        [-2, Buffer.from(jwk.x!, 'base64url')],
        [-3, Buffer.from(jwk.y!, 'base64url')],
      ]),
    );
  }

  private authData(c: Ceremony, attested: boolean): Buffer {
    const flags = UP | (c.uv === false ? 0 : UV) | (this.synced ? BE | BS : 0) | (attested ? AT : 0);
    const counter = Buffer.alloc(4);
    counter.writeUInt32BE(this.counter);
    const parts: Buffer[] = [sha256(c.rpId ?? this.rpId), Buffer.from([flags]), counter];
    if (attested) {
      const idLength = Buffer.alloc(2);
      idLength.writeUInt16BE(this.credentialId.length);
      parts.push(Buffer.alloc(16), idLength, this.credentialId, this.coseKey());
    }
    return Buffer.concat(parts);
  }

  private clientData(type: string, challenge: string, c: Ceremony): Buffer {
    return Buffer.from(JSON.stringify({ type, challenge, origin: c.origin ?? this.origin, crossOrigin: false }));
  }

  /** The answer to registration options (navigator.credentials.create, as @simplewebauthn/browser posts it). */
  register(options: { challenge: string; user: { id: string } }, c: Ceremony = {}) {
    this.userHandle = options.user.id;
    const attestationObject = cbor(
      new Map<string, unknown>([
        ['fmt', 'none'],
        ['attStmt', new Map()],
        ['authData', this.authData(c, true)],
      ]),
    );
    return {
      id: b64u(this.credentialId),
      rawId: b64u(this.credentialId),
      type: 'public-key',
      response: {
        clientDataJSON: b64u(this.clientData('webauthn.create', options.challenge, c)),
        attestationObject: b64u(attestationObject),
        transports: ['internal'],
      },
      clientExtensionResults: {},
    };
  }

  /** The answer to sign-in options (navigator.credentials.get): a fresh signature over the challenge. */
  authenticate(options: { challenge: string }, c: Ceremony = {}) {
    if (!this.synced) this.counter++;
    const authenticatorData = this.authData(c, false);
    const clientDataJSON = this.clientData('webauthn.get', options.challenge, c);
    const signature = sign('sha256', Buffer.concat([authenticatorData, sha256(clientDataJSON)]), this.key.privateKey);
    return {
      id: b64u(this.credentialId),
      rawId: b64u(this.credentialId),
      type: 'public-key',
      response: {
        clientDataJSON: b64u(clientDataJSON),
        authenticatorData: b64u(authenticatorData),
        signature: b64u(signature),
        ...(this.userHandle !== undefined && { userHandle: this.userHandle }),
      },
      clientExtensionResults: {},
    };
  }
}
