/**
 * When a view loads its data again (usePoll, poll.ts): at once, then every `every` ms after each load ends, and
 * at once on `run()` (a refresh, the tab shown again). A refresh asked for while a load is in flight runs right
 * after it: that load may have started before the change the refresh is for. While `visible()` is false no load
 * starts; the timer keeps asking.
 */
export type PollerOptions<T> = {
  load: () => Promise<T>;
  every: number;
  visible: () => boolean;
  onData: (data: T) => void;
  onError: (error: unknown) => void;
};

export class Poller<T> {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private running = false;
  private again = false;
  private live = true;

  constructor(private readonly o: PollerOptions<T>) {}

  readonly run = async (): Promise<void> => {
    clearTimeout(this.timer);
    if (!this.live) return;
    if (this.running) return void (this.again = true);
    if (!this.o.visible()) return void (this.timer = setTimeout(this.run, this.o.every));
    this.running = true;
    try {
      const data = await this.o.load();
      if (this.live) this.o.onData(data);
    } catch (error) {
      if (this.live) this.o.onError(error);
    } finally {
      this.running = false;
      this.next();
    }
  };

  /** After a load: the refresh asked for meanwhile, or else the timer. */
  private next(): void {
    if (!this.live) return;
    if (!this.again) return void (this.timer = setTimeout(this.run, this.o.every));
    this.again = false;
    void this.run();
  }

  /** The view is gone: no load starts again, and the one in flight reports nothing. */
  stop(): void {
    this.live = false;
    clearTimeout(this.timer);
  }
}
