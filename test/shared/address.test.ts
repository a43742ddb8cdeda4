// addressKey (src/shared/address.ts): what the per-address limits count a client address under.
// IPv4 by address, IPv6 by /64, an IPv4-mapped IPv6 address as the IPv4 address it maps. The
// limits themselves are tested over HTTP (test/users/registration-limits.test.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addressKey } from '../../src/shared/address.ts';

test('ISSUE 25: IPv4 addresses are keyed as they are', () => {
  assert.equal(addressKey('203.0.113.7'), '203.0.113.7');
  assert.equal(addressKey('127.0.0.1'), '127.0.0.1');
  assert.notEqual(addressKey('203.0.113.7'), addressKey('203.0.113.8'));
});

test('ISSUE 25: IPv6 addresses are keyed by their /64, in RFC 5952 text', () => {
  const cases: Array<[string, string]> = [
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:db8:1:2::ffff', '2001:db8:1:2::/64'],
    ['2001:0DB8:0001:0002:0000:0000:0000:0001', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8::/64'],
    ['2001:db8:0:0:1::1', '2001:db8::/64'],
    ['2001:db8:aaaa:bbbb:cccc:dddd:1.2.3.4', '2001:db8:aaaa:bbbb::/64'],
    // The longer run of zero groups is the one written as "::".
    ['0:0:0:1::5', '0:0:0:1::/64'],
    ['1:0:0:1:2:3:4:5', '1:0:0:1::/64'],
    ['::1', '::/64'],
    ['::', '::/64'],
    // A zone names an interface of this host, not the client.
    ['fe80::1%eth0', 'fe80::/64'],
  ];
  for (const [ip, key] of cases) assert.equal(addressKey(ip), key, ip);
  assert.equal(addressKey('2001:db8:1:2::1'), addressKey('2001:db8:1:2:ffff:ffff:ffff:ffff'), 'one /64');
  assert.notEqual(addressKey('2001:db8:1:2::1'), addressKey('2001:db8:1:3::1'), 'another /64');
});

test('ISSUE 25: an IPv4-mapped IPv6 address is keyed as its IPv4 address', () => {
  assert.equal(addressKey('::ffff:203.0.113.7'), '203.0.113.7');
  assert.equal(addressKey('::FFFF:cb00:7107'), '203.0.113.7');
  assert.equal(addressKey('0:0:0:0:0:ffff:203.0.113.7'), '203.0.113.7');
  // Not mapped: the IPv4-compatible form and other ::ffff:0:… prefixes are IPv6 like any other.
  assert.equal(addressKey('::ffff:0:203.0.113.7'), '::/64');
});

test('ISSUE 25: what is not an IP address is its own key', () => {
  assert.equal(addressKey(''), '');
  assert.equal(addressKey('unknown'), 'unknown');
  assert.equal(addressKey('2001:db8::1::2'), '2001:db8::1::2');
});
