-- beacon.lua - wrk script of bench/beacon.sh: GET /e?v=PAYLOAD as a page's
-- script sends it (base64url JSON with a random six-character nonce, an
-- Origin of the site, a browser user agent), a few pages and referrers.
local b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

local function enc(s)
    local out, bits, n = {}, 0, 0
    for i = 1, #s do
        bits = bits * 256 + s:byte(i)
        n = n + 8
        while n >= 6 do
            n = n - 6
            local v = math.floor(bits / 2 ^ n) % 64
            out[#out + 1] = b64:sub(v + 1, v + 1)
        end
        bits = bits % (2 ^ n)
    end
    if n > 0 then
        local v = (bits * 2 ^ (6 - n)) % 64
        out[#out + 1] = b64:sub(v + 1, v + 1)
    end
    return table.concat(out)
end

local paths = {"/", "/blog/a-post", "/docs/start", "/pricing", "/about"}
local refs = {"", "https://www.google.com/", "https://news.ycombinator.com/", "https://bench.example/"}
local chars = "abcdefghijklmnopqrstuvwxyz0123456789"

function init(args)
    math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16))
end

request = function()
    local z = {}
    for i = 1, 6 do
        local k = math.random(#chars)
        z[i] = chars:sub(k, k)
    end
    local json = string.format(
        '{"p":"%s","h":"bench.example","r":"%s","l":"en-US","tz":"Europe/Paris","w":%d,"uv":%d,"z":"%s"}',
        paths[math.random(#paths)], refs[math.random(#refs)], 360 + math.random(1600),
        math.random(0, 1), table.concat(z))
    return wrk.format("GET", "/e?v=" .. enc(json), {
        ["Host"] = os.getenv("BENCH_HOST") or "127.0.0.1",
        ["Origin"] = "https://bench.example",
        ["User-Agent"] = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
    })
end
