// Entry point. Node's compile cache keeps each module's type-stripped and compiled form on disk
// (NODE_COMPILE_CACHE, or a directory under the system's temp dir), so a restart skips stripping
// TypeScript and compiling: a faster start, and no TypeScript stripper held in memory. Enabled
// before anything else is imported, or those imports would not be cached.
import { enableCompileCache } from 'node:module';

enableCompileCache();
await import('./run.ts');
