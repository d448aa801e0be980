/**
 * What the tests use and the server never does: raw row access to a store ({@link TestRows}, store/test-rows.ts).
 * An entry of its own, `@authcli/server/testing` (dist/testing.js): nothing of the server imports it, so neither the
 * `authcli-server` bundle nor the library's index carries it (packages/server/test/bundle.test.ts checks both).
 */
import type { Store } from './store/store.js';
import { TestRows } from './store/test-rows.js';

export { TestRows };

/** Raw rows of `store`'s database, through the engine the store keeps to itself. */
export function testRows(store: Store): TestRows {
  // biome-ignore lint/complexity/useLiteralKeys: the engine is private to the server; the tests alone reach past that.
  return new TestRows(store['engine'].db);
}

/** Whether `password` is the one a stored hash was made from (a test checks which of several typed passwords was kept). */
export { verifyPasswordSync as passwordMatches } from './util/password.js';
