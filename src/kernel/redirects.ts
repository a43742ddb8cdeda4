/**
 * Where a provider sign-in may send the browser afterwards: a path on PUBLIC_URL, or a URL on
 * PUBLIC_URL's origin or an origin of CORS_ORIGINS. Anything else (another origin, a
 * protocol-relative `//host`, a backslash a browser reads as a slash, a scheme other than http(s),
 * credentials in the URL, control characters) is refused: never an open redirect. The answer is
 * the absolute URL to send the browser to.
 */
export function safeRedirect(
  raw: string,
  config: { publicUrl: string; corsOrigins: readonly string[] },
): string | undefined {
  if (raw.length === 0 || raw.length > 2048 || /[\p{Cc}\s\\]/u.test(raw)) return undefined;
  const base = new URL(config.publicUrl);
  let url: URL;
  try {
    // A path is on PUBLIC_URL, under its own path if it has one.
    url = raw.startsWith('/') && !raw.startsWith('//') ? new URL(config.publicUrl + raw) : new URL(raw);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return undefined;
  if (url.username !== '' || url.password !== '') return undefined;
  // Dot segments are resolved by now: `/..//evil.example` would otherwise become a `//` path,
  // which another app on the origin might read as a host, and `/../x` would leave PUBLIC_URL's path.
  if (url.pathname.startsWith('//')) return undefined;
  if (url.origin === base.origin) {
    const prefix = base.pathname.replace(/\/+$/, '');
    return url.pathname === prefix || url.pathname.startsWith(`${prefix}/`) || prefix === ''
      ? url.href
      : undefined;
  }
  return config.corsOrigins.some((origin) => new URL(origin).origin === url.origin) ? url.href : undefined;
}
