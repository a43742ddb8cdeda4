// @usher/client: a typed client for Usher. See README.md.
export {
  type Credentials,
  type CurrentSession,
  createUsherClient,
  type ErrorBody,
  type ErrorCode,
  type ErrorCodeOf,
  type Failure,
  type FailureOf,
  type Paths,
  type Profile,
  type Result,
  type ResultMethod,
  type ResultOf,
  type SessionMode,
  type SignInFailure,
  type Success,
  type SuccessBody,
  UnexpectedResponseError,
  type User,
  type UsherClient,
  type UsherClientOptions,
} from './client.ts';
export { parseJson, stringifyJson } from './json.ts';
export type { Page, PageLink } from './paging.ts';
