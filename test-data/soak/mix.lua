-- wrk request mix for scripts/soak.sh: GETs of every script, multipart uploads, and
-- session requests that send back a cookie so sessions accumulate state.
local boundary = "----soakboundary"
local file = string.rep("u", 20000)
local upload_body = "--" .. boundary .. "\r\n" ..
  "Content-Disposition: form-data; name=\"file\"; filename=\"a.bin\"\r\n" ..
  "Content-Type: application/octet-stream\r\n\r\n" .. file .. "\r\n--" .. boundary .. "--\r\n"
local prefix = os.getenv("SOAK_PREFIX") or ""
local reqs = {}
local function add(n, r) for _ = 1, n do table.insert(reqs, r) end end
-- Built in init, once wrk has set the Host header that wrk.format adds.
init = function(args)
add(48, wrk.format("GET", prefix .. "/hello.php"))
add(16, wrk.format("GET", prefix .. "/big.php"))
add(24, wrk.format("GET", prefix .. "/cache.php"))
add(8, wrk.format("GET", prefix .. "/error.php"))
for id = 1, 16 do
  add(1, wrk.format("GET", prefix .. "/session.php", { ["Cookie"] = "PHPSESSID=soak" .. id }))
end
add(16, wrk.format("POST", prefix .. "/upload.php",
  { ["Content-Type"] = "multipart/form-data; boundary=" .. boundary }, upload_body))
end
local i = 0
request = function()
  i = i + 1
  return reqs[(i % #reqs) + 1]
end
