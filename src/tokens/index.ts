// tokens/ offers the features that mail links: single-use tokens, their stored digest and their shape.
export { hashAccountToken, isTokenShaped, newAccountToken } from './tokens.ts';
