-- redirect.lua - wrk script for the redirect benchmark: every request asks
-- for a code picked at random from the whole set and carries a user agent
-- picked at random from bench/uas.txt (2,000 distinct browsers), the same
-- for shortd and nginx. The request shape is the one bench/loadgen.c sends.
--
--   BENCH_CODES=codes.txt BENCH_UAS=bench/uas.txt [BENCH_DIST=uniform] \
--     wrk -t1 -c64 -d5s -s bench/redirect.lua http://127.0.0.1:PORT/
--
-- BENCH_DIST picks how codes are drawn:
--   uniform  every code alike (the worst case for caches and the store)
--   zipf     the k-th code of the file with probability about 1/k (s = 1),
--            as link popularity goes: a log-uniform draw over [1, N), whose
--            density 1/x is the continuous Zipf law, floored to a rank
--   viral    half the requests to one link (the file's first code), the
--            other half uniform over all of them
--
-- The codes file holds one 7-character code per 8-byte line; it is kept as
-- one string (cheap for 10 M codes) and sliced per request.
-- done() prints one "BENCH key=value ..." line for bench/run.sh.

local codes_path = os.getenv("BENCH_CODES") or error("BENCH_CODES is not set")
local uas_path = os.getenv("BENCH_UAS") or error("BENCH_UAS is not set")

local f = assert(io.open(codes_path, "rb"))
local blob = f:read("*a")
f:close()
local ncodes = math.floor(#blob / 8)
assert(ncodes > 0, "no codes in " .. codes_path)

local uas = {}
for line in io.lines(uas_path) do
   if #line > 0 then uas[#uas + 1] = line end
end
local nuas = #uas
assert(nuas > 0, "no user agents in " .. uas_path)

local host = "Host: " .. (os.getenv("BENCH_HOST") or "127.0.0.1") .. "\r\nUser-Agent: "
local tail = "\r\nAccept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8" ..
             "\r\nAccept-Language: en-US,en;q=0.9\r\n\r\n"
local random, sub, exp, log, floor = math.random, string.sub, math.exp, math.log, math.floor
local dist = os.getenv("BENCH_DIST") or "uniform"
assert(dist == "uniform" or dist == "zipf" or dist == "viral", "BENCH_DIST: uniform, zipf or viral")
local logn = log(ncodes)

-- the index (0-based) of the next code to ask for
local function pick()
   if dist == "zipf" then
      local i = floor(exp(random() * logn)) - 1
      return i < ncodes and i or ncodes - 1
   elseif dist == "viral" and random() < 0.5 then
      return 0
   end
   return random(0, ncodes - 1)
end

local next_id = 1
function setup(thread)
   thread:set("id", next_id)
   next_id = next_id + 1
end

function init(args)
   local id = tonumber(wrk.thread:get("id")) or 0
   local seed = tonumber(os.getenv("BENCH_SEED") or "") or os.time()
   math.randomseed(seed * 7919 + id)
end

function request()
   local i = pick() * 8
   return "GET /" .. sub(blob, i + 1, i + 7) .. " HTTP/1.1\r\n" .. host .. uas[random(nuas)] .. tail
end

function done(summary, latency, requests)
   local e = summary.errors
   io.write(string.format(
      "BENCH requests=%d duration_us=%d bytes=%d connect=%d read=%d write=%d status=%d timeout=%d " ..
      "p50_us=%d p99_us=%d max_us=%d\n",
      summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status,
      e.timeout, latency:percentile(50), latency:percentile(99), latency.max))
end
