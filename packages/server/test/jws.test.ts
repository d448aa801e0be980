import { describe, expect, it } from 'vitest';
import { createPrivateKey, createPublicKey, verify } from 'node:crypto';
import { compactVerify, importJWK, type JWK } from 'jose';
import { jwsSignature } from '../src/oauth/keys.js';

/**
 * Known answers for the server's own JWS signer (node:crypto, not jose): the
 * examples of RFC 7515 Appendix A. The signer supports RS256 and ES256 only,
 * so RFC 8037 A.4 (Ed25519) has no counterpart here.
 */

const b64 = (s: string) => Buffer.from(s).toString('base64url');

/** RFC 7515 A.2.1 / A.3.1: the JWS Payload, with its CRLF line breaks. */
const PAYLOAD = '{"iss":"joe",\r\n "exp":1300819380,\r\n "http://example.com/is_root":true}';
const PAYLOAD_B64 = 'eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ';

/** RFC 7515 A.2.1: the RSA key. */
const A2_JWK: JWK = {
  kty: 'RSA',
  n: 'ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26mPddxHmfHQp-Vaw-4qPCJrcS2mJPMEzP1Pt0Bm4d4QlL-yRT-SFd2lZS-pCgNMsD1W_YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb_7OMg0LOL-bSf63kpaSHSXndS5z5rexMdbBYUsLA9e-KXBdQOS-UTo7WTBEMa2R2CapHg665xsmtdVMTBQY4uDZlxvb3qCo5ZwKh9kG4LT6_I5IhlJH7aGhyxXFvUK-DWNmoudF8NAco9_h9iaGNj8q2ethFkMLs91kzk2PAcDTW9gb54h4FRWyuXpoQ',
  e: 'AQAB',
  d: 'Eq5xpGnNCivDflJsRQBXHx1hdR1k6Ulwe2JZD50LpXyWPEAeP88vLNO97IjlA7_GQ5sLKMgvfTeXZx9SE-7YwVol2NXOoAJe46sui395IW_GO-pWJ1O0BkTGoVEn2bKVRUCgu-GjBVaYLU6f3l9kJfFNS3E0QbVdxzubSu3Mkqzjkn439X0M_V51gfpRLI9JYanrC4D4qAdGcopV_0ZHHzQlBjudU2QvXt4ehNYTCBr6XCLQUShb1juUO1ZdiYoFaFQT5Tw8bGUl_x_jTj3ccPDVZFD9pIuhLhBOneufuBiB4cS98l2SR_RQyGWSeWjnczT0QU91p1DhOVRuOopznQ',
  p: '4BzEEOtIpmVdVEZNCqS7baC4crd0pqnRH_5IB3jw3bcxGn6QLvnEtfdUdiYrqBdss1l58BQ3KhooKeQTa9AB0Hw_Py5PJdTJNPY8cQn7ouZ2KKDcmnPGBY5t7yLc1QlQ5xHdwW1VhvKn-nXqhJTBgIPgtldC-KDV5z-y2XDwGUc',
  q: 'uQPEfgmVtjL0Uyyx88GZFF1fOunH3-7cepKmtH4pxhtCoHqpWmT8YAmZxaewHgHAjLYsp1ZSe7zFYHj7C6ul7TjeLQeZD_YwD66t62wDmpe_HlB-TnBA-njbglfIsRLtXlnDzQkv5dTltRJ11BKBBypeeF6689rjcJIDEz9RWdc',
  dp: 'BwKfV3Akq5_MFZDFZCnW-wzl-CCo83WoZvnLQwCTeDv8uzluRSnm71I3QCLdhrqE2e9YkxvuxdBfpT_PI7Yz-FOKnu1R6HsJeDCjn12Sk3vmAktV2zb34MCdy7cpdTh_YVr7tss2u6vneTwrA86rZtu5Mbr1C1XsmvkxHQAdYo0',
  dq: 'h_96-mK1R_7glhsum81dZxjTnYynPbZpHziZjeeHcXYsXaaMwkOlODsWa7I9xXDoRwbKgB719rrmI2oKr6N3Do9U0ajaHF-NKJnwgjMd2w9cjz3_-kyNlxAr2v4IKhGNpmM5iIgOS1VZnOZ68m6_pbLBSp3nssTdlqvd0tIiTHU',
  qi: 'IYd7DHOhrWvxkwPQsRM2tOgrjbcrfvtQJipd-DlcxyVuuM9sQLdgjVk2oy26F0EmpScGLq2MowX7fhd_QJQ3ydy5cY7YIBi87w93IKLEdfnbJtoOPLUW0ITrJReOgo1cq9SbsxYawBgfp_gh6A5603k2-ZQwVK0JKSHuLFkuQ3U',
};

/** RFC 7515 A.2.1: the JWS Signature. */
const A2_SIGNATURE =
  'cC4hiUPoj9Eetdgtv3hF80EGrhuB__dzERat0XF9g2VtQgr9PJbu3XOiZj5RZmh7AAuHIm4Bh-0Qc_lF5YKt_O8W2Fp5jujGbds9uJdbF9CUAr7t1dnZcAcQjbKBYNX4BAynRFdiuB--f_nZLgrnbyTyWzO75vRK5h6xBArLIARNPvkSjtQBMHlb1L07Qe7K0GarZRmB_eSN9383LcOLn6_dO--xi12jzDwusC-eOkHWEsqtFZESc6BfI7noOPqvhJ1phCnvWh6IeYI2w9QOYEUipUTI8np6LbgGY9Fs98rqVt5AXLIhWkWywlVmtVrBp0igcN_IoypGlUPQGe77Rw';

/** RFC 7515 A.3.1: the P-256 key. */
const A3_JWK: JWK = {
  kty: 'EC',
  crv: 'P-256',
  x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU',
  y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0',
  d: 'jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI',
};

/** RFC 7515 A.3.1: the JWS Signature (one of many valid ones: ECDSA is randomized). */
const A3_SIGNATURE = 'DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q';

const publicOf = ({ d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...pub }: JWK): JWK => pub;

describe('the JWS signer, RFC 7515 Appendix A', () => {
  it('rfc7515 A.2 RS256: the example key signs the example input into exactly the example signature', async () => {
    const input = `${b64('{"alg":"RS256"}')}.${b64(PAYLOAD)}`;
    expect(input).toBe(`eyJhbGciOiJSUzI1NiJ9.${PAYLOAD_B64}`);
    // RSASSA-PKCS1-v1_5 is deterministic: the one right answer, byte for byte.
    const signature = await jwsSignature('RS256', createPrivateKey({ key: A2_JWK, format: 'jwk' }), input);
    expect(signature).toBe(A2_SIGNATURE);
    const { payload } = await compactVerify(`${input}.${signature}`, await importJWK(publicOf(A2_JWK), 'RS256'));
    expect(Buffer.from(payload).toString()).toBe(PAYLOAD);
  });

  it('rfc7515 A.3 ES256: a signature of the signer verifies under the example key; the example signature is in the same R || S form', async () => {
    const input = `${b64('{"alg":"ES256"}')}.${b64(PAYLOAD)}`;
    expect(input).toBe(`eyJhbGciOiJFUzI1NiJ9.${PAYLOAD_B64}`);
    const publicKey = await importJWK(publicOf(A3_JWK), 'ES256');
    // ECDSA is randomized: two signatures of one input differ, and both verify.
    const privateKey = createPrivateKey({ key: A3_JWK, format: 'jwk' });
    const [one, two] = [await jwsSignature('ES256', privateKey, input), await jwsSignature('ES256', privateKey, input)];
    expect(one).not.toBe(two);
    for (const signature of [one, two]) {
      expect(Buffer.from(signature, 'base64url')).toHaveLength(64); // R || S, 32 bytes each (RFC 7518 §3.4), not DER
      const { payload, protectedHeader } = await compactVerify(`${input}.${signature}`, publicKey);
      expect(protectedHeader).toEqual({ alg: 'ES256' });
      expect(Buffer.from(payload).toString()).toBe(PAYLOAD);
    }
    // The RFC's own signature verifies under the same key, read in the encoding the signer writes.
    await compactVerify(`${input}.${A3_SIGNATURE}`, publicKey);
    const ieee = { key: createPublicKey({ key: publicOf(A3_JWK), format: 'jwk' }), dsaEncoding: 'ieee-p1363' as const };
    expect(verify('sha256', Buffer.from(input), ieee, Buffer.from(A3_SIGNATURE, 'base64url'))).toBe(true);
    expect(verify('sha256', Buffer.from(input), ieee, Buffer.from(one, 'base64url'))).toBe(true);
  });

  it('rfc7515 §5.2 a signature is over the exact signing input: one byte changed and it no longer verifies', async () => {
    const input = `${b64('{"alg":"ES256"}')}.${b64(PAYLOAD)}`;
    const signature = await jwsSignature('ES256', createPrivateKey({ key: A3_JWK, format: 'jwk' }), input);
    const tampered = `${b64('{"alg":"ES256"}')}.${b64(PAYLOAD.replace('joe', 'jon'))}`;
    await expect(compactVerify(`${tampered}.${signature}`, await importJWK(publicOf(A3_JWK), 'ES256'))).rejects.toThrow(
      /signature verification failed/,
    );
  });
});
