/**
 * Judges a simulated run from its recorded history alone (history.ts): the IDs each handle's
 * callers were given, the errors they got, and the rows after every step. It never asks the
 * allocator what it did. The rows are judged by the project's own `check` (checkSequence, which
 * runs the one list of DC-state invariants, dcStateViolations, against every DC's state).
 *
 * The property: no ID handed out twice; each handle's IDs increasing; a call that promises
 * `count` IDs (take, nextIds) giving that many or none; every ID inside a grant of its handle's
 * DC; the rows passing `check` after every step. Three checks go further, to catch a defect
 * before a later claim turns it into a duplicate: an ID handed out stays claimed in the rows; no
 * call fails because the allocator found its rows broken or gone back; and no unused ID of a
 * live handle's blocks is held by another such handle or was handed out already (the one
 * white-box look, history.ts). A number handle hands out no ID of a domain past 2^53-1.
 *
 * A run whose rows lost acknowledged writes (a planned rollback) is held to what docs/design.md
 * promises then, not to the property: duplicates and rows gone back are its expected harm
 * (`tolerated`), while a handle that reported IDGEN_STATE_ROLLED_BACK hands out no ID after,
 * and no call fails unexpectedly or hangs.
 *
 * When the operator repaired such a run's DC (retireDcRanges, docs/design.md "Rows that went
 * back"), what the repair promises is held strictly: no ID of a handle opened after the retire
 * succeeded was handed out by any other call of the run, before or after; the repaired DC's new
 * handles hand out only IDs above every ID the DC handed out before; they find no rows broken or
 * gone back, nor does `check` after the retire; and the retire itself succeeds (a refusal would
 * say the grant level went back, which no fault of the simulation does).
 */
import { checkSequence, type Violation } from '../../../src/admin/check.js';
import { IdGenError, InvariantError, StateRolledBackError } from '../../../src/errors.js';
import { dcOfGrantee } from '../../../src/names.js';
import { MAX_SAFE_ID } from '../../../src/settings/model.js';
import type { Grant } from '../../../src/store/port.js';
import type { CallRecord, HandleHistory, History, StateCall, StateShown } from './history.js';
import { describeError } from './scheduled-store.js';

export type FindingKind =
  /** One ID given to callers twice (by two handles, or by one). */
  | 'duplicate'
  /**
   * In a run with a rollback, an ID given twice outside the grants of the DC whose rows went
   * back: no lost write explains it, so it fails the run as any duplicate of a run without one.
   */
  | 'duplicate-beyond-rollback'
  /** A handle gave an ID not above the one it gave before. */
  | 'not-increasing'
  /** A call that promises `count` IDs (take, nextIds) resolved with another number of them. */
  | 'wrong-count'
  /** A handle gave an ID outside every grant of its DC. */
  | 'outside-grants'
  /** The rows broke an invariant of `check`, after some step or at the end. */
  | 'rows-broken'
  /**
   * The rows no longer count an ID handed out as claimed (above its DC's last_integer in the
   * reserved range, or in the preloaded range): the next claim hands it out again.
   */
  | 'unclaimed'
  /** A call failed because the allocator found the rows broken or gone back. */
  | 'allocator-saw-broken-rows'
  /** A call failed with an error the allocator does not define: a crash, not a verdict. */
  | 'unexpected-error'
  /** A call of a live process never settled though nothing was left to run. */
  | 'stuck'
  /**
   * After some step, an unused ID in a live, serving handle's blocks was held by another such
   * handle too, or had been handed out already: one of them will hand it out again.
   */
  | 'held-twice'
  /** A handle handed out an ID in a call issued after one of its calls got STATE_ROLLED_BACK. */
  | 'ids-after-rolled-back'
  /**
   * A process read a DC state at LOCAL_SERIAL older than one it had been shown before it sent
   * the read (a lower version, the same version by another op, or no row), and never reported
   * IDGEN_STATE_ROLLED_BACK: it goes on allocating from rows that lost writes it saw.
   */
  | 'rollback-unreported'
  /** A number handle handed out IDs of a domain past 2^53-1 (it must refuse the sequence). */
  | 'number-past-safe'
  /** An ID of a handle opened after the retire was handed out by another call too. */
  | 'duplicate-after-retire'
  /** A new handle of the retired DC gave an ID not above every ID the DC handed out before. */
  | 'below-retired'
  /** After the retire, a new handle found the rows broken or gone back, or `check` did. */
  | 'broken-after-retire'
  /**
   * The retire refused (the grant level looked gone back) or failed otherwise than an operator
   * would re-run it, or, in a run that settled, never succeeded.
   */
  | 'retire-failed';

/** The kinds that say the protocol handed out IDs wrongly or broke its rows. */
export const SAFETY_KINDS: readonly FindingKind[] = [
  'duplicate',
  'duplicate-beyond-rollback',
  'not-increasing',
  'wrong-count',
  'outside-grants',
  'rows-broken',
  'unclaimed',
  'allocator-saw-broken-rows',
  'held-twice',
  'duplicate-after-retire',
  'below-retired',
  'broken-after-retire',
  'rollback-unreported',
];

/**
 * The safety kinds judged from what callers were given, the rows and the wire alone: all but the
 * allocator's own refusal of its rows ('allocator-saw-broken-rows', which a defect may make it
 * report however well the rest is judged) and the white-box look into live handles' buffers
 * ('held-twice'). A negative control must show one of these: a control that fails only because
 * the allocator refused its rows shows a check of the allocator, not of the simulation.
 */
export const BLACK_BOX_KINDS: readonly FindingKind[] = SAFETY_KINDS.filter(
  (kind) => kind !== 'allocator-saw-broken-rows' && kind !== 'held-twice',
);

/**
 * What lost acknowledged writes may do, and nothing prevents (docs/design.md, "What the cluster
 * must guarantee"): blocks claimed again, so IDs held and handed out twice, rows no longer
 * counting IDs handed out, and allocators finding their rows gone back.
 */
export const ROLLBACK_HARM: readonly FindingKind[] = [
  'duplicate',
  'unclaimed',
  'rows-broken',
  'allocator-saw-broken-rows',
  'held-twice',
];

/**
 * `violations` fail the run; `tolerated` are findings a run with a rollback may show
 * ({@link ROLLBACK_HARM}), none in a run without one.
 */
export interface Verdict {
  readonly violations: readonly Finding[];
  readonly tolerated: readonly Finding[];
}

export interface Finding {
  readonly kind: FindingKind;
  readonly message: string;
}

const LISTED = 5;

export function checkHistory(history: History): Verdict {
  const findings = findingsOf(history);
  if (history.rollback === undefined) return { violations: findings, tolerated: [] };
  return {
    violations: findings.filter((f) => !ROLLBACK_HARM.includes(f.kind)),
    tolerated: findings.filter((f) => ROLLBACK_HARM.includes(f.kind)),
  };
}

/** Whether a caller of any handle, or of a shutdown or alter, was told the rows went back. */
export function rollbackReported(history: History): boolean {
  const calls = [...history.handles.flatMap((h) => h.calls), ...history.otherErrors];
  return calls.some((call) => call.error instanceof StateRolledBackError);
}

function findingsOf(history: History): Finding[] {
  const findings: Finding[] = [];
  const report = (kind: FindingKind, message: string) => findings.push({ kind, message });

  // No ID twice, across every handle of every process of every DC.
  const owners = new Map<bigint, string[]>();
  for (const handle of history.handles) {
    handle.calls.forEach((call, index) => {
      for (const id of call.ids) {
        const seen = owners.get(id);
        const at = `${handle.name} ${call.call} (call #${index + 1})`;
        if (seen === undefined) owners.set(id, [at]);
        else seen.push(at);
      }
    });
  }
  const finalRows = history.rowLog.at(-1)?.rows;
  /** The final grants of every shard of `dc`. */
  const grantsOf = (dc: string | undefined) =>
    [...(finalRows?.grants ?? new Map<string, readonly Grant[]>())]
      .filter(([grantee]) => dcOfGrantee(grantee) === dc)
      .flatMap(([, own]) => own);
  // A rollback explains duplicates only among the IDs its DC was granted (grants are disjoint):
  // the DC's rows went back and its blocks were claimed again. One elsewhere is a defect.
  const rolledBack = history.rollback === undefined ? undefined : dcOfGrantee(history.rollback.dc);
  const rolledBackGrants = rolledBack === undefined ? [] : grantsOf(rolledBack);
  const explained = (id: bigint) => rolledBackGrants.some((g) => g.min <= id && id <= g.max);
  const duplicates = [...owners].filter(([, by]) => by.length > 1);
  const listDuplicates = (kind: FindingKind, listed: typeof duplicates) => {
    for (const [id, by] of listed.slice(0, LISTED)) {
      report(kind, `ID ${id} handed out ${by.length} times: by ${by.join(', ')}`);
    }
    if (listed.length > LISTED) {
      report(kind, `… and ${listed.length - LISTED} more IDs handed out twice`);
    }
  };
  if (rolledBack === undefined) listDuplicates('duplicate', duplicates);
  else {
    listDuplicates(
      'duplicate',
      duplicates.filter(([id]) => explained(id)),
    );
    listDuplicates(
      'duplicate-beyond-rollback',
      duplicates.filter(([id]) => !explained(id)),
    );
  }

  for (const handle of history.handles) {
    checkIncreasing(handle, report);
    checkCounts(handle, report);
    // Grants of every shard of the handle's DC: a handle whose shard is spent, with the domain,
    // goes on from another shard whose IDs lie above its own.
    checkInsideGrants(handle, grantsOf(dcOfGrantee(handle.dc)), report);
    checkErrors(handle.name, handle.calls, report);
    checkNothingAfterRolledBack(handle, report);
    const pending = handle.calls.filter((c) => c.returned === undefined);
    if (pending.length > 0 && !handle.crashed && history.settled) {
      report('stuck', `${handle.name}: ${pending.map((c) => c.call).join(', ')} never settled`);
    }
  }
  checkErrors('other calls', history.otherErrors, report);

  // The rows pass `check` after every step that changed them (the first failure is enough).
  for (const { step, rows } of history.rowLog) {
    const violations = checkSequence(rows);
    if (violations.length > 0) {
      report('rows-broken', `after step ${step}: ${describeViolations(violations)}`);
      break;
    }
  }
  checkClaimed(history, report);
  checkHeld(history, report);
  checkRollbacksReported(history, report);
  checkNumberDomain(history, report);
  checkRepair(history, owners, report);
  return findings;
}

/** Thrown by the property: what broke, and the run's trace to read it by. */
export class SimulationViolation extends Error {
  constructor(
    readonly findings: readonly Finding[],
    trace: readonly string[],
  ) {
    super(
      [
        `${findings.length} finding(s):`,
        ...findings.map((f) => `  [${f.kind}] ${f.message}`),
        `trace (${trace.length} lines, each after the step it happened in):`,
        ...trace.map((line) => `  ${line}`),
      ].join('\n'),
    );
    this.name = 'SimulationViolation';
  }
}

/**
 * IDs increase in real time: every ID of a call is above every ID of each call of the same
 * handle that returned before it was issued. Calls in flight together are not ordered (their
 * callers cannot tell which was served first), but the IDs of one call (a take's run, a nextIds
 * draw) increase in themselves.
 */
function checkIncreasing(
  handle: HandleHistory,
  report: (kind: FindingKind, message: string) => void,
): void {
  const done = handle.calls.filter((c) => c.returned !== undefined && c.ids.length > 0);
  const byReturn = [...done].sort((a, b) => a.returned! - b.returned!);
  const byIssue = [...done].sort((a, b) => a.issued - b.issued);
  let highest: CallRecord | undefined;
  let next = 0;
  for (const call of byIssue) {
    for (; next < byReturn.length && byReturn[next]!.returned! < call.issued; next++) {
      const before = byReturn[next]!;
      if (highest === undefined || before.ids.at(-1)! > highest.ids.at(-1)!) highest = before;
    }
    const first = call.ids[0]!;
    if (highest !== undefined && !(first > highest.ids.at(-1)!)) {
      report(
        'not-increasing',
        `${handle.name} ${call.call} gave ${first} after ${highest.call} had given ${highest.ids.at(-1)}`,
      );
      return;
    }
    if (call.ids.some((id, i) => i > 0 && !(id > call.ids[i - 1]!))) {
      report('not-increasing', `${handle.name} ${call.call} gave ${call.ids.join(', ')}`);
      return;
    }
  }
}

/**
 * A call that promises `count` IDs (take: one run of them; nextIds: strictly increasing, not
 * necessarily contiguous) gives exactly that many, or fails and gives none.
 */
function checkCounts(
  handle: HandleHistory,
  report: (kind: FindingKind, message: string) => void,
): void {
  const wrong = handle.calls.find(
    (c) =>
      c.count !== undefined &&
      c.returned !== undefined &&
      c.error === undefined &&
      c.ids.length !== c.count,
  );
  if (wrong === undefined) return;
  report(
    'wrong-count',
    `${handle.name} ${wrong.call} gave ${wrong.ids.length} ID(s): ${wrong.ids.join(', ') || 'none'}`,
  );
}

function checkInsideGrants(
  handle: HandleHistory,
  grants: readonly Grant[],
  report: (kind: FindingKind, message: string) => void,
): void {
  const outside = handle.calls
    .flatMap((c) => c.ids)
    .filter((id) => !grants.some((g) => id >= g.min && id <= g.max));
  if (outside.length === 0) return;
  const shown = grants.map((g) => `#${g.number} [${g.min}, ${g.max}]`).join(', ') || 'none';
  report(
    'outside-grants',
    `${handle.name} (${handle.dc}) gave ${outside.slice(0, LISTED).join(', ')}, outside the grants of its DC (${shown})`,
  );
}

/**
 * Every ID handed out stays claimed: once a caller has it, each later version of its DC's state
 * has it at or below last_integer if it lies in the reserved range, and not in the preloaded
 * range. A claim moves last_integer up before its IDs are handed out, and a give-back returns
 * only IDs never handed out, so rows that break this will hand the ID out again.
 *
 * A handle may move between the shards of its DC (and, from a spent shard, after it handed out
 * IDs), and its history names only the shard it ended on: so each ID is judged against the state
 * of every shard of its handle's DC, every shard the handle held among them. Grants are disjoint,
 * so an ID lies in the ranges of one state at most: the one of the shard that claimed it.
 */
function checkClaimed(
  history: History,
  report: (kind: FindingKind, message: string) => void,
): void {
  const given = handedOut(history);
  const byDc = new Map<string | undefined, { id: bigint; by: string }[]>();
  let next = 0;
  for (const { step, event, rows } of history.rowLog) {
    for (; next < given.length && given[next]!.at < event; next++) {
      const { dc, id, by } = given[next]!;
      const ofDc = byDc.get(dcOfGrantee(dc)) ?? [];
      ofDc.push({ id, by });
      byDc.set(dcOfGrantee(dc), ofDc);
    }
    for (const [dc, state] of rows.states) {
      const preloaded = state.installedGrant === state.reservedGrant + 1;
      const lost = (byDc.get(dcOfGrantee(dc)) ?? []).find(({ id }) => {
        const inReserved = id >= state.reservedMin && id <= state.reservedMax;
        const inPreloaded = preloaded && id >= state.preloadedMin && id <= state.preloadedMax;
        return (inReserved && id > state.lastInteger) || inPreloaded;
      });
      if (lost !== undefined) {
        report(
          'unclaimed',
          `after step ${step}, ${dc}'s state (v${state.version}, last_integer ${state.lastInteger}, reserved [${state.reservedMin}, ${state.reservedMax}]${preloaded ? `, preloaded [${state.preloadedMin}, ${state.preloadedMax}]` : ''}) no longer counts ID ${lost.id} as claimed, which ${lost.by} handed out before`,
        );
        return;
      }
    }
  }
}

/** Every ID handed out, with its handle, in the order the calls returned. */
function handedOut(history: History): { id: bigint; dc: string; at: number; by: string }[] {
  return history.handles
    .flatMap((handle) =>
      handle.calls
        .filter((call) => call.returned !== undefined)
        .flatMap((call) =>
          call.ids.map((id) => ({ id, dc: handle.dc, at: call.returned!, by: handle.name })),
        ),
    )
    .sort((a, b) => a.at - b.at);
}

/**
 * After every step, the unused IDs live, serving handles hold lie apart, and none was handed
 * out already: an ID held twice is handed out twice once both holders get to it (a give-back
 * that returned IDs still served, a claim of IDs another process holds), which a run may end
 * before its callers see.
 */
function checkHeld(history: History, report: (kind: FindingKind, message: string) => void): void {
  const given = handedOut(history);
  const givenBy = new Map<bigint, string>();
  let next = 0;
  for (const { step, event, held } of history.heldLog) {
    for (; next < given.length && given[next]!.at < event; next++) {
      givenBy.set(given[next]!.id, given[next]!.by);
    }
    const runs = [...held].sort((a, b) => (a.first < b.first ? -1 : a.first > b.first ? 1 : 0));
    for (const [i, run] of runs.entries()) {
      const before = runs[i - 1];
      if (before !== undefined && run.first <= before.last) {
        report(
          'held-twice',
          `after step ${step}, ${before.by} holds [${before.first}, ${before.last}] unused and ${run.by} [${run.first}, ${run.last}]`,
        );
        return;
      }
      for (let id = run.first; id <= run.last; id++) {
        const by = givenBy.get(id);
        if (by === undefined) continue;
        report(
          'held-twice',
          `after step ${step}, ${run.by} holds ID ${id} unused, which ${by} handed out before`,
        );
        return;
      }
    }
  }
}

/**
 * docs/design.md: a process that finds its rows gone back stops allocating from the sequence
 * with IDGEN_STATE_ROLLED_BACK (per handle), rather than hand out IDs another may claim again.
 */
function checkNothingAfterRolledBack(
  handle: HandleHistory,
  report: (kind: FindingKind, message: string) => void,
): void {
  const told = handle.calls.find((c) => c.error instanceof StateRolledBackError);
  if (told === undefined) return;
  const after = handle.calls.find((c) => c.issued > told.returned! && c.ids.length > 0);
  if (after === undefined) return;
  report(
    'ids-after-rolled-back',
    `${handle.name} ${after.call} gave ${after.ids.join(', ')} after ${told.call} got IDGEN_STATE_ROLLED_BACK`,
  );
}

/**
 * docs/design.md ("What the cluster must guarantee"): a process that reads a DC state older than
 * one it saw stops allocating with IDGEN_STATE_ROLLED_BACK, and says so. Judged from the wire
 * alone (history.ts, stateCalls): per process and grantee, the newest stamp its replies showed
 * it (its reads at LOCAL_SERIAL, and its writes shown applied) before it sent a read at
 * LOCAL_SERIAL; a reply to that read with a lower version, the same version by another op, or
 * no row shows the rows gone back, and the process must then have logged the rollback of that
 * grantee. Only Paxos rounds count: a plain read may lag, and the states its other writes'
 * rejections found are left out, so the marks here never run ahead of the process's own (a read
 * shown older than these is older than the process's too). Without a rollback no read can be.
 */
function checkRollbacksReported(
  history: History,
  report: (kind: FindingKind, message: string) => void,
): void {
  type Stamp = Exclude<StateShown, 'none'>;
  const marks = new Map<string, Stamp>();
  const floors = new Map<StateCall, Stamp | undefined>();
  const unreported: StateCall[] = [];
  const points = history.stateCalls.flatMap((call) => [
    { at: call.sent, call, sent: true },
    ...(call.replied === undefined ? [] : [{ at: call.replied, call, sent: false }]),
  ]);
  points.sort((a, b) => a.at - b.at);
  for (const { call, sent } of points) {
    const key = `${call.process}\u0000${call.grantee}`;
    const mark = marks.get(key);
    if (sent) {
      if (call.kind === 'read') floors.set(call, mark);
      continue;
    }
    const shown = call.shown;
    if (shown === undefined) continue;
    const floor = floors.get(call);
    if (call.kind === 'read' && floor !== undefined && olderThan(shown, floor)) {
      unreported.push(call);
    }
    if (shown !== 'none' && (mark === undefined || shown.version > mark.version)) {
      marks.set(key, shown);
    }
  }
  const told = (call: StateCall) =>
    history.rollbackReports.some((r) => r.process === call.process && r.grantee === call.grantee);
  const missed = unreported.find((call) => !told(call));
  if (missed === undefined) return;
  const floor = floors.get(missed)!;
  const shown =
    missed.shown === 'none' ? 'no row' : `v${missed.shown!.version} by ${missed.shown!.op}`;
  report(
    'rollback-unreported',
    `${missed.process} read ${missed.grantee}'s state at LOCAL_SERIAL as ${shown}, after it had been shown v${floor.version} by ${floor.op}, and never reported IDGEN_STATE_ROLLED_BACK`,
  );
}

/** Whether a state a Paxos round showed is older than `floor`: the rows lost writes. */
function olderThan(shown: StateShown, floor: Exclude<StateShown, 'none'>): boolean {
  if (shown === 'none') return true;
  return (
    shown.version < floor.version || (shown.version === floor.version && shown.op !== floor.op)
  );
}

/**
 * What the operator's repair promises (docs/design.md, "Rows that went back"). Every ID the
 * repaired DC handed out before lies in a grant made before its processes stopped; the retire
 * spends each of its state partitions at its latest grant, read at SERIAL after that, so the
 * grants its new processes install were made later, above every one of those IDs. `owners`
 * names every call that handed out each ID.
 */
function checkRepair(
  history: History,
  owners: ReadonlyMap<bigint, readonly string[]>,
  report: (kind: FindingKind, message: string) => void,
): void {
  const repair = history.repair;
  if (repair === undefined) return;
  for (const run of repair.runs) {
    if (!('error' in run)) continue;
    const { error } = run;
    if (error instanceof InvariantError || !(error instanceof IdGenError)) {
      const shown = error instanceof Error ? (error.stack ?? error.message) : String(error);
      report('retire-failed', `retire-ranges in ${repair.dc}: ${shown}`);
      return;
    }
  }
  const completed = repair.completed;
  if (completed === undefined) {
    if (history.settled) {
      const last = repair.runs.at(-1);
      const why =
        last === undefined
          ? 'its processes never finished closing'
          : `${repair.runs.length} run(s), the last: ${'error' in last ? describeError(last.error) : 'done'}`;
      report('retire-failed', `retire-ranges in ${repair.dc} never succeeded: ${why}`);
    }
    return;
  }
  const after = history.handles.filter((h) => h.opened > completed);
  const afterIds = new Set(after.flatMap((h) => h.calls.flatMap((c) => c.ids)));
  const twice = [...owners].filter(([id, by]) => by.length > 1 && afterIds.has(id));
  for (const [id, by] of twice.slice(0, LISTED)) {
    report(
      'duplicate-after-retire',
      `ID ${id} handed out ${by.length} times, after the retire of ${repair.dc}: by ${by.join(', ')}`,
    );
  }
  if (twice.length > LISTED) {
    report('duplicate-after-retire', `… and ${twice.length - LISTED} more IDs`);
  }

  const ofDc = (h: HandleHistory) => dcOfGrantee(h.dc) === repair.dc;
  let highest: { id: bigint; by: string } | undefined;
  for (const handle of history.handles.filter((h) => ofDc(h) && h.opened < completed)) {
    for (const id of handle.calls.flatMap((c) => c.ids)) {
      if (highest === undefined || id > highest.id) highest = { id, by: handle.name };
    }
  }
  const top = highest;
  const lower = (id: bigint) => top !== undefined && id <= top.id;
  for (const handle of after.filter(ofDc)) {
    const low = handle.calls.flatMap((c) => c.ids).find(lower);
    if (low === undefined || top === undefined) continue;
    report(
      'below-retired',
      `${handle.name} gave ${low} after the retire of ${repair.dc}, not above ${top.id}, which ${top.by} handed out before`,
    );
    break;
  }

  // The retire leaves every state of the DC whole again: `check` passes from then on.
  for (const { step, event, rows } of history.rowLog) {
    if (event < completed) continue;
    const violations = checkSequence(rows);
    if (violations.length === 0) continue;
    report('broken-after-retire', `after step ${step}: ${describeViolations(violations)}`);
    break;
  }
}

/** A number handle refuses a domain past 2^53-1 (IDGEN_DOMAIN_NEEDS_BIGINT) before any ID. */
function checkNumberDomain(
  history: History,
  report: (kind: FindingKind, message: string) => void,
): void {
  const max = history.rowLog.at(-1)?.rows.settings.max;
  if (max === undefined || max <= MAX_SAFE_ID) return;
  for (const handle of history.handles) {
    if (handle.bigint) continue;
    const call = handle.calls.find((c) => c.ids.length > 0);
    if (call === undefined) continue;
    report(
      'number-past-safe',
      `${handle.name} ${call.call} gave ${call.ids.join(', ')} from a domain up to ${max}`,
    );
  }
}

function checkErrors(
  who: string,
  calls: readonly { readonly call: string; readonly error?: unknown }[],
  report: (kind: FindingKind, message: string) => void,
): void {
  for (const { call, error } of calls) {
    if (error === undefined) continue;
    if (error instanceof InvariantError || error instanceof StateRolledBackError) {
      report('allocator-saw-broken-rows', `${who} ${call}: ${error.message}`);
    } else if (!(error instanceof IdGenError)) {
      // A failed assert, a TypeError, or an injected fault the allocator let through unclassified.
      const shown = error instanceof Error ? (error.stack ?? error.message) : String(error);
      report('unexpected-error', `${who} ${call}: ${shown}`);
    }
  }
}

function describeViolations(violations: readonly Violation[]): string {
  return violations.map((v) => `[${v.kind}] ${v.message}`).join('; ');
}
