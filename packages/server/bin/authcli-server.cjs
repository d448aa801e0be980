#!/usr/bin/env node
// Committed so the workspace can link the bin before the first build; the code is the tsup bundle.
//
// CommonJS on purpose: libuv sizes its thread pool when it first uses it, and an ES module entry
// already has by the time its first line runs. RS256 signatures and scrypt run in that pool; one
// thread per core but one leaves a core to the event loop, which otherwise loses its CPU to the
// signing threads under load (measured in bench/). An operator's own UV_THREADPOOL_SIZE wins.
'use strict';
const { availableParallelism } = require('node:os');

if (!process.env.UV_THREADPOOL_SIZE) {
  process.env.UV_THREADPOOL_SIZE = String(Math.max(1, availableParallelism() - 1));
}
import('../dist/main.js');
