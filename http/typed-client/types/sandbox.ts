// Generated from /openapi.json by scripts/openapi-client.ts; do not edit.
/* eslint-disable */

import type { Problem } from './shared.ts';

export type AbandonSandbox = {
  resourceGeneration: number;
  providerFence: number;
  idempotencyKey: string;
};

export type LateResourceCleanup = {
  cleanupId: string;
  state: "Pending" | "Claimed" | "Released";
  foundBy: "late-result" | "owner-listing";
  resourceId: string;
  phase: string;
  source: {
    operationId: string;
    attemptId: string | null;
    lifecycleGeneration: number;
    resourceGeneration: number;
    providerFence: number;
  };
  claim: {
    attemptId: string | null;
    claimedAt: string | null;
    expiresAt: string | null;
    authorizingFence: {
      lifecycleGeneration: number;
      providerFence: number;
    } | null;
  } | null;
  attempt: {
    attemptId: string;
    state: string;
    dispatchedAt: string | null;
    resolvedAt: string | null;
    error: {
      code: string;
      message: string;
    } | null;
  } | null;
  receipt: {
    [key: string]: unknown;
  } | null;
  lastError: {
    code: string;
    message: string;
  } | null;
  workspaceConflict: {
    volumeId: string;
    heldByLease: number | null;
    state: "Attached" | "Available" | "Missing";
    detectedAt: string;
  } | null;
  createdAt: string;
  updatedAt: string;
} | null;

export type ProviderAttempt = {
  attemptId: string;
  kind: string;
  state: string;
  lifecycleGeneration: number;
  resourceGeneration: number;
  providerFence: number;
  fencingGeneration: number;
  requestFingerprint: string;
  createdAt: string;
  dispatchedAt: string | null;
  deadlineAt: string | null;
  resolvedAt: string | null;
  dispatchCount: number;
  resolution: string | null;
  error: {
    code: string;
    message: string;
  } | null;
  receipt?: unknown;
  lateResult?: unknown;
  lateResultAt: string | null;
};

export type ProvisionSandbox = {
  idempotencyKey: string;
  workspace: {
    volumeId: string;
    resourceGeneration: number;
    dataGeneration: number;
    mountPath: string;
    readOnly: boolean;
  };
  networkPolicyGeneration: number;
};

export type ReadinessCondition = {
  type: "LeaseCurrent" | "LeaseUnexpired" | "SandboxObserved" | "HostConfigured" | "NetworkPolicyVerified" | "WorkspaceAttached";
  status: "True" | "False" | "Unknown";
  reason: string;
  message: string;
  observedGeneration: number | null;
};

export type ReconcileResult = {
  environmentId: string;
  operationId: string;
  resourceGeneration: number;
  providerFence: number;
  currentFencingGeneration: number;
  lifecycleGeneration: number;
  state: string;
  current: boolean;
  phase: string | null;
  resourceId: string | null;
  placement: {
    [key: string]: string;
  } | null;
  workspace: {
    volumeId: string;
    resourceGeneration: number;
    dataGeneration: number;
    mountPath: string;
    readOnly: boolean;
  };
  networkPolicyGeneration: number;
  provider: {
    providerId?: unknown;
    adapterVersion?: unknown;
    optionsRevision?: unknown;
  };
  failure: {
    code: string;
    message: string;
  } | null;
  expiresAt: string | null;
  expired: boolean;
  revision: number;
  createdAt: string;
  updatedAt: string;
  lateResourceCleanup: LateResourceCleanup;
  networkPolicy: {
    generation: number;
    verified: boolean;
  } | null;
};

export type ReconcileSandbox = {
  operationId: string;
  resourceGeneration: number;
  providerFence: number;
  networkPolicyGeneration?: number;
};

export type RenewSandbox = {
  expectedResourceGeneration: number;
  providerFence: number;
  idempotencyKey: string;
};

export type SandboxInspection = {
  lease: SandboxLease;
  environmentRevision: number;
  readyForDispatch: boolean;
  phase: string | null;
  conditions: Array<ReadinessCondition>;
  observation: {
    exact: boolean;
    phase: string | null;
    finished: string | null;
    podUid?: string;
    error: {
      code: string;
      message: string;
    } | null;
  } | null;
  networkPolicy: {
    generation: number | null;
    verified: boolean;
  };
};

export type SandboxLease = {
  environmentId: string;
  operationId: string;
  resourceGeneration: number;
  providerFence: number;
  currentFencingGeneration: number;
  lifecycleGeneration: number;
  state: string;
  current: boolean;
  phase: string | null;
  resourceId: string | null;
  placement: {
    [key: string]: string;
  } | null;
  workspace: {
    volumeId: string;
    resourceGeneration: number;
    dataGeneration: number;
    mountPath: string;
    readOnly: boolean;
  };
  networkPolicyGeneration: number;
  provider: {
    providerId?: unknown;
    adapterVersion?: unknown;
    optionsRevision?: unknown;
  };
  failure: {
    code: string;
    message: string;
  } | null;
  expiresAt: string | null;
  expired: boolean;
  revision: number;
  createdAt: string;
  updatedAt: string;
};

export type SandboxRenewal = {
  lease: {
    environmentId: string;
    operationId: string;
    resourceGeneration: number;
    providerFence: number;
    currentFencingGeneration: number;
    lifecycleGeneration: number;
    state: string;
    current: boolean;
    phase: string | null;
    resourceId: string | null;
    placement: {
      [key: string]: string;
    } | null;
    workspace: {
      volumeId: string;
      resourceGeneration: number;
      dataGeneration: number;
      mountPath: string;
      readOnly: boolean;
    };
    networkPolicyGeneration: number;
    provider: {
      providerId?: unknown;
      adapterVersion?: unknown;
      optionsRevision?: unknown;
    };
    failure: {
      code: string;
      message: string;
    } | null;
    expiresAt: string | null;
    expired: boolean;
    revision: number;
    createdAt: string;
    updatedAt: string;
  };
  renewal: {
    idempotencyKey: string;
    expiresAt: string;
    attemptId: string;
    state: "Pending" | "Succeeded" | "Failed";
    error: {
      code: string;
      message: string;
    } | null;
  };
};

export interface SandboxPaths {
  "/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/sandbox": {
    /** Inspect the current lease; readyForDispatch needs exact observation and fresh network verification */
    get: {
      path: {
        projectId: string;
        runId: string;
        environmentId: string;
      };
      query: {
        networkPolicyGeneration?: number;
        wait?: string;
        after?: number;
      };
      body: never;
      responses: {
        200: SandboxInspection;
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
        409: Problem;
        503: Problem;
      };
    };
  };
  "/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/sandbox/abandon": {
    /** Abandon the current resource generation: fence first, then release */
    post: {
      path: {
        projectId: string;
        runId: string;
        environmentId: string;
      };
      query: never;
      body: AbandonSandbox;
      responses: {
        202: SandboxLease;
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
        409: Problem;
      };
    };
  };
  "/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/sandbox/provision": {
    /** Reserve a lease and provision the selected provider */
    post: {
      path: {
        projectId: string;
        runId: string;
        environmentId: string;
      };
      query: never;
      body: ProvisionSandbox;
      responses: {
        202: SandboxLease;
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
        409: Problem;
        422: Problem;
      };
    };
  };
  "/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/sandbox/reconcile": {
    /** Recover an interrupted operation through an exact listOwned, and release at most one pending late resource */
    post: {
      path: {
        projectId: string;
        runId: string;
        environmentId: string;
      };
      query: never;
      body: ReconcileSandbox;
      responses: {
        200: ReconcileResult;
        202: ReconcileResult;
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
        409: Problem;
      };
    };
  };
  "/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/sandbox/renew": {
    /** Extend the Active, unexpired lease by the configured time to live (renew attempt first) */
    post: {
      path: {
        projectId: string;
        runId: string;
        environmentId: string;
      };
      query: never;
      body: RenewSandbox;
      responses: {
        200: SandboxRenewal;
        202: SandboxRenewal;
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
        409: Problem;
      };
    };
  };
  "/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/sandbox/v1/late-resource-cleanups": {
    /** Retained late-resource cleanup records with their exact attempt, claim and receipt state */
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
          cleanups: Array<LateResourceCleanup>;
        };
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
        409: Problem;
      };
    };
  };
  "/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/sandbox/v1/operations/{operationId}/provider-attempts": {
    /** The operation's durable provider attempts, unresolved ones included */
    get: {
      path: {
        projectId: string;
        runId: string;
        environmentId: string;
        operationId: string;
      };
      query: never;
      body: never;
      responses: {
        200: {
          operationId: string;
          attempts: Array<ProviderAttempt>;
        };
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
        409: Problem;
      };
    };
  };
}
