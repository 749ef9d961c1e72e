// What a process opened, closed again newest first: each resource registers its close as it is
// opened, and closing runs every step even when one fails (the failure is logged), so one broken
// part never leaves the parts opened before it open.

export interface TeardownLog {
  error(obj: object, msg: string): void;
}

export class Teardown {
  private readonly steps: { name: string; close: () => Promise<void> | void }[] = [];
  private closing: Promise<void> | undefined;

  constructor(private readonly log: TeardownLog) {}

  /** Registers the close of `name`, just opened. */
  add(name: string, close: () => Promise<void> | void): void {
    this.steps.push({ name, close });
  }

  /** Closes everything registered, newest first; a second call waits for the first. */
  close(): Promise<void> {
    this.closing ??= this.closeAll();
    return this.closing;
  }

  private async closeAll(): Promise<void> {
    for (let step = this.steps.pop(); step; step = this.steps.pop()) {
      try {
        await step.close();
      } catch (err) {
        this.log.error({ err, resource: step.name }, `${step.name} not closed cleanly`);
      }
    }
  }
}
