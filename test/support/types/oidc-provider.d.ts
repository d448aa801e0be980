// node-oidc-provider ships no type declarations; the tests use only its constructor and listen().
declare module 'oidc-provider' {
  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    listen(port: number, host: string): unknown;
  }
}
