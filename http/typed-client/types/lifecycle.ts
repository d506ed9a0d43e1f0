// Generated from /openapi.json by scripts/openapi-client.ts; do not edit.
/* eslint-disable */

import type { Problem, WorkspaceFlush } from './shared.ts';

export type EnvironmentLifecycle = {
  environmentId: string;
  tenantId: string;
  projectId: string;
  runId: string;
  lifecycleGeneration: number;
  state: "Registered" | "Releasing" | "Released";
  revision: number;
  createdAt: string;
  updatedAt: string;
};

export type EnvironmentPage = {
  environments: Array<EnvironmentSummary>;
  nextCursor: string | null;
};

export type EnvironmentSummary = {
  environmentId: string;
  projectId: string;
  runId: string;
  idempotencyKey: string;
  lifecycleGeneration: number;
  state: "Registered" | "Releasing" | "Released";
  sandboxState: "NoLease" | "Provisioning" | "Active" | "Releasing" | "ReconciliationRequired" | "Released" | "Failed" | null;
  leaseExpiresAt: string | null;
  unresolvedAttempts: number;
  pendingCleanups: number;
  quarantined: boolean;
  revision: number;
  createdAt: string;
  updatedAt: string;
};

export type JournalEntry = {
  revision: number;
  event: {
    [key: string]: unknown;
  };
  from?: unknown;
  to?: unknown;
  actor: string;
  source: "http" | "worker" | "reconciler" | "observer" | "provider" | "system" | null;
  recordedAt: string;
};

export type RegisterEnvironment = {
  idempotencyKey: string;
};

export type ReleaseEnvironment = {
  expectedLifecycleGeneration: number;
  idempotencyKey: string;
};

export type WorkspaceFlushList = {
  flushes: Array<WorkspaceFlush>;
};

export interface LifecyclePaths {
  "/api/projects/{projectId}/environments": {
    /** List the project's Environments (filters, cursor pages) */
    get: {
      path: {
        projectId: string;
      };
      query: {
        lifecycleState?: "Registered" | "Releasing" | "Released";
        sandboxState?: "NoLease" | "Provisioning" | "Active" | "Releasing" | "ReconciliationRequired" | "Released" | "Failed";
        hasUnresolvedAttempts?: boolean;
        hasPendingCleanups?: boolean;
        updatedSince?: string;
        limit?: number;
        cursor?: string;
      };
      body: never;
      responses: {
        200: EnvironmentPage;
        400: Problem;
        401: Problem;
        403: Problem;
      };
    };
  };
  "/api/projects/{projectId}/runs/{runId}/environments": {
    /** List the run's Environments (filters, cursor pages) */
    get: {
      path: {
        projectId: string;
        runId: string;
      };
      query: {
        lifecycleState?: "Registered" | "Releasing" | "Released";
        sandboxState?: "NoLease" | "Provisioning" | "Active" | "Releasing" | "ReconciliationRequired" | "Released" | "Failed";
        hasUnresolvedAttempts?: boolean;
        hasPendingCleanups?: boolean;
        updatedSince?: string;
        limit?: number;
        cursor?: string;
      };
      body: never;
      responses: {
        200: EnvironmentPage;
        400: Problem;
        401: Problem;
        403: Problem;
      };
    };
    /** Register an Environment (idempotent on the key) */
    post: {
      path: {
        projectId: string;
        runId: string;
      };
      query: never;
      body: RegisterEnvironment;
      responses: {
        200: EnvironmentLifecycle;
        201: EnvironmentLifecycle;
        400: Problem;
        401: Problem;
        403: Problem;
        409: Problem;
      };
    };
  };
  "/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/journal": {
    /** The Environment's transitions, one per revision (event fences and identifiers only) */
    get: {
      path: {
        projectId: string;
        runId: string;
        environmentId: string;
      };
      query: never;
      body: never;
      responses: {
        200: {
          environmentId: string;
          entries: Array<JournalEntry>;
        };
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
      };
    };
  };
  "/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/lifecycle": {
    /** Read the durable lifecycle of an Environment */
    get: {
      path: {
        projectId: string;
        runId: string;
        environmentId: string;
      };
      query: {
        wait?: string;
        after?: number;
      };
      body: never;
      responses: {
        200: EnvironmentLifecycle;
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
        503: Problem;
      };
    };
  };
  "/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/release": {
    /** Release an Environment */
    post: {
      path: {
        projectId: string;
        runId: string;
        environmentId: string;
      };
      query: never;
      body: ReleaseEnvironment;
      responses: {
        200: EnvironmentLifecycle;
        202: EnvironmentLifecycle;
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
        409: Problem;
      };
    };
  };
  "/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/workspace-flushes": {
    /** The Environment's Workspace flushes, newest first (at most 50); asks no Host */
    get: {
      path: {
        projectId: string;
        runId: string;
        environmentId: string;
      };
      query: never;
      body: never;
      responses: {
        200: WorkspaceFlushList;
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
      };
    };
  };
}
