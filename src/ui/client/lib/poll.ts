/**
 * Keeps a view's data fresh without a reload: loads at once, then again every few seconds while the tab is
 * visible, and at once when it becomes visible again or is refreshed (the schedule: poller.ts). A failed load
 * keeps the last data beside the error.
 */
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { asApiError, type ApiError } from "./api.ts";
import { Poller } from "./poller.ts";

export const POLL_MS = 2000;

export type Polled<T> = { data: T | undefined; error: ApiError | null; loading: boolean; refresh: () => void };

export function usePoll<T>(load: () => Promise<T>, deps: unknown[], every = POLL_MS): Polled<T> {
  const [state, setState] = useState<{ data: T | undefined; error: ApiError | null; loading: boolean }>({ data: undefined, error: null, loading: true });
  const tick = useRef<() => void>(() => {});

  useEffect(() => {
    setState({ data: undefined, error: null, loading: true });
    const poller = new Poller({
      load, every, visible: () => !document.hidden,
      onData: (data) => setState({ data, error: null, loading: false }),
      onError: (error) => setState((s) => ({ data: s.data, error: asApiError(error), loading: false })),
    });
    tick.current = () => void poller.run();
    const onVisible = () => !document.hidden && poller.run();
    document.addEventListener("visibilitychange", onVisible);
    void poller.run();
    return () => {
      poller.stop();
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
