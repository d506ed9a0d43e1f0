// Generated from /openapi.json by scripts/openapi-client.ts; do not edit.
/* eslint-disable */

import type { Problem } from './shared.ts';

export type CoreAcceptedCommand = {
  [key: string]: unknown;
};

export type CoreAcceptedCommandRequest = ({
  operationId: string;
  selectionHash: string;
  command: {
    executable: string;
    args: Array<string>;
  };
  options: {
    workingDirectory: (".") | (string);
    environment: {
      [key: string]: string;
    };
    timeoutSeconds: number;
    outputs: Array<string>;
  };
  version: 1;
}) | ({
  operationId: string;
  selectionHash: string;
  command: {
    executable: string;
    args: Array<string>;
  };
  options: {
    workingDirectory: (".") | (string);
    environment: {
      [key: string]: string;
    };
    timeoutSeconds: number;
    outputs: Array<string>;
  };
  version: 2;
  workspaceInput: {
    workspaceId: string;
    workspaceIncarnationId: string;
    baseSha: string;
    branchName: string;
    seed: {
      sha256: string;
      length: number;
    };
  };
});

export type CoreJournalAdmission = {
  [key: string]: unknown;
};

export type CoreJournalAdmissionRequest = {
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

export type CoreRuntimeAdminAnswer = {
  [key: string]: unknown;
};

export type CoreRuntimeOperationTerms = {
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
};

export type CoreRuntimeRegistrationRequest = {
  profileId: string;
  sessionId: string;
  generation: number;
};

export type CoreRuntimeSavedEvidence = {
  transitionRevision: number;
  dataGeneration: number;
  hostReceiptSha256: string;
  manifestSha256: string;
};

export type CoreRuntimeStateMove = {
  fromRevision: number;
  to: "reserved" | "fenced" | "committed" | "completed" | "abandoned";
};

export type CoreWorkspaceSeed = {
  tenantId: string;
  projectId: string;
  sha256: string;
  length: number;
};

export type EventsConfigurationAcknowledgment = {
  sessionId: string;
  eventId: string;
  objectReference: string;
  sha256: string;
  length: number;
};

export type Grant = {
  tenantId: string;
  projectId: string;
  subject: string;
  permissions: Array<string>;
};

export type GrantPermissions = {
  permissions: Array<"ReadProjects" | "WriteProjects" | "ReadRunSelection">;
};

export type NetworkPolicyRequest = {
  policy: {
    [key: string]: unknown;
  };
};

export type ProviderCandidate = {
  providerId: string;
  adapterVersion: string;
  optionsSchemaVersion: number;
  optionsRevision: string;
  hostingPattern: string;
  capabilities: Array<string>;
  exclusive: boolean;
};

export type ProviderIdentity = {
  providerId: string;
  adapterVersion: string;
  optionsSchemaVersion: number;
  optionsRevision: string;
  hostingPattern: string;
  capabilities: Array<string>;
};

export type RunSelection = {
  tenantId: string;
  projectId: string;
  runId: string;
  candidates: Array<ProviderCandidate>;
  selectionHash: string;
};

export type RunSelectionRequest = {
  candidates: Array<ProviderCandidate>;
};

export interface AdminPaths {
  "/admin/provider": {
    /** The configured provider's identity, to copy into a run selection */
    get: {
      path: never;
      query: never;
      body: never;
      responses: {
        200: ProviderIdentity;
        400: Problem;
        401: Problem;
        403: Problem;
      };
    };
  };
  "/admin/tenants/{tenantId}/projects/{projectId}/core/workspace-seeds": {
    /** Register a version 2 workspace seed (embedded Core stand-in) */
    post: {
      path: {
        tenantId: string;
        projectId: string;
      };
      query: never;
      body: never;
      responses: {
        200: CoreWorkspaceSeed;
        201: CoreWorkspaceSeed;
        400: Problem;
        401: Problem;
        403: Problem;
        413: Problem;
        415: Problem;
      };
    };
  };
  "/admin/tenants/{tenantId}/projects/{projectId}/grants/{subject}": {
    /** Set a subject's permissions on a project (embedded mode) */
    put: {
      path: {
        tenantId: string;
        projectId: string;
        subject: string;
      };
      query: never;
      body: GrantPermissions;
      responses: {
        200: Grant;
        400: Problem;
        401: Problem;
        403: Problem;
      };
    };
  };
  "/admin/tenants/{tenantId}/projects/{projectId}/network-policies/{generation}": {
    /** Register a project's network policy generation (embedded mode) */
    put: {
      path: {
        tenantId: string;
        projectId: string;
        generation: number;
      };
      query: never;
      body: NetworkPolicyRequest;
      responses: {
        200: {
          tenantId: string;
          projectId: string;
          generation: number;
        };
        201: {
          tenantId: string;
          projectId: string;
          generation: number;
        };
        400: Problem;
        401: Problem;
        403: Problem;
        409: Problem;
      };
    };
  };
  "/admin/tenants/{tenantId}/projects/{projectId}/runs/{runId}/core/build-test/steps/{stepId}/checkpoints/{checkpointId}": {
    /** Register a checkpoint's accepted BuildTest command (embedded Core stand-in) */
    put: {
      path: {
        tenantId: string;
        projectId: string;
        runId: string;
        stepId: string;
        checkpointId: string;
      };
      query: never;
      body: CoreAcceptedCommandRequest;
      responses: {
        200: CoreAcceptedCommand;
        201: CoreAcceptedCommand;
        400: Problem;
        401: Problem;
        403: Problem;
        409: Problem;
      };
    };
  };
  "/admin/tenants/{tenantId}/projects/{projectId}/runs/{runId}/core/build-test/steps/{stepId}/checkpoints/{checkpointId}/journal-admission": {
    /** Record the journal acknowledgment Events admitted for a checkpoint's operation (embedded) */
    put: {
      path: {
        tenantId: string;
        projectId: string;
        runId: string;
        stepId: string;
        checkpointId: string;
      };
      query: never;
      body: CoreJournalAdmissionRequest;
      responses: {
        200: CoreJournalAdmission;
        201: CoreJournalAdmission;
        400: Problem;
        401: Problem;
        403: Problem;
        409: Problem;
      };
    };
  };
  "/admin/tenants/{tenantId}/projects/{projectId}/runs/{runId}/core/runtime/steps/{stepId}/environments/{environmentId}/operations/{operationId}": {
    /** Reserve a suspend or resume operation for a step (embedded Core stand-in) */
    put: {
      path: {
        tenantId: string;
        projectId: string;
        runId: string;
        stepId: string;
        environmentId: string;
        operationId: string;
      };
      query: never;
      body: CoreRuntimeOperationTerms;
      responses: {
        200: CoreRuntimeAdminAnswer;
        201: CoreRuntimeAdminAnswer;
        400: Problem;
        401: Problem;
        403: Problem;
        409: Problem;
      };
    };
  };
  "/admin/tenants/{tenantId}/projects/{projectId}/runs/{runId}/core/runtime/steps/{stepId}/environments/{environmentId}/operations/{operationId}/saved-evidence": {
    /** Save the evidence Core confirms for an operation (embedded Core stand-in) */
    put: {
      path: {
        tenantId: string;
        projectId: string;
        runId: string;
        stepId: string;
        environmentId: string;
        operationId: string;
      };
      query: never;
      body: CoreRuntimeSavedEvidence;
      responses: {
        200: CoreRuntimeAdminAnswer;
        201: CoreRuntimeAdminAnswer;
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
        409: Problem;
      };
    };
  };
  "/admin/tenants/{tenantId}/projects/{projectId}/runs/{runId}/core/runtime/steps/{stepId}/environments/{environmentId}/operations/{operationId}/state": {
    /** Move an operation's state from the revision read (embedded Core stand-in) */
    post: {
      path: {
        tenantId: string;
        projectId: string;
        runId: string;
        stepId: string;
        environmentId: string;
        operationId: string;
      };
      query: never;
      body: CoreRuntimeStateMove;
      responses: {
        200: CoreRuntimeAdminAnswer;
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
        409: Problem;
      };
    };
  };
  "/admin/tenants/{tenantId}/projects/{projectId}/runs/{runId}/core/runtime/steps/{stepId}/environments/{environmentId}/registrations/{registrationId}": {
    /** Register a Runtime for a step at its next generation (embedded Core stand-in) */
    put: {
      path: {
        tenantId: string;
        projectId: string;
        runId: string;
        stepId: string;
        environmentId: string;
        registrationId: string;
      };
      query: never;
      body: CoreRuntimeRegistrationRequest;
      responses: {
        200: CoreRuntimeAdminAnswer;
        201: CoreRuntimeAdminAnswer;
        400: Problem;
        401: Problem;
        403: Problem;
        409: Problem;
      };
    };
  };
  "/admin/tenants/{tenantId}/projects/{projectId}/runs/{runId}/core/runtime/steps/{stepId}/environments/{environmentId}/sessions/{sessionId}/events/{eventId}/protected-material/{objectReference}": {
    /** Store a session event's protected material (embedded Events stand-in) */
    put: {
      path: {
        tenantId: string;
        projectId: string;
        runId: string;
        stepId: string;
        environmentId: string;
        sessionId: string;
        eventId: string;
        objectReference: string;
      };
      query: never;
      body: never;
      responses: {
        200: EventsConfigurationAcknowledgment;
        201: EventsConfigurationAcknowledgment;
        400: Problem;
        401: Problem;
        403: Problem;
        409: Problem;
        413: Problem;
        415: Problem;
      };
    };
  };
  "/admin/tenants/{tenantId}/projects/{projectId}/runs/{runId}/selection": {
    /** Write a run's immutable provider selection (embedded mode) */
    put: {
      path: {
        tenantId: string;
        projectId: string;
        runId: string;
      };
      query: never;
      body: RunSelectionRequest;
      responses: {
        200: RunSelection;
        201: RunSelection;
        400: Problem;
        401: Problem;
        403: Problem;
        409: Problem;
      };
    };
  };
}
