import { isIPv4, isIPv6 } from 'node:net';

/**
 * The key a client address is counted under by the per-address limits. IPv4 is counted by
 * address. IPv6 is counted by its /64, written like `2001:db8:1:2::/64`: a /64 is what one
 * subscriber or one LAN is given, so one attacker holds 2^64 addresses but one /64. An
 * IPv4-mapped IPv6 address (`::ffff:192.0.2.1`, a dual-stack socket's view of an IPv4 client)
 * is the IPv4 address it maps. Anything else (not an IP address) is its own key.
 */
export function addressKey(ip: string): string {
  if (isIPv4(ip)) return ip;
  // A zone (`fe80::1%eth0`) names the interface, not the client.
  const bare = ip.replace(/%.*$/, '');
  if (!isIPv6(bare)) return ip;
  const groups = ipv6Groups(bare);
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    const [high, low] = [groups[6]!, groups[7]!];
    return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
  }
  return `${compressed([...groups.slice(0, 4), 0, 0, 0, 0])}/64`;
}

/** The eight 16-bit groups of a valid IPv6 address (with an IPv4 tail, if written so). */
function ipv6Groups(ip: string): number[] {
  const parse = (part: string): number[] => {
    if (part === '') return [];
    return part.split(':').flatMap((piece) => {
      if (!piece.includes('.')) return [Number.parseInt(piece, 16)];
      const [a, b, c, d] = piece.split('.').map(Number) as [number, number, number, number];
      return [(a << 8) | b, (c << 8) | d];
    });
  };
  const gap = ip.indexOf('::');
  if (gap < 0) return parse(ip);
  const head = parse(ip.slice(0, gap));
  const tail = parse(ip.slice(gap + 2));
  return [...head, ...Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}

/** RFC 5952's text form: lower-case hex, and the longest run of two or more zero groups as `::`. */
function compressed(groups: readonly number[]): string {
  let start = -1;
  let length = 0;
  for (let i = 0; i < groups.length; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < groups.length && groups[j] === 0) j++;
    if (j - i > length) [start, length] = [i, j - i];
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (length < 2) return hex.join(':');
  return `${hex.slice(0, start).join(':')}::${hex.slice(start + length).join(':')}`;
}
