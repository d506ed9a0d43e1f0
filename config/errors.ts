import { problemClass } from '../lib/errors.ts';

export interface ConfigProblem {
  variable: string;
  /** Never contains a secret: values are shown only for non-secret variables, URLs without credentials. */
  reason: string;
}

/** The environment does not describe a valid configuration; lists every problem at once. */
export class ConfigError extends problemClass({
  code: 'config-invalid',
  status: 500,
  title: 'Invalid configuration',
}) {
  constructor(readonly problems: readonly ConfigProblem[]) {
    super(['Invalid configuration:', ...problems.map((p) => `  - ${p.variable}: ${p.reason}`)].join('\n'));
  }
}
