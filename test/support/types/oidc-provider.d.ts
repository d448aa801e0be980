// node-oidc-provider ships no type declarations; the tests use only its constructor, listen(), use() and its events.
declare module 'oidc-provider' {
  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    listen(port: number, host: string): unknown;
    /** A Koa middleware before the provider's own. */
    use(middleware: (ctx: { body?: unknown }, next: () => Promise<void>) => Promise<void>): this;
    // biome-ignore lint/suspicious/noExplicitAny: each event passes its own arguments
    on(event: string, listener: (...args: any[]) => void): this;
  }
}
