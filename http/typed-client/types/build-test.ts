// Generated from /openapi.json by scripts/openapi-client.ts; do not edit.
/* eslint-disable */

import type { Problem } from './shared.ts';

export type BuildTestAcknowledgeRequest = {
  request: BuildTestCommandRequest;
  acknowledgment: BuildTestJournalAcknowledgment;
};

export type BuildTestBindingPreparation = {
  sessionId: string;
  executionProfileReference: string;
  profileHash: string;
  versions: Array<string>;
  binding: {
    leaseOperationId: string;
    resourceGeneration: number;
    providerFence: number;
    workspace: {
      volumeId: string;
      resourceGeneration: number;
      dataGeneration: number;
    };
    networkPolicyGeneration: number;
  };
};

export type BuildTestCommandRequest = {
  checkpoint: {
    tenantId: string;
    projectId: string;
    runId: string;
    stepId: string;
    checkpointId: string;
  };
  expectedBinding: {
    leaseOperationId: string;
    resourceGeneration: number;
    providerFence: number;
    workspace: {
      volumeId: string;
      resourceGeneration: number;
      dataGeneration: number;
    };
    networkPolicyGeneration: number;
  };
};

export type BuildTestJournalAcknowledgment = {
  checkpoint: {
    tenantId: string;
    projectId: string;
    runId: string;
    stepId: string;
    checkpointId: string;
  };
  operationId: string;
  journalPosition: number;
  recordSha256: string;
  objectReference: string;
  capture: {
    sha256: string;
    length: number;
    requestFingerprint: string;
    collectorPodUid: string;
    commandPodUid: string;
  };
};

export type SandboxBuildTestOperation = {
  operationId: string;
  environmentId: string;
  checkpoint: {
    [key: string]: unknown;
  };
  version: number;
  acceptedCommandHash: string;
  requestFingerprint: string;
  profileHash: string;
  binding: {
    [key: string]: unknown;
  };
  state: "Running" | "ReconciliationRequired" | "Succeeded" | "Failed" | "Interrupted";
  step: "command" | "collect" | "cleanup" | null;
  pods: {
    command: {
      [key: string]: unknown;
    } | null;
    collector: {
      [key: string]: unknown;
    } | null;
  };
  preparation: {
    [key: string]: unknown;
  } | null;
  exitCode: number | null;
  log: {
    [key: string]: unknown;
  } | null;
  collectorReceipt: {
    [key: string]: unknown;
  } | null;
  capture: {
    sha256: string;
    length: number;
  } | null;
  error: {
    [key: string]: unknown;
  } | null;
  acknowledgment: {
    [key: string]: unknown;
  } | null;
  acknowledgedAt: string | null;
  cleanedAt: string | null;
  createdAt: string;
  updatedAt: string;
};

export type SandboxBuildTestOperationList = {
  operations: Array<SandboxBuildTestOperation>;
};

export type SandboxBuildTestOperationResult = {
  operation: SandboxBuildTestOperation;
  replay: boolean;
};

export interface BuildTestPaths {
  "/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/sandbox/build-test/binding-preparation": {
    /** Validate the current Sandbox profile binding for a session, starting nothing */
    get: {
      path: {
        projectId: string;
        runId: string;
        environmentId: string;
      };
      query: {
        sessionId: string;
        executionProfileReference: string;
      };
      body: never;
      responses: {
        200: BuildTestBindingPreparation;
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
        409: Problem;
        422: Problem;
        501: Problem;
      };
    };
  };
  "/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/sandbox/build-test/commands": {
    /** The Environment's BuildTest operations, newest first (at most 50) */
    get: {
      path: {
        projectId: string;
        runId: string;
        environmentId: string;
      };
      query: never;
      body: never;
      responses: {
        200: SandboxBuildTestOperationList;
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
      };
    };
    /** Resolve the accepted Core checkpoint and run its BuildTest operation */
    post: {
      path: {
        projectId: string;
        runId: string;
        environmentId: string;
      };
      query: never;
      body: BuildTestCommandRequest;
      responses: {
        200: SandboxBuildTestOperationResult;
        202: SandboxBuildTestOperationResult;
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
        409: Problem;
        422: Problem;
        501: Problem;
      };
    };
  };
  "/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/sandbox/build-test/commands/{operationId}": {
    /** Read the persisted BuildTest operation */
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
        200: SandboxBuildTestOperationResult;
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
        409: Problem;
        422: Problem;
        501: Problem;
      };
    };
  };
  "/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/sandbox/build-test/commands/{operationId}/reconcile": {
    /** Reconcile the same BuildTest operation and intent */
    post: {
      path: {
        projectId: string;
        runId: string;
        environmentId: string;
        operationId: string;
      };
      query: never;
      body: BuildTestCommandRequest;
      responses: {
        200: SandboxBuildTestOperationResult;
        202: SandboxBuildTestOperationResult;
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
        409: Problem;
        422: Problem;
        501: Problem;
      };
    };
  };
  "/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/sandbox/build-test/commands/{operationId}/workspace-capture": {
    /** The sealed version 2 output document, exact digest and length */
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
        200: string;
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
        409: Problem;
        410: Problem;
        422: Problem;
        501: Problem;
      };
    };
  };
  "/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/sandbox/build-test/commands/{operationId}/workspace-capture/acknowledge": {
    /** Save the Core-verified Events journal acknowledgment, then clean up */
    post: {
      path: {
        projectId: string;
        runId: string;
        environmentId: string;
        operationId: string;
      };
      query: never;
      body: BuildTestAcknowledgeRequest;
      responses: {
        200: SandboxBuildTestOperationResult;
        202: SandboxBuildTestOperationResult;
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
        409: Problem;
        422: Problem;
        501: Problem;
      };
    };
  };
}
