/**
 * Collects the operations that arrive during one turn of the event loop and
 * runs them together at the end of it (on the embedded store: in one
 * transaction, so one commit and one round of file locking serve them all).
 * Each caller gets its own result, or the batch's error, after the batch ran.
 */
export class GroupCommit<In, Out> {
  private pending: { input: In; resolve: (out: Out) => void; reject: (err: unknown) => void }[] = [];

  constructor(
    /** Runs a whole batch synchronously; undefined when it cannot run now (then each input goes to `one`). */
    private readonly runBatch: (inputs: readonly In[]) => Out[] | undefined,
    private readonly one: (input: In) => Promise<Out>,
    private readonly maxBatch = 256,
  ) {}

  add(input: In): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      if (this.pending.push({ input, resolve, reject }) === 1) setImmediate(() => this.flush());
      else if (this.pending.length >= this.maxBatch) this.flush();
    });
  }

  private flush(): void {
    const batch = this.pending;
    if (batch.length === 0) return;
    this.pending = [];
    let outs: Out[] | undefined;
    try {
      outs = this.runBatch(batch.map((b) => b.input));
    } catch (err) {
      for (const b of batch) b.reject(err);
      return;
    }
    if (outs) {
      batch.forEach((b, i) => b.resolve(outs[i]!));
      return;
    }
    for (const b of batch) this.one(b.input).then(b.resolve, b.reject);
  }
}
