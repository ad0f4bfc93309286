/**
 * An experiment runs its scenarios one after another, each for a minute or more. results.json is rewritten after
 * each finished scenario, marked `"partial": true` until the last, so Ctrl-C or a failing scenario keeps every one
 * that finished (the write goes to a temporary name and is renamed: the file on disk is always whole).
 */
export async function eachScenario<T, R>(
  items: readonly T[],
  run: (item: T) => Promise<R>,
  writePartial: (done: R[]) => Promise<void>,
  err: (line: string) => void,
): Promise<R[]> {
  const done: R[] = [];
  let writing: Promise<void> = Promise.resolve();
  const onSigint = () => {
    err(`\nstopping: results.json holds the ${done.length} finished scenario(s) of ${items.length}, marked "partial": true`);
    void writing.finally(() => process.exit(130));
  };
  process.once('SIGINT', onSigint);
  try {
    for (const item of items) {
      done.push(await run(item));
      if (done.length < items.length) await (writing = writePartial([...done]));
    }
  } finally {
    process.off('SIGINT', onSigint);
  }
  return done;
}
