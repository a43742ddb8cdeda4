// Runs before any TypeScript file is loaded. An older Node fails on the first `.ts` import with
// ERR_UNKNOWN_FILE_EXTENSION, which says nothing about the version: this says it in one line.
// Written for any Node that runs ES modules (no `?.`, `??` or top-level await), so the message
// shows even on a very old one. Imported first by bin/usher.mjs and bin/server.mjs, and run
// by itself at the start of `npm test`.

/** package.json's "engines" (a test keeps the two equal). */
export const MINIMUM_NODE = '24.7.0';

function older(version, minimum) {
  const have = version.split('.').map(Number);
  const need = minimum.split('.').map(Number);
  for (let i = 0; i < need.length; i++) {
    if (have[i] !== need[i]) return have[i] < need[i];
  }
  return false;
}

if (older(process.versions.node, MINIMUM_NODE)) {
  process.stderr.write(
    'usher: Node.js ' +
      MINIMUM_NODE +
      ' or newer is needed, this is Node.js ' +
      process.versions.node +
      ' (see .nvmrc)\n',
  );
  process.exit(1);
}
