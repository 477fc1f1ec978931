/**
 * Keeps a view's data fresh without a reload: loads at once, then again every few seconds while the tab is
 * visible, and at once when it becomes visible again. A failed load keeps the last data beside the error.
 */
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { asApiError, type ApiError } from "./api.ts";

export const POLL_MS = 2000;

export type Polled<T> = { data: T | undefined; error: ApiError | null; loading: boolean; refresh: () => void };

export function usePoll<T>(load: () => Promise<T>, deps: unknown[], every = POLL_MS): Polled<T> {
  const [state, setState] = useState<{ data: T | undefined; error: ApiError | null; loading: boolean }>({ data: undefined, error: null, loading: true });
  const tick = useRef<() => void>(() => {});

  useEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let running = false;
    setState({ data: undefined, error: null, loading: true });
    const run = async () => {
      clearTimeout(timer);
      if (!live || running) return;
      if (document.hidden) return void (timer = setTimeout(run, every));
      running = true;
      try {
        const data = await load();
        if (live) setState({ data, error: null, loading: false });
      } catch (error) {
        if (live) setState((s) => ({ data: s.data, error: asApiError(error), loading: false }));
      } finally {
        running = false;
        if (live) timer = setTimeout(run, every);
      }
    };
    tick.current = run;
    const onVisible = () => !document.hidden && run();
    document.addEventListener("visibilitychange", onVisible);
    void run();
    return () => {
      live = false;
      clearTimeout(timer);
      document.removeEventListener("visibilitychange", onVisible);
    };
  }, deps);

  const refresh = useCallback(() => tick.current(), []);
  return { ...state, refresh };
}

/** An action's state: busy while it runs, its error, and its result message. */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const run = async (work: () => Promise<string | null>) => {
    setBusy(true);
    setError(null);
    setDone(null);
    try {
      setDone(await work());
    } catch (e) {
      setError(asApiError(e));
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, done, run, clear: () => (setError(null), setDone(null)) };
}
