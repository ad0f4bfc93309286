#!/usr/bin/env node
// The `cornserve` executable (package.json "bin"): registers tsx, then runs the TypeScript entry.
import 'tsx';
await import('./main.ts');
