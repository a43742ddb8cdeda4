// The server as `npm start` runs it: the Node version check, then the TypeScript entry.
import './node-check.mjs';

import('../src/server.ts');
