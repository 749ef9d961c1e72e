// The ICE candidate filter as a pure function (no packets leave: nothing here talks to the network).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CandidateFilter } from '../../src/calls/webrtc/candidateFilter.ts';
import { parseCidr } from '../../src/system/cidr.ts';

const line = (address: string, port = 50000) => `candidate:1 1 udp 2122260223 ${address} ${port} typ host`;
const reasonOf = (filter: CandidateFilter, address: string) => {
  const v = filter.check(line(address));
  return v.ok ? 'ok' : v.reason;
};

describe('candidate filter', () => {
  const onLoopback = new CandidateFilter({ allow: [], deny: [], ownAddresses: ['127.0.0.1'] });
  const onPrivate = new CandidateFilter({ allow: [], deny: [], ownAddresses: ['10.0.0.5', 'fd12::5'] });

  test('never: unspecified, multicast, broadcast, metadata, link-local, special-purpose', () => {
    const cases: [string, string][] = [
      ['0.0.0.0', 'unspecified'],
      ['::', 'unspecified'],
      ['224.0.0.1', 'multicast'],
      ['239.255.255.250', 'multicast'],
      ['ff02::1', 'multicast'],
      ['255.255.255.255', 'broadcast'],
      ['169.254.169.254', 'metadata'],
      ['100.100.100.200', 'metadata'],
      ['168.63.129.16', 'metadata'],
      ['fd00:ec2::254', 'metadata'],
      ['169.254.10.1', 'link_local'],
      ['fe80::1', 'link_local'],
      ['192.0.2.10', 'reserved'],
      ['198.51.100.1', 'reserved'],
      ['203.0.113.7', 'reserved'],
      ['198.18.0.1', 'reserved'],
      ['240.0.0.1', 'reserved'],
      ['2001:db8::1', 'reserved'],
    ];
    for (const [address, reason] of cases) {
      assert.equal(reasonOf(onLoopback, address), reason, address);
      assert.equal(reasonOf(onPrivate, address), reason, address);
    }
  });

  test('loopback only when the media is bound to loopback; private ranges only those the server sits on', () => {
    assert.equal(reasonOf(onLoopback, '127.0.0.1'), 'ok');
    assert.equal(reasonOf(onLoopback, '127.0.0.2'), 'ok');
    assert.equal(reasonOf(onLoopback, '::1'), 'loopback', 'another family of loopback than the bound one');
    assert.equal(reasonOf(onLoopback, '10.1.2.3'), 'private');
    assert.equal(reasonOf(onLoopback, '192.168.1.1'), 'private');
    assert.equal(reasonOf(onPrivate, '127.0.0.1'), 'loopback');
    assert.equal(reasonOf(onPrivate, '10.200.0.1'), 'ok', 'the server sits on 10/8');
    assert.equal(reasonOf(onPrivate, '192.168.1.1'), 'private', 'sitting on 10/8 does not open 192.168/16');
    assert.equal(reasonOf(onPrivate, '172.16.0.1'), 'private');
    assert.equal(reasonOf(onPrivate, '100.64.0.1'), 'private');
    assert.equal(reasonOf(onPrivate, 'fd99::1'), 'ok', 'ULA, as the server');
    assert.equal(reasonOf(onPrivate, '::ffff:10.0.0.9'), 'ok', 'IPv4-mapped addresses are judged as IPv4');
    assert.equal(reasonOf(onLoopback, '::ffff:169.254.169.254'), 'metadata');
  });

  test('public unicast is accepted; names, bad ports and bad lines are not', () => {
    assert.equal(reasonOf(onLoopback, '8.8.8.8'), 'ok');
    assert.equal(reasonOf(onLoopback, '2a00:1450::1'), 'ok');
    assert.equal(reasonOf(onLoopback, '1d3c8f0e-3e8a.local'), 'not_an_ip');
    assert.equal(reasonOf(onLoopback, 'metadata.google.internal'), 'not_an_ip');
    assert.equal(reasonOf(onLoopback, '0x7f000001'), 'not_an_ip');
    assert.equal(reasonOf(onLoopback, '010.0.0.1'), 'not_an_ip');
    assert.deepEqual(onLoopback.check(line('8.8.8.8', 0)), { ok: false, reason: 'bad_port', address: '8.8.8.8' });
    assert.deepEqual(onLoopback.check(line('8.8.8.8', 70000)), { ok: false, reason: 'bad_port', address: '8.8.8.8' });
    assert.deepEqual(onLoopback.check('garbage'), { ok: false, reason: 'unparsable' });
    assert.equal(onLoopback.check(`a=${line('127.0.0.1')}\r`).ok, true, 'an SDP line, with its a= and CR');
  });

  test('deny wins over allow; allow overrides the built-in rules', () => {
    const f = new CandidateFilter({ allow: ['169.254.0.0/16', '10.0.0.0/8'], deny: ['10.9.0.0/16', '8.8.8.8'], ownAddresses: ['127.0.0.1'] });
    assert.equal(reasonOf(f, '169.254.1.1'), 'ok');
    assert.equal(reasonOf(f, '10.1.0.1'), 'ok');
    assert.equal(reasonOf(f, '10.9.0.1'), 'denied');
    assert.equal(reasonOf(f, '8.8.8.8'), 'denied');
    assert.equal(reasonOf(f, '8.8.4.4'), 'ok');
  });

  test('filterOffer strips failing a=candidate lines from the SDP and the body alike', () => {
    const sdp = ['v=0', 'm=audio 9 UDP/TLS/RTP/SAVPF 111', `a=${line('224.0.0.1')}`, `a=${line('127.0.0.1')}`, 'a=end-of-candidates', ''].join('\r\n');
    const out = onLoopback.filterOffer(sdp, [
      { candidate: line('169.254.169.254'), mid: '0' },
      { candidate: line('127.0.0.1', 40000), mid: '0' },
    ]);
    assert.equal(out.sdp, ['v=0', 'm=audio 9 UDP/TLS/RTP/SAVPF 111', `a=${line('127.0.0.1')}`, 'a=end-of-candidates', ''].join('\r\n'));
    assert.deepEqual(out.candidates, [{ candidate: line('127.0.0.1', 40000), mid: '0' }]);
    assert.deepEqual(out.given, ['127.0.0.1', '127.0.0.1']);
    assert.deepEqual(out.dropped, [
      { address: '224.0.0.1', reason: 'multicast' },
      { address: '169.254.169.254', reason: 'metadata' },
    ]);
  });

  test('configuration ranges are parsed strictly', () => {
    assert.deepEqual(parseCidr('10.0.0.0/8'), { address: '10.0.0.0', prefix: 8, family: 'ipv4' });
    assert.deepEqual(parseCidr('fd00::1'), { address: 'fd00::1', prefix: 128, family: 'ipv6' });
    for (const bad of ['10.0.0.0/33', 'example.com', '10.0.0.0/8/1', '10.0.0.0/x', '::/129']) assert.throws(() => parseCidr(bad), bad);
  });
});
