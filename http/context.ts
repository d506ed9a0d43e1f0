import type { Logger } from 'pino';
import type { AuthVariables } from './auth/middleware.ts';

export type AppEnv = { Variables: AuthVariables & { logger: Logger } };
