// passkeys/ offers: a passkey on the wire.
export { PasskeyComponent } from './routes.ts';
