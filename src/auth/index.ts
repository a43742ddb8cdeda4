// auth/ offers the other sign-in methods the token session a cookieless sign-in answers with.
export { tokenSessionFor } from './routes.ts';
