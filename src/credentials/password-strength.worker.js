/**
 * zxcvbn-ts in a worker thread (started by password-strength.ts): its dictionaries take about 55 MB
 * and one estimate can take tens of milliseconds, so they live here, off the event loop, and leave
 * memory when the worker does. Plain JavaScript so the worker needs no TypeScript compiler of its
 * own (worker threads do not share the main thread's compile cache).
 *
 * In:  { id, password, userInputs }     Out: { id, estimate } or { id, error }
 * Out, once, first: { ready: true } when the dictionaries are built (the caller's time bound for an
 * estimate starts then: a start on a starved machine is not a stuck worker).
 * The caller sends only the part of a password that is to be judged (password-strength.ts,
 * ESTIMATED_LENGTH); `estimate.judgedLength` says how many code points that was.
 */
import { parentPort } from 'node:worker_threads';
import { ZxcvbnFactory } from '@zxcvbn-ts/core';
import * as common from '@zxcvbn-ts/language-common';
import * as english from '@zxcvbn-ts/language-en';

const zxcvbn = new ZxcvbnFactory({
  dictionary: { ...common.dictionary, ...english.dictionary },
  graphs: common.adjacencyGraphs,
  translations: english.translations,
});

parentPort?.postMessage({ ready: true });

parentPort?.on('message', ({ id, password, userInputs }) => {
  try {
    const result = zxcvbn.check(password, userInputs);
    parentPort?.postMessage({
      id,
      estimate: {
        score: result.score,
        dictionaryNames: result.sequence.map((match) => ('dictionaryName' in match ? String(match.dictionaryName) : '')),
        warning: result.feedback.warning ?? null,
        suggestion: result.feedback.suggestions[0] ?? null,
        judgedLength: [...password].length,
      },
    });
  } catch (error) {
    parentPort?.postMessage({ id, error: error instanceof Error ? error.message : String(error) });
  }
});
