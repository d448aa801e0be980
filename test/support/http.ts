/**
 * What every test and the bench use to talk to a server over real HTTP:
 * a free loopback port, and a cookie-keeping client that plays a user's
 * browser on the server's pages (they need no JavaScript).
 */
import { createServer } from 'node:net';

/** A port that was free on 127.0.0.1 a moment ago. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

export interface Res {
  status: number;
  headers: Headers;
  text: string;
  location: string | null;
}

/** Keeps cookies like a browser; never follows redirects by itself, so tests see each hop. */
export class Browser {
  cookies = new Map<string, string>();
  /** Every Set-Cookie header received, as sent (a test reads a cookie's attributes). */
  setCookieHeaders: string[] = [];

  constructor(readonly base: string) {}

  private absorb(res: Response) {
    for (const c of res.headers.getSetCookie()) {
      this.setCookieHeaders.push(c);
      const pair = c.split(';')[0]!;
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq);
      const value = pair.slice(eq + 1);
      if (/max-age=0|expires=thu, 01 jan 1970/i.test(c) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  async request(method: string, pathOrUrl: string, body?: string, headers: Record<string, string> = {}): Promise<Res> {
    const url = pathOrUrl.startsWith('http') ? pathOrUrl : this.base + pathOrUrl;
    const res = await fetch(url, {
      method,
      redirect: 'manual',
      headers: { ...(this.cookies.size ? { cookie: this.cookieHeader() } : {}), ...headers },
      ...(body !== undefined && { body }),
    });
    this.absorb(res);
    return { status: res.status, headers: res.headers, text: await res.text(), location: res.headers.get('location') };
  }

  get(pathOrUrl: string): Promise<Res> {
    return this.request('GET', pathOrUrl);
  }

  postForm(pathOrUrl: string, fields: Record<string, string>): Promise<Res> {
    return this.request('POST', pathOrUrl, new URLSearchParams(fields).toString(), {
      'content-type': 'application/x-www-form-urlencoded',
    });
  }
}

const ENTITIES: Record<string, string> = { '&amp;': '&', '&quot;': '"', '&lt;': '<', '&gt;': '>', '&#39;': "'" };

/** The value of a hidden input in a rendered page. */
export function hidden(html: string, name: string): string {
  const m = new RegExp(`name="${name}" value="([^"]*)"`).exec(html);
  if (!m) throw new Error(`no hidden field ${name} in page`);
  return m[1]!.replace(/&(amp|quot|lt|gt|#39);/g, (e) => ENTITIES[e]!);
}

/**
 * The fields a sign-in form posts besides the credentials: its CSRF token and,
 * when the page resumes something, the continuation id (the form's only
 * other hidden field; sign-in never carries a URL).
 */
export function signInFields(html: string, username: string, password: string): Record<string, string> {
  const fields: Record<string, string> = { _csrf: hidden(html, '_csrf'), username, password };
  if (html.includes('name="continue"')) fields.continue = hidden(html, 'continue');
  return fields;
}

/**
 * Follows an authorization URL as a user would: sign in when asked, approve
 * (or deny) consent when asked. Returns the final redirect to the client's callback.
 */
export async function approveInBrowser(
  browser: Browser,
  authorizationUrl: string,
  username: string,
  password: string,
  decision: 'approve' | 'deny' = 'approve',
): Promise<string> {
  let res = await browser.get(authorizationUrl);
  for (let i = 0; i < 6; i++) {
    if ((res.status === 302 || res.status === 303) && res.location) {
      const next = new URL(res.location, browser.base);
      if (next.origin !== new URL(browser.base).origin) return next.href;
      res = await browser.get(next.href);
    } else if (res.status === 200 && res.text.includes('action="/signin"')) {
      res = await browser.postForm('/signin', signInFields(res.text, username, password));
    } else if (res.status === 200 && res.text.includes('name="decision"')) {
      res = await browser.postForm('/consent', { _csrf: hidden(res.text, '_csrf'), request: hidden(res.text, 'request'), decision });
    } else {
      throw new Error(`unexpected page ${res.status}: ${res.text.slice(0, 200)}`);
    }
  }
  throw new Error('too many steps');
}
