-- wrk script: one decision through a condition (acs/cond-setup.sh: the role holds doc:write only when
-- resource.properties.owner == subject.id), a new unregistered object every request, half owned by the subject
-- (allowed), half not (condition_false).
local f = assert(io.open(os.getenv("ACS_TOKEN_FILE") or "/tmp/bench-acs-bearer.jwt", "r"))
local token = f:read("*a"):gsub("%s+$", "")
f:close()
local headers = { ["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json" }
local seq = 0
local run = string.format("%x", math.floor(os.time() % 1000000 * 1000 + math.random(0, 999)))
function request()
  seq = seq + 1
  local owner = (seq % 2 == 1) and "bench-user" or "someone-else"
  local body = '{"subject":{"type":"user","id":"bench-user"},"action":{"name":"write"},' ..
    '"resource":{"type":"doc","id":"c' .. run .. '-' .. seq .. '","properties":{"owner":"' .. owner .. '"}}}'
  return wrk.format("POST", nil, headers, body)
end
local bad = 0
function response(status, headers, body)
  if status ~= 200 or not body:find('"decision"') then
    bad = bad + 1
    if bad <= 3 then io.stderr:write("unexpected answer " .. status .. ": " .. (body or "") .. "\n") end
  end
end
