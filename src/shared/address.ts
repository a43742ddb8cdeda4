// The key a client address is counted under by the throttles. One IPv4 address is one client (a
// home or an office NAT); an IPv6 client is handed a whole /64 (RFC 6177's smallest end-site
// prefix, and what SLAAC and privacy addresses rotate within), so counting /128s would give one
// attacker 2^64 fresh addresses. Wider prefixes (/56, /48) usually hold many unrelated people and
// are not aggregated (decision 144).
import { isIPv4, isIPv6 } from 'node:net';

/** The IPv6 groups of `address` as 8 numbers, or undefined when it is not one. */
function ipv6Groups(address: string): number[] | undefined {
  const zone = address.indexOf('%');
  let text = zone === -1 ? address : address.slice(0, zone);
  if (!isIPv6(text)) return undefined;
  // An embedded IPv4 tail (::ffff:192.0.2.1, 64:ff9b::192.0.2.1) is two groups.
  const lastColon = text.lastIndexOf(':');
  const tail = text.slice(lastColon + 1);
  if (isIPv4(tail)) {
    const [a, b, c, d] = tail.split('.').map(Number) as [number, number, number, number];
    text = `${text.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', rest] = text.split('::') as [string, string | undefined];
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((g) => Number.parseInt(g, 16)));
  const front = parse(head);
  if (rest === undefined) return front;
  const back = parse(rest);
  return [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back];
}

/**
 * `ip` as the throttles count it: an IPv4 address as it is, an IPv4-mapped IPv6 address as the
 * IPv4 address it maps, any other IPv6 address as its /64 (`2001:db8:0:1::/64`). Anything else
 * (a Unix socket's empty address) is kept as it is.
 */
export function addressKey(ip: string): string {
  if (isIPv4(ip)) return ip;
  const groups = ipv6Groups(ip);
  if (!groups) return ip;
  const mapped = groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff;
  if (mapped) {
    const [hi = 0, lo = 0] = groups.slice(6);
    return `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  }
  return `${groups
    .slice(0, 4)
    .map((g) => g.toString(16))
    .join(':')}::/64`;
}
