// The provider port. E1 only needs the advertised identity (what a run selection is matched
// against); the effect operations (provision, describe, listOwned, release) arrive with E2.

export interface ProviderIdentity {
  providerId: string;
  adapterVersion: string;
  optionsSchemaVersion: number;
  /** Bounded immutable revision of the provider options this process was configured with. */
  optionsRevision: string;
  hostingPattern: string;
  capabilities: string[];
}
