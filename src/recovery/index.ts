// recovery/ offers: the per-email ask limit and the answer to an ask (for the features that mail links), the reset mail.
export { type AskLimit, recordAsk } from './asks.ts';
export { mailPasswordReset } from './mails.ts';
export { AcceptedComponent } from './routes.ts';
