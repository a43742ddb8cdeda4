// What other features may use of users/ at run time (scripts/layers.ts: a feature is imported
// through its index.ts or feature.ts).
export { mailAccountDeleted, mailEmailChanged, mailPasswordChanged, mailVerification } from './mails.ts';
