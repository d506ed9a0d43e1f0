// Generated from /openapi.json by scripts/openapi-client.ts; do not edit.
/* eslint-disable */

export type * from './types/shared.ts';
export type * from './types/admin.ts';
export type * from './types/build-test.ts';
export type * from './types/lifecycle.ts';
export type * from './types/operations.ts';
export type * from './types/placement.ts';
export type * from './types/runtime.ts';
export type * from './types/sandbox.ts';
export type * from './types/workspace.ts';

import type { AdminPaths } from './types/admin.ts';
import type { BuildTestPaths } from './types/build-test.ts';
import type { LifecyclePaths } from './types/lifecycle.ts';
import type { OperationsPaths } from './types/operations.ts';
import type { PlacementPaths } from './types/placement.ts';
import type { RuntimePaths } from './types/runtime.ts';
import type { SandboxPaths } from './types/sandbox.ts';
import type { WorkspacePaths } from './types/workspace.ts';

/** Every path of the document, with its methods. */
export interface Paths extends AdminPaths, BuildTestPaths, LifecyclePaths, OperationsPaths, PlacementPaths, RuntimePaths, SandboxPaths, WorkspacePaths {}
