// What other features may use of recovery/ at run time (scripts/layers.ts: a feature is imported
// through its index.ts or feature.ts).
export { mailPasswordReset } from './mails.ts';
