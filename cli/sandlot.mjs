#!/usr/bin/env node
// Entry point for `npx sandlot` and `npm start`: loads the TypeScript sources through tsx, so there
// is no build step to remember.
import { register } from 'tsx/esm/api';

register();
await import('./main.ts');
