/**
 * Publishing at a fixed rate from a C load generator, each message stamped with its publish time: wrk (HTTP/1.1)
 * with a Lua script. wrk has no rate option, but it asks the script's `delay()` before every request after a
 * connection's first, and builds each request with `request()`. The script keeps a schedule per wrk thread
 * (one slot every threads/rate seconds): `delay()` takes the next slot and waits for it, `request()` writes the
 * slot's time into the body (payload.ts timedBody). When the server falls behind, the requests go out late and
 * carry the time they were due, not the time they left, so a stalled server's wait is counted in the delay
 * (no coordinated omission); they catch up as fast as the connections allow. The clock is gettimeofday through
 * LuaJIT's ffi, the wall clock the receivers' wallMs shares. Each connection's first request goes out at once
 * (wrk asks no delay for it), a burst of `connections` messages at the start.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { runWrk, WRK_THREADS, type Load, type Target } from "./loadgen.ts";
import { timedBody } from "./payload.ts";

function pacedScript(path: string, key: string, rate: number): void {
  const lua = (s: string) => JSON.stringify(s); // a JSON string literal is a valid Lua string literal for ASCII
  const { prefix, suffix } = timedBody();
  const intervalUs = (1e6 * WRK_THREADS) / rate;
  writeFileSync(path, `
local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_usec; } fanout_timeval;
int gettimeofday(fanout_timeval *tv, void *tz);
]]
local tv = ffi.new("fanout_timeval")
local function now_us()
  ffi.C.gettimeofday(tv, nil)
  return tonumber(tv.tv_sec) * 1000000 + tonumber(tv.tv_usec)
end

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-API-KEY"] = ${lua(key)}
local prefix, suffix = ${lua(prefix)}, ${lua(suffix)}
local interval = ${intervalUs.toFixed(3)}
local last = nil
local due, head, tail = {}, 1, 0

function delay()
  local now = now_us()
  last = (last or now) + interval
  tail = tail + 1
  due[tail] = last
  local wait = last - now
  return wait > 0 and math.floor(wait / 1000) or 0
end

function request()
  local now = now_us()
  local at = now
  if head <= tail then
    at = math.min(due[head], now) -- a timer that fired early (ms rounding) stamps the time it left
    due[head] = nil
    head = head + 1
  end
  return wrk.format(nil, nil, nil, prefix .. string.format("%.0f", at) .. suffix)
end
`);
}

/** `rate` messages a second for `seconds` over `connections` connections, or until `stop`; wrk's own latency is
 * publish → 200. */
export async function publishAtRate(dir: string, t: Omit<Target, "bodyFile">, rate: number, seconds: number, connections: number,
  stop?: AbortSignal): Promise<Load> {
  const script = join(dir, "paced.lua");
  pacedScript(script, t.key, rate);
  return runWrk({ ...t, bodyFile: "" }, script, connections, seconds, stop);
}
