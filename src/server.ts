// Entry point. First, the settings a process can only get at start (launch.ts, launchDefaults):
// when some are missing, the process replaces itself (same pid, same arguments) with one that has
// them, before anything else runs. Then Node's compile cache keeps each module's type-stripped and
// compiled form on disk (NODE_COMPILE_CACHE, or a directory under the system's temp dir), so a
// restart skips stripping TypeScript and compiling: a faster start, and no TypeScript stripper
// held in memory. Enabled before anything else is imported, or those imports would not be cached.
import { enableCompileCache } from 'node:module';
import { tmpdir } from 'node:os';
import { launchDefaults } from './launch.ts';

const relaunch =
  process.platform === 'win32' ? undefined : launchDefaults(process.env, process.execArgv, tmpdir());
if (relaunch && typeof process.execve === 'function') {
  const [node, script, ...args] = process.argv;
  // Does not return: the process image is replaced (pid, stdio and signals stay the same).
  process.execve(node!, [node!, ...relaunch.execArgv, script!, ...args], relaunch.env);
}
enableCompileCache();
await import('./run.ts');
