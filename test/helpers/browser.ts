// Debian's Chromium for the browser tests, launched the one way they all need: headless, as root
// (no sandbox), and with every background connection off (this machine reaches no network).
import { existsSync } from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { chromium } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** The `skip` of a browser suite: visible in the report when Chromium is not installed. */
export const skipWithoutChromium: string | false = existsSync(CHROMIUM)
  ? false
  : `Chromium not found at ${CHROMIUM} (apt-get install chromium)`;

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      // Apps under test listen on 127.0.0.1: localhost (the passkeys' relying party) must not try ::1.
      '--host-resolver-rules=MAP localhost 127.0.0.1',
    ],
  });
}

/**
 * A CDP virtual authenticator on `page`: a platform authenticator with resident keys and user
 * verification, answering every WebAuthn request by itself.
 */
export async function addVirtualAuthenticator(context: BrowserContext, page: Page): Promise<void> {
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
}
