import { defineConfig } from 'tsup';

export default defineConfig({
  entry: ['src/index.ts'],
  // Both module systems, each with its types: a tool on CommonJS `require`s it, one on ES modules imports it.
  format: ['esm', 'cjs'],
  target: 'node20',
  platform: 'node',
  // The types of the bundled workspace packages are inlined as well.
  dts: { resolve: ['@authcli/protocol', '@authcli/pkce'] },
  clean: true,
  sourcemap: true,
  // The workspace's protocol and PKCE packages are bundled in (a few kilobytes, ES modules only): what is packed
  // depends on nothing that is not on the npm registry.
  noExternal: ['@authcli/protocol', '@authcli/pkce'],
  // import.meta.url (createRequire in the sources) in the CommonJS build as its own file's URL.
  shims: true,
});
