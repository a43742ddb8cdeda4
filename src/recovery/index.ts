// recovery/ offers the features that mail links: the per-email ask limit and the answer to an ask.
export { type AskLimit, recordAsk } from './asks.ts';
export { AcceptedComponent } from './routes.ts';
