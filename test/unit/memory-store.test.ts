import { describe, expect, it } from 'vitest';

import { StoreUnavailableError } from '../../src/errors.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { SequenceSettings } from '../../src/store/port.js';
import { describeStoreContract } from '../contract/store-contract.js';
import { dcState } from './fixtures.js';

describeStoreContract('MemoryStore', async () => {
  const store = new MemoryStore();
  return {
    store,
    dc: 'dc1',
    otherDc: 'dc2',
    seedDcState: async (sequence, dc, state) => store.seedDcState(sequence, dc, state),
    cleanup: async () => undefined,
  };
});

const settings: SequenceSettings = {
  name: 'faulty',
  domain: 'custom',
  min: 1n,
  max: 1_000n,
  start: 1n,
  dcRangeSize: 100n,
  blockSize: 10,
  threshold: 0.5,
  maxBlockSize: 10,
  claimIntervalMs: 2_000,
  maxDcRangeSize: 100n,
  autonomySeconds: 0,
  shards: 1,
};

async function storeWithSequence(): Promise<MemoryStore> {
  const store = new MemoryStore();
  await store.createSequence(settings, 'created');
  return store;
}

describe('MemoryStore fault injection', () => {
  it('throws StoreUnavailableError at the level of the method, once by default', async () => {
    const store = await storeWithSequence();
    store.faults.push({ op: 'readGrants', effect: 'unavailable' });
    store.faults.push({ op: 'readDcState', effect: 'unavailable' });
    await expect(store.readGrants('faulty', 'dc1')).rejects.toMatchObject({
      code: 'IDGEN_STORE_UNAVAILABLE',
      level: 'serial',
      operation: 'readGrants',
    });
    await expect(store.readDcState('faulty', 'dc1')).rejects.toMatchObject({
      level: 'local_serial',
    });
    expect(store.faults).toEqual([]);
    expect((await store.readGrants('faulty', 'dc1')).globalLast).toBe(0n);
    expect(store.calls.readGrants).toBe(2);
  });

  it('keeps a fault for `times` calls, and scopes it to a DC', async () => {
    const store = await storeWithSequence();
    store.faults.push({ op: 'readGrants', effect: 'unavailable', dc: 'dc3', times: Infinity });
    await expect(store.readGrants('faulty', 'dc3')).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(store.readGrants('faulty', 'dc3')).rejects.toBeInstanceOf(StoreUnavailableError);
    expect((await store.readGrants('faulty', 'dc1')).latest).toBeUndefined();
    expect(store.faults).toHaveLength(1);
  });

  it('unknown-applied applies the write and reports unknown', async () => {
    const store = await storeWithSequence();
    store.faults.push({ op: 'grantRange', effect: 'unknown-applied' });
    const grant = { number: 1, min: 1n, max: 100n };
    expect(await store.grantRange('faulty', 'dc1', 0n, grant)).toMatchObject({ kind: 'unknown' });
    expect(await store.readGrants('faulty', 'dc1')).toEqual({ globalLast: 100n, latest: grant });
    expect(store.grantLog).toEqual([{ sequence: 'faulty', dc: 'dc1', grant }]);
  });

  it('unknown-not-applied and rejected write nothing', async () => {
    const store = await storeWithSequence();
    store.faults.push({ op: 'writeDcState', effect: 'unknown-not-applied' });
    store.faults.push({ op: 'writeDcState', effect: 'rejected' });
    expect(await store.writeDcState('faulty', 'dc1', undefined, dcState())).toMatchObject({
      kind: 'unknown',
    });
    expect(await store.writeDcState('faulty', 'dc1', undefined, dcState())).toMatchObject({
      kind: 'rejected',
    });
    expect(await store.readDcState('faulty', 'dc1')).toBeUndefined();
    expect(await store.writeDcState('faulty', 'dc1', undefined, dcState())).toEqual({
      kind: 'applied',
    });
  });

  it('applied-reported-rejected applies the write and reports rejected', async () => {
    const store = await storeWithSequence();
    store.faults.push({ op: 'writeDcState', effect: 'applied-reported-rejected' });
    expect(await store.writeDcState('faulty', 'dc1', undefined, dcState())).toMatchObject({
      kind: 'rejected',
    });
    expect((await store.readDcState('faulty', 'dc1'))?.version).toBe(1);
  });

  it('applied-then-unavailable applies the write and throws', async () => {
    const store = await storeWithSequence();
    store.faults.push({ op: 'grantRange', effect: 'applied-then-unavailable' });
    const grant = { number: 1, min: 1n, max: 100n };
    await expect(store.grantRange('faulty', 'dc1', 0n, grant)).rejects.toBeInstanceOf(
      StoreUnavailableError,
    );
    expect((await store.readGrants('faulty', 'dc1')).latest).toEqual(grant);
  });

  it('leaves a settings write in flight to a serial read: a plain read is no Paxos round', async () => {
    const store = new MemoryStore();
    store.faults.push({ op: 'createSequence', effect: 'in-flight' });
    expect(await store.createSequence(settings, 'created')).toMatchObject({ kind: 'unknown' });
    // LOCAL_QUORUM, as often as asked: nothing committed yet.
    expect(await store.readSequence('faulty')).toBeUndefined();
    expect(await store.readSequence('faulty', 'local')).toBeUndefined();
    // A SERIAL read finishes it.
    expect((await store.readSequence('faulty', 'serial'))?.op).toBe('created');
    expect((await store.readSequence('faulty'))?.op).toBe('created');
  });

  it('in-flight writes are committed by the next round that sees them', async () => {
    const store = await storeWithSequence();
    store.faults.push({ op: 'writeDcState', effect: 'in-flight' });
    expect(await store.writeDcState('faulty', 'dc1', undefined, dcState())).toMatchObject({
      kind: 'unknown',
    });
    // The re-read's round finishes it.
    expect((await store.readDcState('faulty', 'dc1'))?.version).toBe(1);

    store.faults.push({ op: 'writeDcState', effect: 'in-flight', completesOn: 'write' });
    const second = dcState({ version: 2, op: 'second' });
    expect(
      await store.writeDcState('faulty', 'dc1', { version: 1, op: 'crafted' }, second),
    ).toMatchObject({ kind: 'unknown' });
    // This re-read misses it: the version looks unchanged...
    expect((await store.readDcState('faulty', 'dc1'))?.version).toBe(1);
    // ...yet the next write's round commits it first, and then finds its own condition false.
    const third = dcState({ version: 2, op: 'third' });
    expect(
      await store.writeDcState('faulty', 'dc1', { version: 1, op: 'crafted' }, third),
    ).toMatchObject({ kind: 'rejected' });
    expect((await store.readDcState('faulty', 'dc1'))?.op).toBe('second');
  });

  it('delays a call until the test releases it, and runs onHit after an applied write', async () => {
    const store = await storeWithSequence();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    store.faults.push({ op: 'writeDcState', effect: 'delay', until: gate });
    const order: string[] = [];
    const delayed = store.writeDcState('faulty', 'dc1', undefined, dcState()).then((outcome) => {
      order.push(`delayed ${outcome.kind}`);
    });
    store.faults.push({
      op: 'writeDcState',
      effect: 'unknown-applied',
      onHit: async () => {
        order.push(`onHit sees version ${(await store.readDcState('faulty', 'dc1'))?.version}`);
      },
    });
    expect(
      await store.writeDcState('faulty', 'dc1', undefined, dcState({ op: 'second' })),
    ).toMatchObject({ kind: 'unknown' });
    release();
    await delayed;
    expect(order).toEqual(['onHit sees version 1', 'delayed rejected']);
    expect((await store.readDcState('faulty', 'dc1'))?.op).toBe('second');
  });

  it('counts calls per method until reset, and keeps its data when closed', async () => {
    const store = await storeWithSequence();
    await store.readSequence('faulty');
    await store.close();
    expect(store.calls).toMatchObject({ createSequence: 1, readSequence: 1, close: 1 });
    expect((await store.readSequence('faulty'))?.settings).toEqual(settings);
    store.resetCalls();
    expect(Object.values(store.calls).every((n) => n === 0)).toBe(true);
  });

  it('refuses a DC state whose version does not follow the expected one', async () => {
    const store = await storeWithSequence();
    await expect(
      store.writeDcState('faulty', 'dc1', undefined, dcState({ version: 2 })),
    ).rejects.toThrow(/next.version must be expected \+ 1/);
  });
});
