// signin/ offers the sign-in methods the answers their routes give, with their messages and headers.
export { SECOND_FACTOR_HEADER, signinAnswers, signinMessage } from './answers.ts';
