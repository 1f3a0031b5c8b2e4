import { describe, expect, it } from 'vitest';

import {
  cutClientsChanges,
  healChanges,
  partitionChanges,
} from '../../scripts/cluster/partitions.js';

const node = (osUser: string, address: string) => ({ osUser, address });
const dc1 = [node('idgen-dc1', '127.0.0.1'), node('idgen-dc1', '127.0.0.2')];
const others = [node('idgen-dc2', '127.0.1.1'), node('idgen-dc3', '127.0.2.1')];

/** A change as `iptables -S OUTPUT` lists the rule it added. */
const listed = (change: readonly string[]) =>
  `-A OUTPUT ${change
    .slice(3)
    .map((arg) => (arg.includes(':') && !arg.includes('.') ? `"${arg}"` : arg))
    .join(' ')}`;

describe('cluster partitions: the iptables rules', () => {
  it('inserts every DROP first in OUTPUT, ahead of the host firewall, both ways', () => {
    const changes = partitionChanges('dc1', dc1, others);
    expect(changes).toHaveLength(2 * dc1.length * others.length);
    for (const change of changes) {
      expect(change.slice(0, 3)).toEqual(['-I', 'OUTPUT', '1']);
      expect(change.slice(-2)).toEqual(['-j', 'DROP']);
      expect(change).toContain('idgen-cass-partition:dc1');
    }
    const owners = changes.map(
      (c) => `${c[c.indexOf('--uid-owner') + 1]}>${c[c.indexOf('-d') + 1]}`,
    );
    expect(owners).toContain('idgen-dc1>127.0.1.1');
    expect(owners).toContain('idgen-dc2>127.0.0.2');
  });

  it('heals exactly the partition rules, whatever else OUTPUT holds', () => {
    const changes = partitionChanges('dc1-2', [dc1[1]!], [dc1[0]!, ...others]);
    const listing = [
      '-P OUTPUT ACCEPT',
      // A host firewall's own rules, one of them naming the tag in another way.
      '-A OUTPUT -o lo -j ACCEPT',
      '-A OUTPUT -p tcp --dport 22 -m comment --comment "idgen-cass-partition notes" -j ACCEPT',
      '-A OUTPUT -m comment --comment "idgen-cass-partition:dc1" -j ACCEPT',
      ...changes.map(listed),
      '-A OUTPUT -p tcp --dport 7000 -j DROP',
      '',
    ].join('\n');
    expect(healChanges(listing)).toEqual(changes.map((c) => ['-D', 'OUTPUT', ...c.slice(3)]));
    expect(healChanges('-P OUTPUT ACCEPT\n-A OUTPUT -o lo -j ACCEPT\n')).toEqual([]);
  });

  it("hides a DC from one user's clients: its CQL port only, healed with the partitions", () => {
    const changes = cutClientsChanges('dc1', 0, dc1);
    expect(changes).toEqual(
      dc1.map((n) => [
        '-I',
        'OUTPUT',
        '1',
        '-o',
        'lo',
        '-p',
        'tcp',
        '-d',
        n.address,
        '--dport',
        '9042',
        '-m',
        'owner',
        '--uid-owner',
        '0',
        '-m',
        'comment',
        '--comment',
        'idgen-cass-partition:clients-dc1',
        '-j',
        'DROP',
      ]),
    );
    const partition = partitionChanges('dc1', dc1, others);
    const listing = ['-P OUTPUT ACCEPT', ...[...partition, ...changes].map(listed), ''].join('\n');
    expect(healChanges(listing)).toEqual(
      [...partition, ...changes].map((c) => ['-D', 'OUTPUT', ...c.slice(3)]),
    );
  });
});
