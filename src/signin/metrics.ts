// The sign-in core's metrics on GET /metrics (plugins/metrics.ts): every attempt by outcome, and
// by method and outcome (CONTRACT), and the second factor a success also used.
import { Counter } from 'prom-client';
import type { MetricFamilies } from '../plugins/metrics.ts';

export const signinMetrics: MetricFamilies = (registry) => {
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
  return {
    signin: (outcome, method, factor) => {
      attempts.inc({ outcome });
      byMethod.inc({ method, outcome });
      if (factor) secondFactors.inc({ factor });
    },
  };
};
