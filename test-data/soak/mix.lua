-- wrk request mix for scripts/soak.sh: GETs of every script, multipart uploads, and
-- session requests that send back a cookie so sessions accumulate state.
-- SOAK_ONLY=upload,session (names of the scripts) keeps only those request types, to find
-- which one grows the server's memory.
local boundary = "----soakboundary"
local file = string.rep("u", 20000)
local upload_body = "--" .. boundary .. "\r\n" ..
  "Content-Disposition: form-data; name=\"file\"; filename=\"a.bin\"\r\n" ..
  "Content-Type: application/octet-stream\r\n\r\n" .. file .. "\r\n--" .. boundary .. "--\r\n"
local prefix = os.getenv("SOAK_PREFIX") or ""
local only = os.getenv("SOAK_ONLY") or ""
local reqs = {}
local function add(n, r, name)
  if only ~= "" and not ("," .. only .. ","):find("," .. name .. ",", 1, true) then return end
  for _ = 1, n do table.insert(reqs, r) end
end
-- Built in init, once wrk has set the Host header that wrk.format adds.
init = function(args)
add(48, wrk.format("GET", prefix .. "/hello.php"), "hello")
add(16, wrk.format("GET", prefix .. "/big.php"), "big")
add(24, wrk.format("GET", prefix .. "/cache.php"), "cache")
add(8, wrk.format("GET", prefix .. "/error.php"), "error")
for id = 1, 16 do
  add(1, wrk.format("GET", prefix .. "/session.php", { ["Cookie"] = "PHPSESSID=soak" .. id }), "session")
end
add(16, wrk.format("POST", prefix .. "/upload.php",
  { ["Content-Type"] = "multipart/form-data; boundary=" .. boundary }, upload_body), "upload")
assert(#reqs > 0, "SOAK_ONLY=" .. only .. " matches no request type")
end
local i = 0
request = function()
  i = i + 1
  return reqs[(i % #reqs) + 1]
end
