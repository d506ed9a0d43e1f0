// Generated from /openapi.json by scripts/openapi-client.ts; do not edit.
/* eslint-disable */

export type AbandonSandbox = {
  resourceGeneration: number;
  providerFence: number;
  idempotencyKey: string;
};

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

export type CreateWorkspaceVolume = {
  idempotencyKey: string;
};

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

export type EnvironmentRuntimeWorkspaceContext = {
  environmentId: string;
  profileId: string;
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
    storage: {
      providerId: string;
      pvc: {
        namespace: string;
        name: string;
        uid: string;
      };
    };
    mount: {
      path: string;
      readOnly: boolean;
    };
  };
  networkPolicyGeneration: number;
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

export type NetworkPolicyRequest = {
  policy: {
    [key: string]: unknown;
  };
};

export type PlacementProjection = {
  version: "v1";
  tenantId: string;
  projectId: string;
  runId: string;
  environmentId: string;
  lifecycleGeneration: number;
  operationId: string;
  resourceGeneration: number;
  providerFence: number;
  currentFencingGeneration: number;
  lease: {
    revision: number;
    state: "Active";
    current: true;
    expiresAt: string | null;
    updatedAt: string;
  };
  resource: {
    resourceId: string;
    endpoint: string | null;
    placement: {
      [key: string]: string;
    };
  };
  providerPin: {
    providerId: string;
    adapterVersion: string;
    optionsSchemaVersion: number;
    optionsRevision: string;
    resourceId: string;
    resourceGeneration: number;
    capabilities: Array<string>;
  };
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

export type Problem = {
  type: string;
  title: string;
  status: number;
  detail?: string;
  instance?: string;
};

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

export type RegisterEnvironment = {
  idempotencyKey: string;
};

export type ReleaseEnvironment = {
  expectedLifecycleGeneration: number;
  idempotencyKey: string;
};

export type RenewSandbox = {
  expectedResourceGeneration: number;
  providerFence: number;
  idempotencyKey: string;
};

export type ResolvedRuntimeProfile = (RuntimeProfileMapping) & ({
  replayed: boolean;
});

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

export type RuntimeProfileMapping = {
  profileId: string;
  sourceProfileId: string;
  environmentId: string;
  endpoint: string;
  configureUrl: string;
  audience: string;
  placement: {
    resourceId: string;
    operationId: string;
    lifecycleGeneration: number;
    resourceGeneration: number;
    providerFence: number;
    podUid: string;
    podIp: string;
    serverName: string;
    port: number;
  };
  pins: {
    actor: string;
    selectionHash: string;
    sourceConfigurationHash: string;
    profileHash: string;
  };
  profile: {
    [key: string]: unknown;
  };
  createdAt: string;
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

export type WorkspaceFlush = {
  flushOperationId: string;
  operationId: string;
  stepId: string;
  volumeId: string;
  state: "Reserved" | "Uncertain" | "Verified" | "Refused";
  lease: {
    operationId: string;
    resourceGeneration: number;
    providerFence: number;
  };
  transitionRevision: number;
  dataGeneration: number;
  nextDataGeneration: number;
  deliveries: number;
  receipt: {
    [key: string]: unknown;
  } | null;
  hostReceiptSha256: string | null;
  reservedAt: string;
  settledAt: string | null;
};

export type WorkspaceFlushList = {
  flushes: Array<WorkspaceFlush>;
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

export interface Paths {
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
  "/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/runtime-bootstrap/profiles/{profileId}": {
    /** A resolved runtime profile, while its actor, selection, source configuration and endpoint still match */
    get: {
      path: {
        projectId: string;
        runId: string;
        environmentId: string;
        profileId: string;
      };
      query: never;
      body: never;
      responses: {
        200: RuntimeProfileMapping;
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
        409: Problem;
      };
    };
  };
  "/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/runtime-bootstrap/profiles/{profileId}/resolve": {
    /** Resolve a source runtime profile to an endpoint-bound copy for the current sandbox (run-bound token) */
    post: {
      path: {
        projectId: string;
        runId: string;
        environmentId: string;
        profileId: string;
      };
      query: never;
      body: never;
      responses: {
        200: ResolvedRuntimeProfile;
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
        409: Problem;
        503: Problem;
      };
    };
  };
  "/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/runtime-bootstrap/profiles/{profileId}/workspace": {
    /** The Workspace a resolved runtime profile's sandbox mounts, read with its lease under the owner lock */
    get: {
      path: {
        projectId: string;
        runId: string;
        environmentId: string;
        profileId: string;
      };
      query: never;
      body: never;
      responses: {
        200: EnvironmentRuntimeWorkspaceContext;
        400: Problem;
        401: Problem;
        403: Problem;
        404: Problem;
        409: Problem;
      };
    };
  };
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
  "/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/sandbox/v1/internal/placement": {
    /** The same projection for a run-bound token (fresh ReadRunSelection, exact project/run claims) */
    get: {
      path: {
        projectId: string;
        runId: string;
        environmentId: string;
      };
      query: never;
      body: never;
      responses: {
        200: PlacementProjection;
        204: null;
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
  "/api/projects/{projectId}/runs/{runId}/environments/{environmentId}/sandbox/v1/placement": {
    /** The placement of the exact current, Active, unexpired lease (fresh WriteProjects) */
    get: {
      path: {
        projectId: string;
        runId: string;
        environmentId: string;
      };
      query: never;
      body: never;
      responses: {
        200: PlacementProjection;
        204: null;
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
  "/healthz": {
    /** Liveness: the process answers */
    get: {
      path: never;
      query: never;
      body: never;
      responses: {
        200: {
          status: "ok";
        };
      };
    };
  };
  "/internal/provider-lifecycle/reports": {
    /** Provider lifecycle reports (closed until their admissions exist) */
    post: {
      path: never;
      query: never;
      body: never;
      responses: {
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
  "/metrics": {
    /** Prometheus metrics (on the metrics listener, not the API port) */
    get: {
      path: never;
      query: never;
      body: never;
      responses: {
        200: string;
      };
    };
  };
  "/readyz": {
    /** Readiness: the database answers */
    get: {
      path: never;
      query: never;
      body: never;
      responses: {
        200: {
          status: "ready";
        };
        503: Problem;
      };
    };
  };
}
