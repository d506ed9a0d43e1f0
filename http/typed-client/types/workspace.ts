// Generated from /openapi.json by scripts/openapi-client.ts; do not edit.
/* eslint-disable */

import type { Problem, WorkspaceFlush } from './shared.ts';

export type CreateWorkspaceVolume = {
  idempotencyKey: string;
};

export type PlacementRelease = {
  operationId: string;
  state: "Released" | "Releasing";
  lease: {
    operationId: string;
    resourceGeneration: number;
    providerFence: number;
  };
  workspace: {
    volumeId: string;
    state: "Available" | "Attached";
    transitionRevision: number;
    dataGeneration: number;
  };
};

export type PlacementReleaseRequest = {
  operation: {
    kind: "suspend" | "resume";
    placement: {
      leaseOperationId: string;
      resourceGeneration: number;
      providerFence: number;
    };
    workspace: {
      volumeId: string;
      transitionRevision: number;
    };
    requireReleaseCurrent: boolean;
    ref: {
      tenantId: string;
      projectId: string;
      runId: string;
      stepId: string;
      environmentId: string;
    };
    operationId: string;
    state: "reserved" | "fenced" | "committed" | "completed" | "abandoned";
    stateRevision: number;
  };
  evidence: {
    transitionRevision: number;
    dataGeneration: number;
    hostReceiptSha256: string;
    manifestSha256: string;
  };
};

export type RestoredWorkspace = {
  operationId: string;
  lifecycleGeneration: number;
  lease: {
    operationId: string;
    lifecycleGeneration: number;
    resourceGeneration: number;
    providerFence: number;
    resourceId: string;
  };
  workspace: {
    volumeId: string;
    state: "Attached";
    transitionRevision: number;
    resourceGeneration: number;
    dataGeneration: number;
    mountPath: string;
    readOnly: boolean;
  };
  networkPolicyGeneration: number;
};

export type ResumeBootstrapAttempt = {
  attemptId: string;
  attemptSeq: number;
  bootstrapId: string;
  consumeId: string;
  exchangeId: string;
  resumeOperationId: string;
  registrationId: string;
  registrationGeneration: number;
  state: "Delivering" | "Activated" | "Refused" | "StateLost";
  deliveries: number;
};

export type ResumeBootstrapOutcome = {
  outcome: "Activated" | "StateLost";
  attempt: ResumeBootstrapAttempt;
  receipt?: {
    [key: string]: unknown;
  };
  receiptSha256: string;
  loss?: {
    observedAt: string;
    sessionState: "Missing";
    revokeRegistrationId: string;
  };
};

export type ResumeReceipt = {
  operationId: string;
  restoredWorkspace: RestoredWorkspace;
  contentProof: {
    treeHash: string;
    fileCount: number;
    byteCount: number;
    computedAt: string;
  };
  networkPolicyGeneration: number;
  verifiedAt: string;
};

export type RuntimeResumeBootstrapRequest = {
  operation: {
    kind: "suspend" | "resume";
    placement: {
      leaseOperationId: string;
      resourceGeneration: number;
      providerFence: number;
    };
    workspace: {
      volumeId: string;
      transitionRevision: number;
    };
    requireReleaseCurrent: boolean;
    ref: {
      tenantId: string;
      projectId: string;
      runId: string;
      stepId: string;
      environmentId: string;
    };
    operationId: string;
    state: "reserved" | "fenced" | "committed" | "completed" | "abandoned";
    stateRevision: number;
  };
  manifest: {
    source: {
      leaseOperationId: string;
      lifecycleGeneration: number;
      resourceGeneration: number;
      providerFence: number;
      networkPolicyGeneration: number;
    };
    workspace: {
      volumeId: string;
      transitionRevision: number;
      dataGeneration: number;
      treeHash: string;
      fileCount: number;
      byteCount: number;
    };
    hostReceiptSha256: string;
    configuration: {
      sessionId: string;
      eventId: string;
      objectReference: string;
      sha256: string;
      length: number;
    } | null;
  };
  hostReceiptSha256: string;
  transitionRevision: number;
  restoredWorkspace: {
    operationId: string;
    lifecycleGeneration: number;
    lease: {
      operationId: string;
      lifecycleGeneration: number;
      resourceGeneration: number;
      providerFence: number;
      resourceId: string;
    };
    workspace: {
      volumeId: string;
      state: "Attached";
      transitionRevision: number;
      resourceGeneration: number;
      dataGeneration: number;
      mountPath: string;
      readOnly: boolean;
    };
    networkPolicyGeneration: number;
  };
  phase: 4;
  registration: {
    registrationId: string;
    profileId: string;
    sessionId: string;
    generation: number;
  };
  attemptId?: string;
};

export type RuntimeWorkspaceResumeRequest = {
  operation: {
    kind: "suspend" | "resume";
    placement: {
      leaseOperationId: string;
      resourceGeneration: number;
      providerFence: number;
    };
    workspace: {
      volumeId: string;
      transitionRevision: number;
    };
    requireReleaseCurrent: boolean;
    ref: {
      tenantId: string;
      projectId: string;
      runId: string;
      stepId: string;
      environmentId: string;
    };
    operationId: string;
    state: "reserved" | "fenced" | "committed" | "completed" | "abandoned";
    stateRevision: number;
  };
  manifest: {
    source: {
      leaseOperationId: string;
      lifecycleGeneration: number;
      resourceGeneration: number;
      providerFence: number;
      networkPolicyGeneration: number;
    };
    workspace: {
      volumeId: string;
      transitionRevision: number;
      dataGeneration: number;
      treeHash: string;
      fileCount: number;
      byteCount: number;
    };
    hostReceiptSha256: string;
    configuration: {
      sessionId: string;
      eventId: string;
      objectReference: string;
      sha256: string;
      length: number;
    } | null;
  };
  hostReceiptSha256: string;
  transitionRevision: number;
  restoredWorkspace?: {
    operationId: string;
    lifecycleGeneration: number;
    lease: {
      operationId: string;
      lifecycleGeneration: number;
      resourceGeneration: number;
      providerFence: number;
      resourceId: string;
    };
    workspace: {
      volumeId: string;
      state: "Attached";
      transitionRevision: number;
      resourceGeneration: number;
      dataGeneration: number;
      mountPath: string;
      readOnly: boolean;
    };
    networkPolicyGeneration: number;
  };
};

export type RuntimeWorkspaceResumeVerifyRequest = {
  operation: {
    kind: "suspend" | "resume";
    placement: {
      leaseOperationId: string;
      resourceGeneration: number;
      providerFence: number;
    };
    workspace: {
      volumeId: string;
      transitionRevision: number;
    };
    requireReleaseCurrent: boolean;
    ref: {
      tenantId: string;
      projectId: string;
      runId: string;
      stepId: string;
      environmentId: string;
    };
    operationId: string;
    state: "reserved" | "fenced" | "committed" | "completed" | "abandoned";
    stateRevision: number;
  };
  manifest: {
    source: {
      leaseOperationId: string;
      lifecycleGeneration: number;
      resourceGeneration: number;
      providerFence: number;
      networkPolicyGeneration: number;
    };
    workspace: {
      volumeId: string;
      transitionRevision: number;
      dataGeneration: number;
      treeHash: string;
      fileCount: number;
      byteCount: number;
    };
    hostReceiptSha256: string;
    configuration: {
      sessionId: string;
      eventId: string;
      objectReference: string;
      sha256: string;
      length: number;
    } | null;
  };
  hostReceiptSha256: string;
  transitionRevision: number;
  restoredWorkspace: {
    operationId: string;
    lifecycleGeneration: number;
    lease: {
      operationId: string;
      lifecycleGeneration: number;
      resourceGeneration: number;
      providerFence: number;
      resourceId: string;
    };
    workspace: {
      volumeId: string;
      state: "Attached";
      transitionRevision: number;
      resourceGeneration: number;
      dataGeneration: number;
      mountPath: string;
      readOnly: boolean;
    };
    networkPolicyGeneration: number;
  };
};

export type SuspendResolution = {
  operationId: string;
  stateRevision: number;
  storage: {
    volumeId: string;
    resourceGeneration: number;
    providerId: string;
    pvc: {
      namespace: string;
      name: string;
      uid: string;
    };
  };
  providerBinding: {
    providerId: string;
    resourceId: string;
    leaseOperationId: string;
    lifecycleGeneration: number;
    resourceGeneration: number;
    providerFence: number;
  };
  transitionRevision: number;
  dataGeneration: number;
  nextDataGeneration: number;
};

export type SuspendResolveRequest = {
  operation: {
    kind: "suspend" | "resume";
    placement: {
      leaseOperationId: string;
      resourceGeneration: number;
      providerFence: number;
    };
    workspace: {
      volumeId: string;
      transitionRevision: number;
    };
    requireReleaseCurrent: boolean;
    ref: {
      tenantId: string;
      projectId: string;
      runId: string;
      stepId: string;
      environmentId: string;
    };
    operationId: string;
    state: "reserved" | "fenced" | "committed" | "completed" | "abandoned";
    stateRevision: number;
  };
  session: {
    registrationId: string;
    sessionId: string;
    generation: number;
  };
};

export type WorkspaceFlushRequest = {
  stepId: string;
  operationId: string;
  transitionRevision: number;
  nextDataGeneration: number;
};

export type WorkspaceFlushResult = {
  flush: WorkspaceFlush;
  replayed: boolean;
};

export type WorkspaceVolume = {
  volumeId: string;
  environmentId: string;
  resourceGeneration: number;
  dataGeneration: number;
  state: string;
  transitionRevision: number;
};

export interface WorkspacePaths {
  "/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/workspace-volumes": {
    /** Create (idempotently) a Workspace volume bound to the Environment */
    post: {
      path: {
        projectId: string;
        runId: string;
        environmentId: string;
      };
      query: never;
      body: CreateWorkspaceVolume;
      responses: {
        200: WorkspaceVolume;
        201: WorkspaceVolume;
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
        409: Problem;
      };
    };
  };
  "/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/workspace-volumes/{volumeId}/flush": {
    /** Flush the Workspace through its AgentHost before a suspend; only a verified receipt advances it */
    post: {
      path: {
        projectId: string;
        runId: string;
        environmentId: string;
        volumeId: string;
      };
      query: never;
      body: WorkspaceFlushRequest;
      responses: {
        200: WorkspaceFlushResult;
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
        409: Problem;
        502: Problem;
        503: Problem;
      };
    };
  };
  "/internal/runtime/resume/bootstrap": {
    /** Start the resumed Runtime on the new Host with a server-issued attempt */
    post: {
      path: never;
      query: never;
      body: RuntimeResumeBootstrapRequest;
      responses: {
        200: ResumeBootstrapOutcome;
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
        409: Problem;
        422: Problem;
        502: Problem;
        503: Problem;
      };
    };
  };
  "/internal/runtime/resume/prepare": {
    /** Advance the lifecycle once, reapply the network rules, and place a new Sandbox on the retained Workspace */
    post: {
      path: never;
      query: never;
      body: RuntimeWorkspaceResumeRequest;
      responses: {
        200: {
          state: "Prepared";
          restoredWorkspace: RestoredWorkspace;
        };
        202: {
          state: "Provisioning";
          operationId: string;
          lifecycleGeneration: number;
          leaseOperationId: string;
        };
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
        409: Problem;
        422: Problem;
        502: Problem;
        503: Problem;
      };
    };
  };
  "/internal/runtime/resume/verify": {
    /** Verify the restored Workspace: the tree hash of the new Host's read-only Workspace resume equals the manifest's */
    post: {
      path: never;
      query: never;
      body: RuntimeWorkspaceResumeVerifyRequest;
      responses: {
        200: ResumeReceipt;
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
        409: Problem;
        422: Problem;
        502: Problem;
        503: Problem;
      };
    };
  };
  "/internal/runtime/suspend/release-placement": {
    /** Release the placement of Core's Committed suspend operation once Core confirms the saved flush evidence */
    post: {
      path: never;
      query: never;
      body: PlacementReleaseRequest;
      responses: {
        200: PlacementRelease;
        202: PlacementRelease;
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
        409: Problem;
        502: Problem;
        503: Problem;
      };
    };
  };
  "/internal/runtime/suspend/resolve": {
    /** Resolve Core's Reserved suspend operation to the exact Workspace flush request (read-only) */
    post: {
      path: never;
      query: never;
      body: SuspendResolveRequest;
      responses: {
        200: SuspendResolution;
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
        409: Problem;
        502: Problem;
        503: Problem;
      };
    };
  };
}
