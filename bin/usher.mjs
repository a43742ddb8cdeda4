#!/usr/bin/env node
// The admin CLI (`npx usher …`, `npm run cli -- …`): the Node version check, then the TypeScript.
import './node-check.mjs';

import('../src/cli/main.ts');
