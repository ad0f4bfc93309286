import { randomBytes } from 'node:crypto';

/** A unique key prefix per test, so tests sharing one Redis never see each other's keys. */
export const uniquePrefix = (name = 't') => `${name}-${randomBytes(4).toString('hex')}:`;
