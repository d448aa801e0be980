/** A cookie-keeping HTTP client that plays a user's browser on the server's pages (no JavaScript needed there). */
export class HttpBrowser {
  cookies = new Map<string, string>();
  constructor(readonly base: string) {}

  async request(method: string, url: string, form?: Record<string, string>) {
    const res = await fetch(url.startsWith('http') ? url : this.base + url, {
      method,
      redirect: 'manual',
      headers: {
        ...(this.cookies.size ? { cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ') } : {}),
        ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      ...(form ? { body: new URLSearchParams(form).toString() } : {}),
    });
    for (const c of res.headers.getSetCookie()) {
      const pair = c.split(';')[0]!;
      const i = pair.indexOf('=');
      this.cookies.set(pair.slice(0, i), pair.slice(i + 1));
    }
    return { status: res.status, location: res.headers.get('location'), text: await res.text() };
  }
}

export function hidden(html: string, name: string): string {
  const m = new RegExp(`name="${name}" value="([^"]*)"`).exec(html);
  if (!m) throw new Error(`no ${name} field`);
  return m[1]!.replace(/&amp;/g, '&').replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&#39;/g, "'");
}

/**
 * Follows an authorization URL as a user would: sign in, approve. Returns
 * the final redirect to the client's callback.
 */
export async function approveInBrowser(browser: HttpBrowser, authorizationUrl: string, username: string, password: string): Promise<string> {
  let res = await browser.request('GET', authorizationUrl);
  for (let i = 0; i < 6; i++) {
    if ((res.status === 302 || res.status === 303) && res.location) {
      const next = new URL(res.location, browser.base);
      if (next.origin !== new URL(browser.base).origin) return next.href;
      res = await browser.request('GET', next.href);
    } else if (res.status === 200 && res.text.includes('action="/signin"')) {
      res = await browser.request('POST', '/signin', { _csrf: hidden(res.text, '_csrf'), return_to: hidden(res.text, 'return_to'), username, password });
    } else if (res.status === 200 && res.text.includes('name="decision"')) {
      res = await browser.request('POST', '/consent', { _csrf: hidden(res.text, '_csrf'), request: hidden(res.text, 'request'), decision: 'approve' });
    } else {
      throw new Error(`unexpected page ${res.status}: ${res.text.slice(0, 200)}`);
    }
  }
  throw new Error('too many steps');
}
