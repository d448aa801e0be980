#!/usr/bin/env node
// Committed so the workspace can link the bin before the first build; the code is the tsup bundle.
import '../dist/cli.js';
