// RTP header reading and writing, checked against werift-rtp's serialiser and parser.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RtpHeader, RtpPacket } from 'werift-rtp';
import { readRtp, writeRtp } from '../../src/media/rtp.ts';

const payload = Buffer.from([0xde, 0xad, 0xbe, 0xef, 0x01]);

test('writeRtp produces the bytes werift-rtp produces for the same header', () => {
  for (const fields of [
    { payloadType: 111, sequenceNumber: 0, timestamp: 0, ssrc: 1, marker: true },
    { payloadType: 96, sequenceNumber: 65535, timestamp: 0xffffffff, ssrc: 0xffffffff, marker: false },
    { payloadType: 0, sequenceNumber: 4660, timestamp: 305419896, ssrc: 2882400001, marker: false },
  ]) {
    const ours = writeRtp(fields, payload);
    const theirs = new RtpPacket(new RtpHeader(fields), payload).serialize();
    assert.deepEqual(ours, theirs);
  }
});

test('readRtp returns the fields and payload werift-rtp reads, with CSRCs, a header extension and padding', () => {
  const header = new RtpHeader({
    payloadType: 111,
    sequenceNumber: 513,
    timestamp: 123456789,
    ssrc: 0x01020304,
    marker: true,
    csrc: [7, 8],
    extension: true,
    extensions: [{ id: 1, payload: Buffer.from([0x90]) }, { id: 3, payload: Buffer.from([1, 2, 3]) }],
    padding: true,
    paddingSize: 3,
  });
  const packet = new RtpPacket(header, payload).serialize();
  const theirs = RtpPacket.deSerialize(packet);
  const ours = readRtp(packet)!;
  assert.deepEqual(
    { payloadType: ours.payloadType, sequenceNumber: ours.sequenceNumber, timestamp: ours.timestamp, ssrc: ours.ssrc, marker: ours.marker },
    { payloadType: theirs.header.payloadType, sequenceNumber: theirs.header.sequenceNumber, timestamp: theirs.header.timestamp, ssrc: theirs.header.ssrc, marker: theirs.header.marker },
  );
  assert.deepEqual(Buffer.from(ours.payload), payload);
  assert.deepEqual(Buffer.from(theirs.payload), payload);
});

test('readRtp turns down what is not an RTP packet', () => {
  assert.equal(readRtp(Buffer.alloc(11)), undefined, 'shorter than the fixed header');
  assert.equal(readRtp(Buffer.from([0x40, 111, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1])), undefined, 'version 1');
  assert.equal(readRtp(Buffer.from([0x8f, 111, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1])), undefined, '15 CSRCs announced, none present');
  assert.equal(readRtp(Buffer.from([0x90, 111, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0xbe, 0xde, 0, 9])), undefined, 'extension longer than the packet');
  assert.equal(readRtp(Buffer.from([0xa0, 111, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 40])), undefined, 'padding longer than the packet');
  const empty = readRtp(writeRtp({ payloadType: 111, sequenceNumber: 1, timestamp: 2, ssrc: 3, marker: false }, Buffer.alloc(0)))!;
  assert.equal(empty.payload.length, 0);
});
