#!/usr/bin/env node
// Committed so the workspace can link the bin before the first build; the code is the tsup bundle.
//
// CommonJS on purpose: `authcli token` with a valid cached token (scripts and kubectl call it constantly) is
// answered by dist/token-fast.cjs, one CommonJS file, before Node's ESM loader is started at all; an ES module
// entry costs that loader's start on every call (bench/README.md, "CLI cold start"). Everything else, and a token
// the fast path cannot answer (a refresh, an error, --help), goes to the ES module build, dist/cli.js.
'use strict';

function full() {
  return import('../dist/cli.js');
}

if (process.argv[2] === 'token') {
  require('../dist/token-fast.cjs')
    .cachedToken(process.argv.slice(3))
    .then((answered) => answered || full());
} else {
  full();
}
