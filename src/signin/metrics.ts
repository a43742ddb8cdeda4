// The sign-in core's metrics on GET /metrics (plugins/metrics.ts): every attempt by outcome, and
// by method and outcome (CONTRACT), and the second factor a success also used.

import type { Registry } from 'prom-client';
import { Counter } from 'prom-client';
import {
  SECOND_FACTORS,
  type SecondFactorLabel,
  SIGNIN_METHODS,
  SIGNIN_OUTCOMES,
  type SigninMethodLabel,
  type SigninOutcomeLabel,
} from '../plugins/metrics.ts';

/** What every sign-in route tells the metrics: an attempt by its method and outcome, and the second factor a success also used. */
export interface SigninObservers {
  signin(outcome: SigninOutcomeLabel, method: SigninMethodLabel, factor?: SecondFactorLabel): void;
}

export function signinMetrics(registry: Registry): SigninObservers {
  const attempts = new Counter({
    name: 'usher_signin_attempts_total',
    help: 'Sign-in attempts by outcome.',
    labelNames: ['outcome'],
    registers: [registry],
  });
  const byMethod = new Counter({
    name: 'usher_signins_total',
    help: 'Sign-in attempts by method (password, passkey, …) and outcome.',
    labelNames: ['method', 'outcome'],
    registers: [registry],
  });
  const secondFactors = new Counter({
    name: 'usher_signin_second_factors_total',
    help: 'Successful sign-ins that also used a second factor, by factor: a TOTP code or a recovery code.',
    labelNames: ['factor'],
    registers: [registry],
  });
  // Every series at 0 from the start (plugins/metrics.ts).
  for (const outcome of SIGNIN_OUTCOMES) {
    attempts.inc({ outcome }, 0);
    for (const method of SIGNIN_METHODS) byMethod.inc({ method, outcome }, 0);
  }
  for (const factor of SECOND_FACTORS) secondFactors.inc({ factor }, 0);
  return {
    signin: (outcome: SigninOutcomeLabel, method: SigninMethodLabel, factor?: SecondFactorLabel) => {
      attempts.inc({ outcome });
      byMethod.inc({ method, outcome });
      if (factor) secondFactors.inc({ factor });
    },
  };
}
