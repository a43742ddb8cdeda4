// users/ offers: the account and its rules, its repository, its events' data, identities on the wire, imports.
export { userData } from './events.ts';
export {
  type CheckedImport,
  checkImportRow,
  type ImportRefusal,
  type ImportRow,
  prepareImports,
  refusalOf,
  rowOfObject,
} from './imports.ts';
export {
  mailAccountDeleted,
  mailEmailChanged,
  mailPasswordChanged,
  mailVerification,
  usersMails,
} from './mails.ts';
export {
  ACCOUNT_COLUMNS,
  type AccountRecord,
  type AccountRow,
  EmailTakenError,
  toAccountRecord,
  toUser,
  USER_COLUMNS,
  type UsersRepository,
  userOfTuple,
} from './repository.ts';
export { IDENTITY_ID, IdentitySchema, identityView } from './routes.ts';
export { checkEmail, checkLocale, checkName, EMAIL_MAX, NAME_MAX } from './rules.ts';
export { type AccountIdentity, type AccountMethodReaders, keepAnAdmin } from './service.ts';
export {
  type AccountRole,
  accountDigest,
  emailKey,
  nameKey,
  parseRoles,
  savedEmail,
  type User,
} from './user.ts';
